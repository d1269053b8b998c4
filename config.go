package hookd

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/ops"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/profile"
	"github.com/hookd/hookd/internal/version"
)

// The defaults of Config's fields, shared with the hookd command's flags
// (the delivery service's own defaults, where it has the setting).
// The timeouts nest: an HTTP request ends inside its job's timeout, and a
// job ends before its endpoint's lease or River's stuck-job rescue could
// hand the endpoint to another process.
const (
	DefaultDatabase             = "hookd.db"
	DefaultProfile              = "standard"
	DefaultWorkers              = 100
	DefaultHTTPTimeout          = delivery.DefaultHTTPTimeout
	DefaultJobTimeout           = delivery.DefaultJobTimeout
	DefaultLeaseFor             = delivery.DefaultLeaseFor
	DefaultRescueStuckJobsAfter = time.Minute
	DefaultBusySnooze           = delivery.DefaultBusySnooze
	DefaultRetention            = delivery.DefaultRetention
	DefaultAuditRetention       = delivery.DefaultAuditRetention
	DefaultDrainMax             = delivery.DefaultDrainMax
	DefaultOwnerShare           = delivery.DefaultOwnerShare
	DefaultSlowAfter            = delivery.DefaultSlowAfter
)

// Config configures a Hookd. The zero value of every field but MasterKey
// means its default.
type Config struct {
	// Database is a postgres:// URL or an SQLite file path (DefaultDatabase).
	// OpenPool and OpenDB ignore it.
	Database string
	// Schema puts hookd's and River's tables in this PostgreSQL schema
	// (empty: the connection's search_path).
	Schema string
	// MasterKey seals endpoint secrets at rest: 32 bytes, required. Keep it
	// outside the database (hookd's command reads HOOKD_MASTER_KEY or a key
	// file).
	MasterKey []byte
	// EgressAllow lets deliveries reach address ranges that are refused by
	// default (loopback, private, link-local…): for local development and
	// tests, e.g. 127.0.0.1/32.
	EgressAllow []netip.Prefix
	// EgressProxy sends every delivery through this HTTP proxy with
	// CONNECT, so receivers can allow-list its fixed address (nil: direct).
	// hookd still resolves and judges each receiver's address itself and
	// asks the proxy for checked IPs only. See egress.ParseProxy.
	EgressProxy *url.URL
	// UserAgent is the User-Agent of every delivery (default
	// "hookd/<version>").
	UserAgent string
	// PortalFrameOrigins may frame every owner's portal pages (CSP
	// frame-ancestors), e.g. https://app.example.com; an owner's own
	// portal_frame_origins attribute adds more. None: the portal cannot be
	// framed at all.
	PortalFrameOrigins []string
	// NoTransformations turns endpoints' transformations off in this
	// process: no script runs, deliveries to an endpoint with one fail
	// (never sent untransformed), and saving or trying one is refused.
	// Filters still apply.
	NoTransformations bool
	// TransformationTimeLimit bounds one run of an endpoint's
	// transformation, wall-clock (0: 50 ms). Tests under the race
	// detector on a loaded machine raise it: a starved run is stopped
	// like a hostile one.
	TransformationTimeLimit time.Duration

	// Work runs the delivery workers on hookd's own River client, started
	// by Start. Leave it false in an API-only process, and when your own
	// River client runs hookd's workers (see AddWorkers).
	Work bool
	// Workers is how many deliveries run at once in this process
	// (DefaultWorkers) in the healthy lane, the River queue "deliver".
	Workers int
	// SlowWorkers is how many deliveries to slow endpoints (the last
	// attempt took SlowAfter or longer, a timeout included) run at once
	// in this process, in a lane of their own, the River queue
	// "deliver_slow" (default: Workers). They wait on receivers, not on
	// the CPU.
	SlowWorkers int
	// OwnerShare is the part of each lane's workers one owner may hold in
	// this process (DefaultOwnerShare; in the slow lane only slow
	// endpoints' deliveries count); a delivery of an owner at its share
	// goes to the slow lane, or there snoozes, spending no attempt. 1: no
	// cap.
	OwnerShare float64
	// SlowAfter is how long an attempt may take before its endpoint's
	// deliveries move to the slow lane (DefaultSlowAfter); an attempt
	// faster than that moves them back.
	SlowAfter time.Duration

	// EventTypes are offered to every owner, beside the types the profiles
	// bring (webhook.test, open.ping…). Open adds them to the shared
	// catalog in the database; it never removes one, so a type no longer
	// declared stays offered until `hookd catalog remove` removes it
	// (every process on a database adds to one catalog: docs/scale-out.md).
	EventTypes []EventType
	// Catalogs names more shared event types: each a built-in catalog
	// ("standmeet": a content platform's 39 types) or the path of a YAML or
	// JSON file of {name, exposure, scoped, description} (what `hookd serve
	// --catalog` takes). Added as EventTypes are.
	Catalogs []string
	// KeepCatalog opens hookd without adding anything to the shared
	// catalog, not even the profiles' own types: a tool that only
	// administers (hookd's apikey, owner and mcp commands) must not change
	// what the servers on the database offer. It excludes Catalogs and
	// EventTypes.
	KeepCatalog bool
	// Scope, when set, admits events of scoped types to endpoints attached
	// to a grant (their grant_id) instead of hookd's grants store (nil: the
	// store, managed with the grants.* ops). Endpoints without a grant see
	// the published slice.
	Scope ScopeFunc
	// DefaultProfile is the wire contract of owners created without one:
	// "standard" (Standard Webhooks, DefaultProfile) or "kwork".
	DefaultProfile string
	// Retention keeps finished deliveries and events this long
	// (DefaultRetention).
	Retention time.Duration
	// OIDC turns on console sign-in through the company's identity
	// provider (nil: off; docs/operations/signin.md).
	OIDC *OIDCConfig
	// ConsoleKeySigninOff refuses console sign-in with an API key (the
	// identity provider is then the only way in).
	ConsoleKeySigninOff bool
	// AuditRetention keeps audit records this long
	// (DefaultAuditRetention, one year).
	AuditRetention time.Duration

	// The timeouts, which must nest: HTTPTimeout < JobTimeout < LeaseFor,
	// and JobTimeout < RescueStuckJobsAfter (Validate checks it).
	//
	// HTTPTimeout bounds one delivery's request (DefaultHTTPTimeout).
	HTTPTimeout time.Duration
	// JobTimeout bounds one delivery attempt (DefaultJobTimeout).
	JobTimeout time.Duration
	// LeaseFor is how long a dead process's endpoint lease blocks others,
	// and how long deliveries deferred behind a busy endpoint wait
	// (DefaultLeaseFor).
	LeaseFor time.Duration
	// RescueStuckJobsAfter hands the running jobs of a dead process to
	// another after this long (DefaultRescueStuckJobsAfter).
	RescueStuckJobsAfter time.Duration

	// Tuning; the defaults suit most loads.
	//
	// BusySnooze is how long a delivery to a busy endpoint waits before it
	// tries again, spending no attempt (DefaultBusySnooze).
	BusySnooze time.Duration
	// DrainMax bounds how many deliveries one lease holder sends in a row
	// before it hands the endpoint over (DefaultDrainMax).
	DrainMax int
	// FetchCooldown and FetchPollInterval tune how fast River picks up jobs.
	// Defaults: on PostgreSQL, which also wakes River with LISTEN/NOTIFY, a
	// 2 ms cooldown and a 200 ms poll; on SQLite, which has only the poll,
	// 10 ms and 50 ms.
	FetchCooldown     time.Duration
	FetchPollInterval time.Duration

	// MetricsOwnerLabels adds owner and endpoint labels to the Prometheus
	// counters (MetricsHandler). Off by default: their cardinality grows
	// with the owners and endpoints.
	MetricsOwnerLabels bool
	// TracerProvider turns tracing on (nil: off): spans for API requests
	// (otelhttp), River jobs (otelriver) and hookd's publish, fanout and
	// deliver, one trace per event. Webhook requests carry no trace headers.
	TracerProvider trace.TracerProvider

	// Now is the clock (nil: time.Now); tests inject one.
	Now func() time.Time
	// Log receives hookd's and its River client's logs (nil: discarded).
	Log *slog.Logger
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	c.Database = cmp.Or(c.Database, DefaultDatabase)
	c.DefaultProfile = cmp.Or(c.DefaultProfile, DefaultProfile)
	c.Workers = cmp.Or(c.Workers, DefaultWorkers)
	c.SlowWorkers = cmp.Or(c.SlowWorkers, c.Workers)
	c.OwnerShare = cmp.Or(c.OwnerShare, DefaultOwnerShare)
	c.SlowAfter = cmp.Or(c.SlowAfter, DefaultSlowAfter)
	c.HTTPTimeout = cmp.Or(c.HTTPTimeout, DefaultHTTPTimeout)
	c.JobTimeout = cmp.Or(c.JobTimeout, DefaultJobTimeout)
	c.LeaseFor = cmp.Or(c.LeaseFor, DefaultLeaseFor)
	c.RescueStuckJobsAfter = cmp.Or(c.RescueStuckJobsAfter, DefaultRescueStuckJobsAfter)
	c.BusySnooze = cmp.Or(c.BusySnooze, DefaultBusySnooze)
	c.Retention = cmp.Or(c.Retention, DefaultRetention)
	c.AuditRetention = cmp.Or(c.AuditRetention, DefaultAuditRetention)
	c.DrainMax = cmp.Or(c.DrainMax, DefaultDrainMax)
	c.UserAgent = cmp.Or(c.UserAgent, defaultUserAgent())
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports the first setting Open would refuse, with the hookd
// command's flag in parentheses: a missing or short master key, a negative
// duration or count, timeouts that do not nest, an unknown default
// profile, or an invalid event type. Zero fields are checked as their
// defaults.
func (c Config) Validate() error {
	c = c.withDefaults()
	if len(c.MasterKey) != 32 {
		return fmt.Errorf("master key is %d bytes, want 32 (HOOKD_MASTER_KEY or --master-key-file)", len(c.MasterKey))
	}
	if err := c.validateSignin(); err != nil {
		return err
	}
	for _, o := range c.PortalFrameOrigins {
		if _, err := ops.PortalFrameOrigin(o); err != nil {
			return fmt.Errorf("portal frame origins: %s", apperr.MessageOf(err))
		}
	}
	for _, d := range []struct {
		name, flag string
		v          time.Duration
	}{
		{"HTTPTimeout", "--http-timeout", c.HTTPTimeout},
		{"JobTimeout", "--job-timeout", c.JobTimeout},
		{"LeaseFor", "--lease-for", c.LeaseFor},
		{"RescueStuckJobsAfter", "--rescue-after", c.RescueStuckJobsAfter},
		{"BusySnooze", "", c.BusySnooze},
		{"SlowAfter", "--slow-after", c.SlowAfter},
		{"Retention", "", c.Retention},
		{"AuditRetention", "--audit-retention", c.AuditRetention},
		{"FetchCooldown", "", c.FetchCooldown},
		{"FetchPollInterval", "", c.FetchPollInterval},
	} {
		if d.v < 0 {
			return fmt.Errorf("%s %s is negative; use a positive duration or 0 for the default", label(d.name, d.flag), d.v)
		}
	}
	if c.Workers < 0 {
		return fmt.Errorf("%s %d is negative; use at least 1, or 0 for %d", label("Workers", "--workers"), c.Workers, DefaultWorkers)
	}
	if c.SlowWorkers < 0 {
		return fmt.Errorf("%s %d is negative; use at least 1, or 0 for Workers (%d)", label("SlowWorkers", "--slow-workers"), c.SlowWorkers, c.Workers)
	}
	if c.OwnerShare < 0 || c.OwnerShare > 1 {
		return fmt.Errorf("%s %g is out of range; use a part of the workers above 0 and at most 1 (1: no cap), or 0 for %g", label("OwnerShare", "--owner-share"), c.OwnerShare, DefaultOwnerShare)
	}
	if c.DrainMax < 0 {
		return fmt.Errorf("DrainMax %d is negative; use at least 1, or 0 for %d", c.DrainMax, DefaultDrainMax)
	}
	if err := c.validateTimeouts(); err != nil {
		return err
	}
	if _, err := profile.Default().Get(c.DefaultProfile); err != nil {
		return fmt.Errorf("%s: %w", label("DefaultProfile", "--default-profile"), err)
	}
	if c.KeepCatalog && (len(c.Catalogs) > 0 || len(c.EventTypes) > 0) {
		return fmt.Errorf("KeepCatalog opens without adding event types, but Catalogs or EventTypes name some: set one or the other")
	}
	for i, t := range c.EventTypes {
		if err := event.ValidateTypeName(t.Name); err != nil {
			return fmt.Errorf("EventTypes[%d]: %w", i, err)
		}
		it := t.internal()
		if _, err := it.CheckSchema(); err != nil {
			return fmt.Errorf("EventTypes[%d] (%s): %w", i, t.Name, err)
		}
	}
	return nil
}

// validateTimeouts: an HTTP request ends inside its job, and the job ends
// before its endpoint's lease runs out and before River takes it for a
// dead process's.
func (c Config) validateTimeouts() error {
	type limit struct {
		name, flag string
		v          time.Duration
	}
	request := limit{"HTTPTimeout", "--http-timeout", c.HTTPTimeout}
	job := limit{"JobTimeout", "--job-timeout", c.JobTimeout}
	for _, pair := range [][2]limit{
		{request, job},
		{job, {"LeaseFor", "--lease-for", c.LeaseFor}},
		{job, {"RescueStuckJobsAfter", "--rescue-after", c.RescueStuckJobsAfter}},
	} {
		lo, hi := pair[0], pair[1]
		if lo.v >= hi.v {
			return fmt.Errorf("timeouts must nest: %s %s must be shorter than %s %s (http timeout < job timeout < lease and rescue)",
				label(lo.name, lo.flag), lo.v, label(hi.name, hi.flag), hi.v)
		}
	}
	return nil
}

// label names a setting both ways: the Config field and the command's flag.
func label(field, flag string) string {
	if flag == "" {
		return field
	}
	return field + " (" + flag + ")"
}

// OIDCConfig is console sign-in through an OpenID Connect provider: the
// authorization-code flow with PKCE, its state and nonce checked. The
// user's claims decide the role; a user whose claims map to none is
// refused.
type OIDCConfig struct {
	Issuer, ClientID, ClientSecret string
	// RedirectURL is the callback registered with the provider (default:
	// the origin the browser reached + the console's prefix +
	// /admin/oidc/callback).
	RedirectURL string
	// Claim is the claim whose values map to roles (default "groups").
	Claim string
	// OperatorValues are the claim values that make an operator.
	OperatorValues []string
	// AdminValues map a claim value to the owner whose admin it makes.
	AdminValues map[string]string
}

// validateSignin checks the console's ways in: OIDC needs an issuer, a
// client id and at least one claim value mapped to a role; API key
// sign-in may be off only with OIDC on.
func (c Config) validateSignin() error {
	o := c.OIDC
	if o == nil {
		if c.ConsoleKeySigninOff {
			return errors.New("console API key sign-in is off and no identity provider is set: nobody could sign in (set --oidc-issuer or drop --console-api-key-signin=false)")
		}
		return nil
	}
	switch {
	case o.Issuer == "":
		return errors.New("OIDC needs an issuer URL (--oidc-issuer, HOOKD_OIDC_ISSUER)")
	case o.ClientID == "":
		return errors.New("OIDC needs a client id (--oidc-client-id, HOOKD_OIDC_CLIENT_ID)")
	case len(o.OperatorValues) == 0 && len(o.AdminValues) == 0:
		return errors.New("OIDC maps no claim value to a role: nobody could sign in (--oidc-operator-group or --oidc-admin-group VALUE=OWNER)")
	}
	for v, ownerID := range o.AdminValues {
		if err := owner.ValidateID(ownerID); err != nil {
			return fmt.Errorf("--oidc-admin-group %s=%s: %s", v, ownerID, apperr.MessageOf(err))
		}
	}
	return nil
}

// defaultUserAgent is "hookd/<version>": the module version, or "devel"
// for a local build (whose "(devel)" is no product token).
func defaultUserAgent() string {
	v := version.Get().Version
	if v == "" || strings.HasPrefix(v, "(") {
		v = "devel"
	}
	return "hookd/" + v
}
