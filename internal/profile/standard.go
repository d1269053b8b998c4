package profile

import (
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/webhook"
)

// Standard is the standard profile: the thin envelope signed with Standard
// Webhooks headers, one delivery in flight per endpoint, 18 attempts over
// about 5.3 days.
type Standard struct{}

// StandardRetry is 5s, 5m, 30m, 2h, 5h, then 10h each; 18 attempts in
// all, besides up to 10 Retry-After snoozes that spend none.
var StandardRetry = Retry{
	Backoffs:    []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour},
	MaxAttempts: 18,
	FreeSnoozes: 10,
}

// Name is "standard".
func (Standard) Name() string { return "standard" }

// NewSecret is a Standard Webhooks whsec_ secret.
func (Standard) NewSecret() (string, error) { return webhook.NewSecret() }

// Retry is StandardRetry.
func (Standard) Retry() Retry { return StandardRetry }

// MaxInFlight is 1 whatever the setting: deliveries to an endpoint go one
// at a time.
func (Standard) MaxInFlight(int) int { return 1 }

// TestEventType is webhook.test, what send_test sends.
func (Standard) TestEventType() string { return "webhook.test" }

// LogWindow is 0: an endpoint's log keeps every delivery until retention
// removes it.
func (Standard) LogWindow() int { return 0 }

// Implicit is false: an endpoint gets only the types it subscribes to.
func (Standard) Implicit(string, *owner.Owner) bool { return false }

// ValidateOwner accepts any attributes: the standard profile reads none.
func (Standard) ValidateOwner(map[string]string) error { return nil }

// DeveloperSubscription is false: the standard profile has no implicit
// types to send one.
func (Standard) DeveloperSubscription() bool { return false }

// Excluded is false: no event type is kept from an owner.
func (Standard) Excluded(string, *owner.Owner) bool { return false }

// GivesUpOn is true for the standard profile's permanent failures: other
// 4xx (and unfollowed redirects) are discarded at once; 5xx, 408 and 429
// are retried.
func (Standard) GivesUpOn(status int) bool {
	return status < 500 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests
}

// WholeAnswer is false: the status decides. A 2xx whose body then stalls
// past the timeout is delivered: the receiver accepted the event, and
// sending it again would only make it deduplicate one more copy.
func (Standard) WholeAnswer() bool { return false }

// Signing offers Ed25519 besides HMAC, and rotations that overlap (the header is
// a list, and every Standard Webhooks verifier accepts any entry).
func (Standard) Signing() Signing {
	return Signing{Schemes: []string{endpoint.SignHMAC, endpoint.SignEd25519, endpoint.SignBoth}, Overlap: true}
}

// ValidateSecret takes a whsec_ secret of at least 24 bytes.
func (Standard) ValidateSecret(secret string) error {
	if _, err := webhook.NewSigner(secret); err != nil {
		return apperr.New(apperr.Invalid, "secret must be whsec_ followed by base64 (at least 24 bytes decoded): %v", err)
	}
	return nil
}

// Catalog is webhook.test.
func (Standard) Catalog() []event.Type {
	return []event.Type{{Name: "webhook.test", Exposure: event.Webhook, Description: "Sent by send_test to one endpoint only."}}
}

// Body renders {"id","type","subject","occurred_at","data"}: thin, no body
// of the subject; receivers fetch what they need.
func (p Standard) Body(ev *event.Event, o *owner.Owner) ([]byte, error) {
	return p.AppendBody(nil, ev, o)
}

// AppendBody appends what Body returns to dst.
func (Standard) AppendBody(dst []byte, ev *event.Event, _ *owner.Owner) ([]byte, error) {
	b := slices.Grow(dst, 96+len(ev.ID)+len(ev.Type)+len(ev.Subject)+len(ev.Data))
	b = append(b, `{"id":`...)
	b = appendString(b, ev.ID)
	b = append(b, `,"type":`...)
	b = appendString(b, ev.Type)
	b = append(b, `,"subject":`...)
	b = appendString(b, ev.Subject)
	b = append(b, `,"occurred_at":`...)
	b = appendTime(b, ev.OccurredAt, time.RFC3339Nano)
	b = append(b, `,"data":`...)
	b = append(b, ev.Data...)
	return append(b, '}'), nil
}

// Sign sets webhook-id (the event id: receivers dedupe on it),
// webhook-timestamp and webhook-signature: one entry per key the endpoint
// signs with at now (v1 for a secret, v1a for an Ed25519 key; a rotation's
// old keys too while its overlap lasts).
func (Standard) Sign(h http.Header, secret string, m Message, now time.Time) error {
	s, err := standardSigners.get(secret)
	if err != nil {
		return err
	}
	unix := now.Unix()
	// The timestamp and the signatures are built in one buffer and made one
	// string, sliced: two allocations for the three headers, with v. The
	// buffer holds a timestamp and 4 generations of v1 and v1a entries.
	var buf [640]byte
	b := strconv.AppendInt(buf[:0], unix, 10)
	n := len(b)
	both := string(s.appendSign(b, m.EventID, unix, m.Body, now))
	v := make([]string, 3)
	v[0], v[1], v[2] = m.EventID, both[:n], both[n:]
	h["Webhook-Id"], h["Webhook-Timestamp"], h["Webhook-Signature"] = v[0:1:1], v[1:2:2], v[2:3:3]
	return nil
}
