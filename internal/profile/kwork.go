package profile

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/webhook"
)

// Kwork is the kwork profile: a developer platform's envelope with tenant,
// environment and app, an X-Kwork-Signature header, parallel unordered
// deliveries, 6 sends over about 7h12m, and a 50-record delivery log.
type Kwork struct{}

// KworkRetry is 30s, 2m, 10m, 1h, 6h; 6 sends in all, every one counted:
// a Retry-After may push the next send later, never add one (no free
// snoozes).
var KworkRetry = Retry{
	Backoffs:    []time.Duration{30 * time.Second, 2 * time.Minute, 10 * time.Minute, time.Hour, 6 * time.Hour},
	MaxAttempts: 6,
}

// DefaultKworkInFlight bounds parallel deliveries to one subscription.
const DefaultKworkInFlight = 8

// Owner attributes the kwork profile reads.
const (
	AttrApp        = "app"
	AttrEnv        = "environment"
	AttrAppKind    = "app_kind"
	AttrAPIVersion = "api_version"
)

// DefaultKworkAPIVersion is the envelope's apiVersion when the owner sets no
// api_version attribute: the current API version's date (the kwork profile's default).
const DefaultKworkAPIVersion = "2026-10-28"

// The kwork app lifecycle events, sent to an app's subscriptions
// without the subscription listing them.
const (
	AppInstalled     = "app.installed"
	AppUninstalled   = "app.uninstalled"
	AppUpgraded      = "app.upgraded"
	AppScopesChanged = "app.scopes_changed"
	OpenPing         = "open.ping"
)

// Name is "kwork".
func (Kwork) Name() string { return "kwork" }

// NewSecret is a Standard Webhooks whsec_ secret.
func (Kwork) NewSecret() (string, error) { return webhook.NewSecret() }

// Retry is KworkRetry.
func (Kwork) Retry() Retry { return KworkRetry }

// TestEventType is open.ping, what send_test sends.
func (Kwork) TestEventType() string { return OpenPing }

// LogWindow is 50: an endpoint's log keeps its last 50 deliveries.
func (Kwork) LogWindow() int { return 50 }

// GivesUpOn is false for every status: kwork retries every non-2xx answer,
// 4xx included (a 401 or 404 while the receiver deploys must not lose the
// event).
func (Kwork) GivesUpOn(int) bool { return false }

// WholeAnswer is true: a receiver that "has not finished answering within
// 10 s" (a 2xx whose body stalls past the timeout included) is retried.
func (Kwork) WholeAnswer() bool { return true }

// MaxInFlight is the endpoint's setting, DefaultKworkInFlight when unset.
func (Kwork) MaxInFlight(setting int) int {
	if setting <= 0 {
		return DefaultKworkInFlight
	}
	return setting
}

// ValidateSecret takes any secret of at least 16 characters.
func (Kwork) ValidateSecret(secret string) error {
	if len(secret) < 16 {
		return apperr.New(apperr.Invalid, "secret must be at least 16 characters")
	}
	return nil
}

// Implicit reports the events that need no listing: lifecycle events go
// to the app's developer subscription, and to no other (kwork: "sent
// automatically to the app's dedicated developer subscription");
// app.scopes_changed only backend (integration) apps' — a page app never
// gets it.
func (Kwork) Implicit(typ string, o *owner.Owner) bool {
	switch typ {
	case AppInstalled, AppUninstalled, AppUpgraded:
		return true
	case AppScopesChanged:
		return o.Attributes[AttrAppKind] == "integration"
	}
	return false
}

// DeveloperSubscription is true: an app marks one subscription its
// developer subscription, which gets the lifecycle events.
func (Kwork) DeveloperSubscription() bool { return true }

// Excluded reports the events that never reach o: a page app's scopes
// come from its manifest, never granted one by one, so it never gets
// app.scopes_changed, even subscribed to "*".
func (Kwork) Excluded(typ string, o *owner.Owner) bool {
	return typ == AppScopesChanged && o.Attributes[AttrAppKind] != "integration"
}

// ValidateOwner names every missing or bad attribute in one error, each
// with the values it takes.
func (Kwork) ValidateOwner(attrs map[string]string) error {
	var problems []string
	if attrs[AttrApp] == "" {
		problems = append(problems, "app (required: the app id put in every envelope, e.g. app=app_123)")
	}
	switch env := attrs[AttrEnv]; {
	case env == "":
		problems = append(problems, "environment (required: test or live)")
	case env != "test" && env != "live":
		problems = append(problems, fmt.Sprintf("environment %q (must be test or live)", env))
	}
	if kind := attrs[AttrAppKind]; kind != "" && kind != "integration" && kind != "page" {
		problems = append(problems, fmt.Sprintf("app_kind %q (optional: integration or page)", kind))
	}
	if len(problems) > 0 {
		return apperr.New(apperr.Invalid, "a kwork owner's attributes need fixing: %s", strings.Join(problems, "; "))
	}
	return nil
}

// Catalog is the kwork app lifecycle events and open.ping.
func (Kwork) Catalog() []event.Type {
	return []event.Type{
		{Name: AppInstalled, Exposure: event.Webhook, Description: "The app was installed in a tenant: {version, scopes}."},
		{Name: AppUninstalled, Exposure: event.Webhook, Description: "The app was uninstalled from a tenant: {}."},
		{Name: AppUpgraded, Exposure: event.Webhook, Description: "The app was upgraded in a tenant: {from, to, scopes}."},
		{Name: AppScopesChanged, Exposure: event.Webhook, Description: "The app's effective scopes changed in a tenant: {scopes, added, removed}. Integration apps only."},
		{Name: OpenPing, Exposure: event.Webhook, Description: "Sent by send_test to one subscription only."},
	}
}

// Body renders {"id","type","createdAt","apiVersion","tenant","environment","app","data"}.
func (p Kwork) Body(ev *event.Event, o *owner.Owner) ([]byte, error) {
	return p.AppendBody(nil, ev, o)
}

// AppendBody appends what Body returns to dst.
func (Kwork) AppendBody(dst []byte, ev *event.Event, o *owner.Owner) ([]byte, error) {
	a := o.Attributes
	b := slices.Grow(dst, 160+len(ev.ID)+len(ev.Type)+len(ev.Tenant)+len(ev.Data))
	b = append(b, `{"id":`...)
	b = appendString(b, ev.ID)
	b = append(b, `,"type":`...)
	b = appendString(b, ev.Type)
	b = append(b, `,"createdAt":`...)
	b = appendTime(b, ev.OccurredAt, time.RFC3339)
	b = append(b, `,"apiVersion":`...)
	b = appendString(b, cmp.Or(a[AttrAPIVersion], DefaultKworkAPIVersion))
	b = append(b, `,"tenant":`...)
	b = appendString(b, ev.Tenant)
	b = append(b, `,"environment":`...)
	b = appendString(b, a[AttrEnv])
	b = append(b, `,"app":`...)
	b = appendString(b, a[AttrApp])
	b = append(b, `,"data":`...)
	b = append(b, ev.Data...)
	return append(b, '}'), nil
}

// Sign sets X-Kwork-Signature (t and v1 recomputed every attempt),
// X-Kwork-Event and X-Kwork-Delivery (one id per delivery, unchanged on
// retries).
func (Kwork) Sign(h http.Header, secret string, m Message, now time.Time) error {
	s, err := kworkSigners.get(secret)
	if err != nil {
		return err
	}
	v := make([]string, 3) // one allocation for the three header values
	v[0], v[1], v[2] = s.Sign(now.Unix(), m.Body), m.EventType, m.DeliveryID
	h[webhook.HeaderKworkSignature], h[webhook.HeaderKworkEvent], h[webhook.HeaderKworkDelivery] = v[0:1:1], v[1:2:2], v[2:3:3]
	return nil
}
