// Package delivery is hookd's delivery service: it takes an event from
// publish to a settled attempt at each endpoint it goes to, on River's
// workers. Each step has a file that says its rule, and beside it, named
// after the step, the files that speed it up (each says what it speeds up
// and what its plain path is):
//
//   - publish.go: Publish, the one entry point, writes the event rows and
//     their webhook.fanout jobs in the caller's transaction, or chooses a
//     faster path (schema.go checks each event's data against its type's
//     schema first);
//     publish_group.go commits single publishes in groups, and
//     publish_onetrip.go commits a group in one round trip;
//   - fanout.go: the webhook.fanout worker offers an event to its owner's
//     endpoints (globs, scope) and enqueues one delivery and one
//     webhook.deliver job each;
//     fanout_gate.go runs one fanout of an owner at a time, and
//     fanout_onetrip.go writes a fanout in one round trip;
//   - deliver.go: the webhook.deliver worker takes the endpoint's lease,
//     signs and POSTs (outcome.go classifies the answer);
//     deliver_drain.go lets a lease holder go on sending the endpoint's
//     next fresh deliveries, and deliver_recorder.go records their
//     successes in groups;
//   - settle.go: an attempt's outcome is recorded and the endpoint's
//     health moved (notify.go publishes the failure notifications).
//
// Beside them: the retry schedule (deliverWorker.NextRetry), ordered endpoints
// (ordered.go), rate limits (ratelimit.go), the delivery lanes (lane.go),
// redelivery (redeliver.go) and retention (prune.go). Retries belong to
// River alone; no transaction is held across an HTTP call. The test hooks
// that force the interleavings docs/design.md reasons about exist only in
// a build with the hookdtest tag (hooks.go).
package delivery

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookd/hookd/internal/egress"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/group"
	"github.com/hookd/hookd/internal/metrics"
	"github.com/hookd/hookd/internal/profile"
	"github.com/hookd/hookd/internal/scope"
	"github.com/hookd/hookd/internal/store"
	"github.com/hookd/hookd/internal/transform"
)

// Poster sends one request: the egress client. The body comes from
// profile.Buffers; release gives it back once nothing reads it.
type Poster interface {
	PostReleasing(ctx context.Context, url string, header http.Header, body []byte, release func()) (egress.Response, error)
	// PostAuth is PostReleasing that authenticates to the receiver
	// (endpoint auth; nil: none).
	PostAuth(ctx context.Context, url string, auth *endpoint.Auth, header http.Header, body []byte, release func()) (egress.Response, error)
}

// Config wires the delivery service.
type Config struct {
	DB       *store.DB
	Profiles *profile.Registry
	Sealer   *endpoint.Sealer
	Client   Poster
	Scope    scope.Predicate
	Rules    endpoint.Rules
	// Destinations sends to endpoints whose url names a broker (nil: none).
	Destinations Destinations
	// Now is the clock (default time.Now); tests inject one.
	Now func() time.Time
	Log *slog.Logger
	// LeaseFor is how long a taken lease lasts if its holder dies (default
	// 20 s: longer than the 15 s job timeout, so a live holder never loses it).
	// The fanout defers the jobs of deliveries behind held slots as long.
	LeaseFor time.Duration
	// BusySnooze is how long a delivery to a busy endpoint waits (default 2 s).
	BusySnooze time.Duration
	// MaxRetryAfter caps a receiver's Retry-After (default 1 h).
	MaxRetryAfter time.Duration
	// Retention is how long finished deliveries and events are kept
	// (default 30 days).
	Retention time.Duration
	// AuditRetention is how long audit records are kept (default one
	// year): separate from Retention, an audit log outlives deliveries.
	AuditRetention time.Duration
	// JobTimeout bounds one attempt (default 15 s; the HTTP timeout sits
	// inside it).
	JobTimeout time.Duration
	// HTTPTimeout is the egress client's timeout (default 10 s); the lease
	// drain stops while a whole attempt still fits in the job timeout.
	HTTPTimeout time.Duration
	// DrainMax bounds how many deliveries one lease holder sends in a row
	// (default 1000).
	DrainMax int
	// DrainFor is how long past its first attempt's bound (JobTimeout) a
	// lease holder's job may go on draining its endpoint; the job's River
	// timeout is JobTimeout + DrainFor, which must stay under River's
	// RescueStuckJobsAfter (0: drain only within JobTimeout).
	DrainFor time.Duration
	// DrainBatch is how many deliveries a drain claims, loads and records
	// at a time (default 32).
	DrainBatch int
	// FanoutBatch is how many other events awaiting fanout one fanout job
	// takes along (default 100), FanoutPairs how many deliveries it stops
	// adding events at (default 1000: each is held in memory until the
	// commit, by each of the fanout workers).
	FanoutBatch, FanoutPairs int
	// RateAhead is how far ahead of now a sender may reserve a send to a
	// rate-limited endpoint (default 1 s, at least one interval); a
	// delivery whose turn is further out snoozes.
	RateAhead time.Duration
	// Workers and SlowWorkers are this process's River workers of the
	// two delivery lanes (QueueDeliver, QueueDeliverSlow): one owner holds
	// at most OwnerShare of each (lane.go). 0: no cap in that lane.
	Workers, SlowWorkers int
	// OwnerShare is the part of a lane's workers one owner may hold
	// (default DefaultOwnerShare; 1 or more: no cap).
	OwnerShare float64
	// SlowAfter is how long an attempt may take before its endpoint's
	// deliveries move to the slow lane (default DefaultSlowAfter).
	SlowAfter time.Duration
	// MaxPollWaiters bounds the long-polls waiting at once in this
	// process (default DefaultMaxPollWaiters).
	MaxPollWaiters int
	// UserAgent is sent with every delivery.
	UserAgent string
	// GroupMax is the most single publishes one group commit carries
	// (default DefaultGroupMax; 1 commits each alone).
	GroupMax int
	// Metrics counts publishes and attempt outcomes (nil: none).
	Metrics *metrics.Metrics
	// Tracer makes hookd's spans: publish, fanout, deliver (nil: tracing off).
	Tracer trace.Tracer
	// Code runs endpoints' filters and transformations (code.go; default
	// transform.New with the default limits).
	Code *transform.Engine
}

// Service runs hookd's deliveries, one per process: Publish, the River
// workers it registers, and the drains' recorder.
type Service struct {
	cfg   Config
	db    *store.DB
	log   *slog.Logger
	now   func() time.Time
	rec   *recorder                   // the drains' successes, recorded in groups
	group *group.Runner[*publishCall] // single publishes' group commit
	hooks hookSet                     // the test hooks: hooks_on.go with the hookdtest tag, else nothing
	// profiles remembers owners' profile names for the metrics' labels.
	profiles sync.Map
	// creds remembers unsealed destination urls by endpoint (destination.go).
	creds sync.Map
	// schemas are the compiled event-type schemas, by hash (schema.go).
	schemas event.SchemaCache
	// lastRules is each type's rule as last read (schema.go).
	lastRules lastRules
	// fanoutGates run one fanout of an owner at a time (fanout_gate.go).
	fanoutGates fanoutGates
	// shares count each owner's deliveries in flight per lane (lane.go).
	shares *shares
	// controlNotes are the unknown webhook-delivery controls logged (control.go).
	controlNotes controlNotes
	// poll wakes the long-polls of polling endpoints (poll.go).
	poll *PollHub
	// filterNotes are the failing filters logged (code.go).
	filterNotes filterNotes
}

// The defaults of Config's fields, the one copy of each: hookd.Config's
// Default* are these. The timeouts nest: an HTTP request (egress's
// DefaultTimeout) ends inside its job's timeout, and a job ends before its
// endpoint's lease could pass to another process.
const (
	DefaultHTTPTimeout = egress.DefaultTimeout
	DefaultJobTimeout  = 15 * time.Second
	DefaultLeaseFor    = 20 * time.Second
	DefaultBusySnooze  = 2 * time.Second
	DefaultRetention   = 30 * 24 * time.Hour
	// DefaultAuditRetention keeps audit records a year.
	DefaultAuditRetention = 365 * 24 * time.Hour
	DefaultDrainMax       = 1000
)

// New returns the delivery service for cfg, with defaults filled in.
func New(cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Code == nil {
		cfg.Code = transform.New(transform.Limits{}, false)
	}
	if cfg.Rules == (endpoint.Rules{}) {
		cfg.Rules = endpoint.DefaultRules
	}
	if cfg.LeaseFor == 0 {
		cfg.LeaseFor = DefaultLeaseFor
	}
	if cfg.BusySnooze == 0 {
		cfg.BusySnooze = DefaultBusySnooze
	}
	if cfg.MaxRetryAfter == 0 {
		cfg.MaxRetryAfter = time.Hour
	}
	if cfg.Retention == 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.AuditRetention == 0 {
		cfg.AuditRetention = DefaultAuditRetention
	}
	if cfg.JobTimeout == 0 {
		cfg.JobTimeout = DefaultJobTimeout
	}
	if cfg.HTTPTimeout == 0 {
		cfg.HTTPTimeout = DefaultHTTPTimeout
	}
	if cfg.DrainMax == 0 {
		cfg.DrainMax = DefaultDrainMax
	}
	if cfg.DrainBatch == 0 {
		cfg.DrainBatch = 32
	}
	if cfg.FanoutBatch == 0 {
		cfg.FanoutBatch = 100
	}
	if cfg.FanoutPairs == 0 {
		cfg.FanoutPairs = 1000
	}
	if cfg.RateAhead == 0 {
		cfg.RateAhead = time.Second
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "hookd/1"
	}
	if cfg.GroupMax <= 0 {
		cfg.GroupMax = DefaultGroupMax
	}
	if cfg.OwnerShare == 0 {
		cfg.OwnerShare = DefaultOwnerShare
	}
	if cfg.SlowAfter == 0 {
		cfg.SlowAfter = DefaultSlowAfter
	}
	s := &Service{cfg: cfg, db: cfg.DB, log: cfg.Log, now: cfg.Now,
		shares: newShares(map[string]int{QueueDeliver: cfg.Workers, QueueDeliverSlow: cfg.SlowWorkers}, cfg.OwnerShare)}
	s.rec = &recorder{s: s}
	s.group = newPublishGroup(s)
	s.poll = NewPollHub(cfg.MaxPollWaiters)
	return s
}

// Register adds the delivery service's workers to workers.
func (s *Service) Register(workers *river.Workers) {
	river.AddWorker(workers, &fanoutWorker{s: s})
	river.AddWorker(workers, &deliverWorker{s: s})
	river.AddWorker(workers, &pruneWorker{s: s})
	river.AddWorker(workers, &recoverWorker{s: s})
}

// PeriodicJobs returns the delivery service's periodic jobs (retention), run by the
// elected River leader only.
func (s *Service) PeriodicJobs() []*river.PeriodicJob {
	return []*river.PeriodicJob{
		river.NewPeriodicJob(river.PeriodicInterval(pruneEvery(s.cfg.Retention)), func() (river.JobArgs, *river.InsertOpts) {
			return PruneArgs{}, nil
		}, &river.PeriodicJobOpts{RunOnStart: true}),
	}
}

// Queues are the River queues the delivery service uses: the fanout's,
// and the two delivery lanes (QueueDeliverSlow, lane.go).
const (
	QueueFanout  = "fanout"
	QueueDeliver = "deliver"
)
