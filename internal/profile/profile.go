// Package profile holds hookd's wire contracts. A profile decides everything
// a receiver sees and how hard hookd tries: envelope, signature headers,
// retry schedule, per-endpoint concurrency, test event, delivery-log window.
// The delivery service asks the owner's profile and never branches on its name.
package profile

import (
	"net/http"
	"sort"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/owner"
)

// Message is what one attempt signs: the delivery's stable identity and body.
type Message struct {
	DeliveryID string
	EventID    string
	EventType  string
	Body       []byte
}

// Profile is one wire contract.
type Profile interface {
	Name() string
	// NewSecret returns a fresh endpoint secret, shown to the owner once.
	NewSecret() (string, error)
	// ValidateSecret checks a secret an owner supplies (rotation to a known value).
	ValidateSecret(secret string) error
	// AppendBody appends ev, rendered for an endpoint of o, to dst. It is
	// computed once per attempt from stored data and is byte-identical on
	// every retry. dst may come from Buffers (the attempt's hot path).
	AppendBody(dst []byte, ev *event.Event, o *owner.Owner) ([]byte, error)
	// Sign sets one attempt's headers on h: identity headers and a
	// signature over m.Body at now (recomputed on every attempt).
	Sign(h http.Header, secret string, m Message, now time.Time) error
	// Retry is the retry schedule.
	Retry() Retry
	// GivesUpOn is the profile's outcome rule: whether a receiver's non-2xx
	// status (no Retry-After snooze) ends the delivery at once instead of
	// retrying it (standard: 4xx other than 408/429, and unfollowed 3xx;
	// kwork: never, every non-2xx is retried).
	GivesUpOn(status int) bool
	// WholeAnswer is the profile's rule for an answer whose body was not
	// read to its end (or the read cap) within the HTTP timeout: true, the
	// send failed (a timeout, retried) whatever its status (kwork: "10 秒内没有答完");
	// false, the status decides (standard).
	WholeAnswer() bool
	// MaxInFlight returns how many deliveries may be in flight to one
	// endpoint given the endpoint's setting (0 = default); 1 is a lease.
	MaxInFlight(setting int) int
	// TestEventType is the type send_test publishes.
	TestEventType() string
	// LogWindow is how many deliveries an endpoint's log keeps (0 = all,
	// until retention removes them).
	LogWindow() int
	// Implicit reports whether events of typ go to o's developer
	// subscription (Endpoint.Developer) without it listing them, and to no
	// other endpoint of o (kwork's app lifecycle events).
	Implicit(typ string, o *owner.Owner) bool
	// DeveloperSubscription reports whether an owner marks one endpoint
	// its developer subscription (the one Implicit types go to).
	DeveloperSubscription() bool
	// Excluded reports whether events of typ must never reach o's endpoints,
	// whatever they subscribe to (kwork: app.scopes_changed for page apps).
	Excluded(typ string, o *owner.Owner) bool
	// ValidateOwner checks an owner's attributes for this profile.
	ValidateOwner(attrs map[string]string) error
	// Catalog lists the event types this profile ships.
	Catalog() []event.Type
}

// Retry is a retry schedule: Backoffs[i] is the wait after the (i+1)th
// failed send; past the list the last entry repeats. MaxAttempts counts
// the sends that spend an attempt.
type Retry struct {
	Backoffs    []time.Duration
	MaxAttempts int
	// FreeSnoozes is how many times a receiver's Retry-After (a 429 or 503
	// saying when to come back) may hold a delivery back without spending
	// an attempt. Past it, each such answer spends one, like any failure,
	// and the next send waits the longer of the backoff and the receiver's
	// wait: a delivery a receiver keeps telling to wait ends, after at
	// most MostSends sends. Zero: every send spends an attempt (kwork).
	FreeSnoozes int
}

// Floor is the shortest wait before a delivery is sent again after a
// Retry-After: the first backoff step. A receiver asking for less (0, a
// date already past) waits this long, as after any failure.
func (r Retry) Floor() time.Duration { return r.After(1) }

// MostSends is the most sends one delivery gets: its free snoozes and its
// attempts.
func (r Retry) MostSends() int { return r.FreeSnoozes + r.MaxAttempts }

// After returns the wait after the nth failed send (n ≥ 1).
func (r Retry) After(n int) time.Duration {
	if n < 1 {
		n = 1
	}
	if n > len(r.Backoffs) {
		return r.Backoffs[len(r.Backoffs)-1]
	}
	return r.Backoffs[n-1]
}

// Total is the time from the first send to the last if every send fails.
func (r Retry) Total() time.Duration {
	var d time.Duration
	for n := 1; n < r.MaxAttempts; n++ {
		d += r.After(n)
	}
	return d
}

// Registry holds the profiles a server knows, by name.
type Registry struct {
	byName     map[string]Profile
	byTestType map[string]Profile
}

// NewRegistry returns a registry of ps.
func NewRegistry(ps ...Profile) *Registry {
	r := &Registry{byName: map[string]Profile{}, byTestType: map[string]Profile{}}
	for _, p := range ps {
		r.byName[p.Name()] = p
		r.byTestType[p.TestEventType()] = p
	}
	return r
}

// ByTestEventType returns the profile whose test event type is typ, if
// any (every publish asks: refuseTestType).
func (r *Registry) ByTestEventType(typ string) (Profile, bool) {
	p, ok := r.byTestType[typ]
	return p, ok
}

// Default is the registry of the built-in profiles.
func Default() *Registry { return NewRegistry(Standard{}, Kwork{}) }

// Get returns a profile by name.
func (r *Registry) Get(name string) (Profile, error) {
	if p, ok := r.byName[name]; ok {
		return p, nil
	}
	return nil, apperr.New(apperr.Invalid, "profile %q is not known: use one of %v", name, r.Names())
}

// Names lists the profile names, sorted.
func (r *Registry) Names() []string {
	var out []string
	for n := range r.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// All returns every profile.
func (r *Registry) All() []Profile {
	var out []Profile
	for _, n := range r.Names() {
		out = append(out, r.byName[n])
	}
	return out
}
