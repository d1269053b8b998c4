// Package endpoint holds hookd's endpoints (the kwork profile calls them
// subscriptions): a URL, event-type globs, a sealed secret and a state, plus
// the rules of the endpoint state machine (enabled → failing → disabled).
package endpoint

import (
	"time"
)

// Endpoint is one receiver URL of one owner.
type Endpoint struct {
	ID      string `json:"id"`
	OwnerID string `json:"-"`
	URL     string `json:"url"`
	// Kind is how the endpoint gets its events: KindHTTP (pushed to URL)
	// or KindPoll (no URL: its consumer polls them with a poll token).
	Kind        string   `json:"kind"`
	Description string   `json:"description"`
	EventTypes  []string `json:"event_types"`
	// SecretSealed is the endpoint's signing secret, sealed at rest. Only
	// Sealer.Open turns it back into the secret.
	SecretSealed []byte `json:"-"`
	// GrantID names the grant that admits events of scoped types to this
	// endpoint (an embed's access code). Empty: the published
	// slice.
	GrantID        string     `json:"grant_id,omitempty"`
	Enabled        bool       `json:"enabled"`
	DisabledReason string     `json:"disabled_reason,omitempty"`
	FailingSince   *time.Time `json:"failing_since,omitempty"`
	// SlowSince is when the endpoint's attempts began to take the slow
	// lane's threshold or longer (nil: they answer faster); its
	// deliveries then run in the slow lane. Read with an attempt
	// (store.LoadAttempt) only.
	SlowSince *time.Time `json:"-"`
	// MaxInFlight bounds concurrent deliveries to this endpoint. The
	// standard profile always uses 1 (the lease); kwork defaults to 8.
	MaxInFlight int `json:"max_in_flight"`
	// Controls (controls.go): extra headers on every attempt, a rate
	// limit, publish-order delivery.
	Controls
	// Code (code.go): the endpoint's filter and transformation.
	Code
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`

	// Signing is the public side of the sealed keys (scheme, whpk_ key,
	// the end of a rotation's overlap).
	Signing
}

// The endpoint kinds.
const (
	KindHTTP = "http"
	KindPoll = "poll"
)

// KindOrHTTP is e's kind, KindHTTP when unset.
func (e *Endpoint) KindOrHTTP() string {
	if e.Kind == "" {
		return KindHTTP
	}
	return e.Kind
}

// Polled says whether e is a polling endpoint.
func (e *Endpoint) Polled() bool { return e.Kind == KindPoll }

// State is the endpoint's state in the endpoint state machine (docs/design.md).
type State string

// The endpoint states: enabled delivers; failing has had no 2xx since
// FailingSince and its new deliveries wait out Rules.Cooldown; disabled
// gets no new deliveries.
const (
	Enabled  State = "enabled"
	Failing  State = "failing"
	Disabled State = "disabled"
)

// State derives the endpoint's state from its fields.
func (e *Endpoint) State() State {
	switch {
	case !e.Enabled:
		return Disabled
	case e.FailingSince != nil:
		return Failing
	}
	return Enabled
}

// Rules are the endpoint state machine's timings.
type Rules struct {
	// Cooldown schedules new deliveries this far out while the endpoint is
	// failing, so a dead receiver is not hit by every new event.
	Cooldown time.Duration
	// DisableAfter disables an endpoint that has failed continuously this long.
	DisableAfter time.Duration
}

// DefaultRules are the standard numbers: 5 minutes cooldown, disable after 5 days.
var DefaultRules = Rules{Cooldown: 5 * time.Minute, DisableAfter: 5 * 24 * time.Hour}

// ShouldDisable reports whether an endpoint failing since failingSince must be
// disabled at now.
func (r Rules) ShouldDisable(failingSince *time.Time, now time.Time) bool {
	return failingSince != nil && !now.Before(failingSince.Add(r.DisableAfter))
}

// ScheduleFor returns when a new delivery to e should first be attempted:
// now, or now+Cooldown while e is failing.
func (r Rules) ScheduleFor(e *Endpoint, now time.Time) time.Time {
	if e.FailingSince != nil {
		return now.Add(r.Cooldown)
	}
	return now
}
