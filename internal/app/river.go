package app

import (
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/riverqueue/rivercontrib/otelriver"

	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/store"
)

// AddWorkers adds hookd's workers, queues and periodic jobs to rc, the
// config of the application's own River client (hookd.Hookd.AddWorkers).
func (a *App) AddWorkers(rc *river.Config) error {
	if rc == nil {
		return errors.New("AddWorkers: the river.Config is nil")
	}
	if a.cfg.Work {
		return errors.New("AddWorkers: Config.Work runs hookd's workers on its own River client; leave it false when your client runs them")
	}
	if rc.RescueStuckJobsAfter != 0 && rc.RescueStuckJobsAfter <= a.cfg.JobTimeout {
		return fmt.Errorf("AddWorkers: your River client's RescueStuckJobsAfter (%s) must exceed hookd's job timeout (%s), or River hands deliveries in flight to another worker", rc.RescueStuckJobsAfter, a.cfg.JobTimeout)
	}
	if rc.Workers == nil {
		rc.Workers = river.NewWorkers()
	}
	a.Delivery.Register(rc.Workers)
	if rc.Queues == nil {
		rc.Queues = map[string]river.QueueConfig{}
	}
	for name, qc := range hookdQueues(a.cfg) {
		if _, ok := rc.Queues[name]; !ok {
			rc.Queues[name] = qc
		}
	}
	rc.PeriodicJobs = append(rc.PeriodicJobs, a.Delivery.PeriodicJobs()...)
	return nil
}

// UseRiver makes client, the application's River client built on a config
// AddWorkers filled, the one hookd inserts and reads its jobs with
// (hookd.Hookd.UseRiver).
func (a *App) UseRiver(client any) error {
	if a.cfg.Work {
		return errors.New("UseRiver: Config.Work runs hookd's own River client; leave it false when yours runs hookd's workers")
	}
	q, err := a.DB.UseRiver(client)
	if err != nil {
		return fmt.Errorf("UseRiver: %w", err)
	}
	a.Jobs, a.Ops.Jobs, a.usesYours = q, q, true
	return nil
}

// hookdQueues are hookd's River queues: the fanout's, and the two
// delivery lanes (docs/design.md, "Isolation").
func hookdQueues(cfg Config) map[string]river.QueueConfig {
	return map[string]river.QueueConfig{
		delivery.QueueFanout:      {MaxWorkers: max(4, cfg.Workers/10)},
		delivery.QueueDeliver:     {MaxWorkers: cfg.Workers},
		delivery.QueueDeliverSlow: {MaxWorkers: cfg.SlowWorkers},
	}
}

// drainFor is how long a lease holder's job may drain its endpoint past
// one attempt's bound: up to 10 s, while the job's whole timeout stays
// under half of River's stuck-job rescue (a draining job is never taken for
// a dead one).
func drainFor(cfg Config) time.Duration {
	d := min(10*time.Second, cfg.RescueStuckJobsAfter/2-cfg.JobTimeout)
	return max(d, 0)
}

// riverConfig is hookd's own River client's config, with deliverySvc's
// workers when cfg.Work; cfg has its defaults, backend is the database's
// kind (fetch timings differ).
func riverConfig(cfg Config, deliverySvc *delivery.Service, backend store.Backend) *river.Config {
	rc := &river.Config{
		Logger:               cfg.Log.With("component", "river"),
		JobTimeout:           cfg.JobTimeout,
		RescueStuckJobsAfter: cfg.RescueStuckJobsAfter,
		FetchCooldown:        cfg.FetchCooldown,
		FetchPollInterval:    cfg.FetchPollInterval,
		// River keeps a completed job 24 h. Under a shorter retention
		// (a steady state of minutes) those rows outlived the deliveries
		// they ran, and river_job became the largest table of the file
		// (docs/performance.md, "SQLite at volume"): they go with the
		// window. A delivery needs its job only while it is pending.
		CompletedJobRetentionPeriod: completedJobRetention(cfg.Retention),
	}
	if rc.FetchCooldown == 0 {
		// Each job hop (publish → fanout → deliver) waits out up to one
		// cooldown after River's insert notification; on PostgreSQL 2 ms
		// halves the latency p99 at 200 events/s and costs no throughput
		// (docs/performance.md). SQLite has no notifications: the poll
		// rules there, and a shorter cooldown changed nothing.
		rc.FetchCooldown = onBackend(backend, 2*time.Millisecond, 10*time.Millisecond)
	}
	if rc.FetchPollInterval == 0 {
		// A job inserted in a transaction (all of hookd's) wakes River only
		// through LISTEN/NOTIFY; on SQLite the poll is all there is, and on
		// one in-process connection it costs a few cheap queries a second.
		rc.FetchPollInterval = onBackend(backend, 200*time.Millisecond, 50*time.Millisecond)
	}
	if cfg.TracerProvider != nil {
		// Spans for job inserts and work; the inserting span's context
		// rides in each job's metadata, linked from its work span.
		rc.Middleware = []rivertype.Middleware{otelriver.NewMiddleware(&otelriver.MiddlewareConfig{
			TracerProvider: cfg.TracerProvider, EnableTracePropagation: true, EnableWorkSpanJobKindSuffix: true,
		})}
	}
	if !cfg.Work {
		return rc // insert-only client: an API node, or your River runs the workers
	}
	rc.Workers = river.NewWorkers()
	deliverySvc.Register(rc.Workers)
	rc.Queues = hookdQueues(cfg)
	rc.PeriodicJobs = deliverySvc.PeriodicJobs()
	return rc
}

// completedJobRetention is how long River keeps a completed job: its own
// 24 h, or hookd's retention if shorter.
func completedJobRetention(retention time.Duration) time.Duration {
	if retention <= 0 {
		return 24 * time.Hour
	}
	return min(24*time.Hour, retention)
}

// onBackend is postgres on PostgreSQL and sqlite on SQLite.
func onBackend(backend store.Backend, postgres, sqlite time.Duration) time.Duration {
	if backend == store.Postgres {
		return postgres
	}
	return sqlite
}
