package hookd

import (
	"log/slog"
	"net/netip"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/hookd/hookd/internal/app"
	"github.com/hookd/hookd/internal/event"
)

// The defaults of Config's fields, shared with the hookd command's flags
// (the delivery service's own defaults, where it has the setting).
// The timeouts nest: an HTTP request ends inside its job's timeout, and a
// job ends before its endpoint's lease or River's stuck-job rescue could
// hand the endpoint to another process.
const (
	DefaultDatabase             = app.DefaultDatabase
	DefaultProfile              = app.DefaultProfile
	DefaultWorkers              = app.DefaultWorkers
	DefaultHTTPTimeout          = app.DefaultHTTPTimeout
	DefaultJobTimeout           = app.DefaultJobTimeout
	DefaultLeaseFor             = app.DefaultLeaseFor
	DefaultRescueStuckJobsAfter = app.DefaultRescueStuckJobsAfter
	DefaultBusySnooze           = app.DefaultBusySnooze
	DefaultRetention            = app.DefaultRetention
	DefaultAuditRetention       = app.DefaultAuditRetention
	DefaultPartitionInterval    = app.DefaultPartitionInterval
	DefaultDrainMax             = app.DefaultDrainMax
	DefaultOwnerShare           = app.DefaultOwnerShare
	DefaultSlowAfter            = app.DefaultSlowAfter
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
	// Destinations are the kinds of destination owners may create
	// endpoints with or point them at: "http" (http and https), "amqp",
	// "nats", "kafka", "sqs", "gcppubsub", "redis" (nil: every kind). A
	// url of another kind is refused (422); an endpoint of that kind
	// saved before keeps delivering. Polling endpoints are not
	// destinations and are always allowed.
	Destinations []string
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
	// PartitionInterval, on PostgreSQL, partitions the event and
	// delivery tables by time, one partition per interval (at least an
	// hour; 0 is a day, DefaultPartitionInterval), and retention then
	// drops whole expired partitions instead of deleting rows
	// (docs/design.md, "Time partitions"). A database made by an older
	// hookd is converted in place when hookd opens it. The change is
	// one-way.
	PartitionInterval time.Duration
	// Unpartitioned leaves the event and delivery tables as they are: an
	// unpartitioned database stays so (retention deletes rows), a
	// partitioned one keeps its partitions.
	Unpartitioned bool

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

// Validate reports the first setting Open would refuse, with the hookd
// command's flag in parentheses: a missing or short master key, a negative
// duration or count, timeouts that do not nest, an unknown default
// profile, or an invalid event type. Zero fields are checked as their
// defaults.
func (c Config) Validate() error { return c.app().Validate() }

// app is c as internal/app builds hookd from it.
func (c Config) app() app.Config {
	types := make([]event.Type, len(c.EventTypes))
	for i, t := range c.EventTypes {
		types[i] = t.internal()
	}
	var oidc *app.OIDCConfig
	if o := c.OIDC; o != nil {
		oidc = &app.OIDCConfig{Issuer: o.Issuer, ClientID: o.ClientID, ClientSecret: o.ClientSecret, RedirectURL: o.RedirectURL,
			Claim: o.Claim, OperatorValues: o.OperatorValues, AdminValues: o.AdminValues}
	}
	return app.Config{
		Database: c.Database, Schema: c.Schema, MasterKey: c.MasterKey,
		EgressAllow: c.EgressAllow, EgressProxy: c.EgressProxy, UserAgent: c.UserAgent,
		PortalFrameOrigins: c.PortalFrameOrigins, NoTransformations: c.NoTransformations, Destinations: c.Destinations,
		TransformationTimeLimit: c.TransformationTimeLimit,
		Work:                    c.Work, Workers: c.Workers, SlowWorkers: c.SlowWorkers, OwnerShare: c.OwnerShare, SlowAfter: c.SlowAfter,
		EventTypes: types, Catalogs: c.Catalogs, KeepCatalog: c.KeepCatalog, Scope: c.Scope.source(),
		DefaultProfile: c.DefaultProfile, Retention: c.Retention, OIDC: oidc,
		ConsoleKeySigninOff: c.ConsoleKeySigninOff, AuditRetention: c.AuditRetention, PartitionInterval: c.PartitionInterval, Unpartitioned: c.Unpartitioned,
		HTTPTimeout: c.HTTPTimeout, JobTimeout: c.JobTimeout, LeaseFor: c.LeaseFor, RescueStuckJobsAfter: c.RescueStuckJobsAfter,
		BusySnooze: c.BusySnooze, DrainMax: c.DrainMax, FetchCooldown: c.FetchCooldown, FetchPollInterval: c.FetchPollInterval,
		MetricsOwnerLabels: c.MetricsOwnerLabels, TracerProvider: c.TracerProvider,
		Now: c.Now, Log: c.Log,
	}
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
