// Package hookd is hookd as a Go library: open it on your database, publish
// events inside your own transactions (the transactional outbox: an event
// exists if and only if your business change committed), run its delivery
// workers, and mount its admin API in your own server.
//
// The hookd binary (cmd/hookd) is a thin wrapper around this package.
package hookd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/riverqueue/river"

	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/egress"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/httpapi"
	"github.com/hookd/hookd/internal/mcpserver"
	"github.com/hookd/hookd/internal/openapi"
	"github.com/hookd/hookd/internal/ops"
	"github.com/hookd/hookd/internal/profile"
	"github.com/hookd/hookd/internal/scope"
	"github.com/hookd/hookd/internal/store"
)

// Config configures a Hookd. Zero values are sensible defaults.
type Config struct {
	// Database is a postgres:// URL or an SQLite file path (default hookd.db).
	Database string
	// Schema puts hookd's and River's tables in this PostgreSQL schema.
	Schema string
	// MasterKey seals endpoint secrets at rest (32 bytes). Required.
	MasterKey []byte
	// EgressAllow opens address ranges the egress guard refuses by default
	// (loopback, private, link-local…): for local development and tests.
	EgressAllow []netip.Prefix
	// Work runs the delivery workers in this process (false: API only).
	Work bool
	// Workers is how many deliveries run at once in this process (default 100).
	Workers int
	// FetchCooldown and FetchPollInterval tune how fast River picks up jobs.
	// Defaults: on PostgreSQL, which also wakes River with LISTEN/NOTIFY, a
	// 2 ms cooldown and a 200 ms poll; on SQLite, which has only the poll,
	// 10 ms and 50 ms.
	FetchCooldown     time.Duration
	FetchPollInterval time.Duration
	// RescueStuckJobsAfter hands jobs of a dead process to another after
	// this long (default 1 minute; must exceed the 15 s job timeout).
	RescueStuckJobsAfter time.Duration
	// ScopeSource answers for endpoints attached to a scope source.
	ScopeSource scope.Source
	// Catalog registers event types shared by every owner, at start.
	Catalog []event.Type
	// Catalogs names more shared event types, loaded at start: each a
	// built-in catalog ("standmeet": seed 000's 39 types) or the path of a
	// YAML or JSON file (what `hookd serve --catalog` takes).
	Catalogs []string
	// DefaultProfile is the profile of owners created without one (standard).
	DefaultProfile string
	// Retention keeps finished deliveries and events this long (30 days).
	Retention time.Duration
	// Now is the clock (tests inject one).
	Now func() time.Time
	Log *slog.Logger
	// Timings from the seeds, overridable so tests need not wait them out:
	// the lease of a dead holder (20 s), the busy snooze (2 s), the job
	// timeout (15 s) and the HTTP timeout inside it (10 s).
	LeaseFor    time.Duration
	BusySnooze  time.Duration
	JobTimeout  time.Duration
	HTTPTimeout time.Duration
	// DrainMax bounds how many deliveries one lease holder sends in a row
	// before it hands over to the next delivery's job (default 1000).
	DrainMax int
}

// Hookd is a running (or ready to run) hookd.
type Hookd struct {
	DB     *store.DB
	Engine *delivery.Service
	Ops    *ops.Service
	Queue  store.Queue
	API    *httpapi.Server
	log    *slog.Logger
	work   bool
}

// Open opens the database, applies migrations, loads the catalog and builds
// the engine. Call Start to run the workers.
func Open(ctx context.Context, cfg Config) (*Hookd, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	db, err := store.Open(ctx, store.Config{URL: cfg.Database, Schema: cfg.Schema, Log: cfg.Log})
	if err != nil {
		return nil, err
	}
	h, err := New(ctx, db, cfg)
	if err != nil {
		db.Close()
		return nil, err
	}
	return h, nil
}

// New builds hookd on an open store (library mode: store.FromSQL or
// store.FromPool wrap your own connection), migrating it first.
func New(ctx context.Context, db *store.DB, cfg Config) (*Hookd, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.DefaultProfile == "" {
		cfg.DefaultProfile = profile.Standard{}.Name()
	}
	sealer, err := endpoint.NewSealer(cfg.MasterKey)
	if err != nil {
		return nil, err
	}
	profiles := profile.Default()
	if _, err := profiles.Get(cfg.DefaultProfile); err != nil {
		return nil, err
	}
	if err := db.Migrate(ctx); err != nil {
		return nil, err
	}
	extra, err := event.LoadCatalogs(cfg.Catalogs)
	if err != nil {
		return nil, err
	}
	if err := loadCatalog(ctx, db, profiles, append(extra, cfg.Catalog...), cfg.Now()); err != nil {
		return nil, err
	}
	engine := delivery.New(delivery.Config{
		DB: db, Profiles: profiles, Sealer: sealer,
		Client: egress.New(egress.Config{Allow: cfg.EgressAllow, UserAgent: "hookd/1", Timeout: cfg.HTTPTimeout}),
		Scope:  scope.Predicate{Source: cfg.ScopeSource},
		Now:    cfg.Now, Log: cfg.Log, Retention: cfg.Retention,
		LeaseFor: cfg.LeaseFor, BusySnooze: cfg.BusySnooze, JobTimeout: cfg.JobTimeout,
		HTTPTimeout: cfg.HTTPTimeout, DrainFor: drainFor(cfg), DrainMax: cfg.DrainMax,
	})
	rc := riverConfig(cfg, engine, db.Engine)
	queue, err := db.NewRiver(rc)
	if err != nil {
		return nil, err
	}
	opsSvc := &ops.Service{DB: db, Engine: engine, Profiles: profiles, Sealer: sealer, EgressAllow: cfg.EgressAllow, DefaultProfile: cfg.DefaultProfile, Now: cfg.Now, Log: cfg.Log}
	h := &Hookd{
		DB: db, Engine: engine, Ops: opsSvc, Queue: queue,
		API: &httpapi.Server{Ops: opsSvc, DB: db, Queue: queue, Log: cfg.Log, Extra: map[string]http.Handler{}},
		log: cfg.Log, work: cfg.Work,
	}
	if err := h.mountProjections(); err != nil {
		return nil, err
	}
	return h, nil
}

// mountProjections mounts the ops' other projections beside REST: the MCP
// tools over streamable HTTP at /mcp (same bearer keys) and the OpenAPI
// document at GET /openapi.json.
func (h *Hookd) mountProjections() error {
	tools, err := mcpserver.New(mcpserver.Config{Ops: h.Ops, Log: h.log})
	if err != nil {
		return err
	}
	doc, err := openapi.Handler(h.Ops.Ops(), openapi.DefaultInfo)
	if err != nil {
		return err
	}
	h.API.Extra["/mcp"] = tools.Handler(h.API.Authenticate)
	h.API.Extra["GET /openapi.json"] = doc
	return nil
}

// drainFor is how long a lease holder's job may drain its endpoint past
// one attempt's bound: up to 10 s, while the job's whole timeout stays
// under half of River's stuck-job rescue (a draining job is never taken for
// a dead one).
func drainFor(cfg Config) time.Duration {
	rescue := cmp.Or(cfg.RescueStuckJobsAfter, time.Minute)
	d := min(10*time.Second, rescue/2-cmp.Or(cfg.JobTimeout, delivery.JobTimeout))
	return max(d, 0)
}

func riverConfig(cfg Config, engine *delivery.Service, eng store.Engine) *river.Config {
	rc := &river.Config{
		Logger:               cfg.Log.With("component", "river"),
		JobTimeout:           cmp.Or(cfg.JobTimeout, delivery.JobTimeout),
		RescueStuckJobsAfter: cfg.RescueStuckJobsAfter,
		FetchCooldown:        cfg.FetchCooldown,
		FetchPollInterval:    cfg.FetchPollInterval,
	}
	if rc.RescueStuckJobsAfter == 0 {
		rc.RescueStuckJobsAfter = time.Minute
	}
	if rc.FetchCooldown == 0 {
		// Each job hop (publish → fanout → deliver) waits out up to one
		// cooldown after River's insert notification; on PostgreSQL 2 ms
		// halves the latency p99 at 200 events/s and costs no throughput
		// (docs/performance.md). SQLite has no notifications: the poll
		// rules there, and a shorter cooldown changed nothing.
		rc.FetchCooldown = map[bool]time.Duration{true: 2 * time.Millisecond, false: 10 * time.Millisecond}[eng == store.Postgres]
	}
	if rc.FetchPollInterval == 0 {
		// A job inserted in a transaction (all of hookd's) wakes River only
		// through LISTEN/NOTIFY; on SQLite the poll is all there is, and on
		// one in-process connection it costs a few cheap queries a second.
		rc.FetchPollInterval = map[bool]time.Duration{true: 200 * time.Millisecond, false: 50 * time.Millisecond}[eng == store.Postgres]
	}
	if !cfg.Work {
		return rc // insert-only client: an API node
	}
	workers := cfg.Workers
	if workers == 0 {
		workers = 100
	}
	rc.Workers = river.NewWorkers()
	engine.Register(rc.Workers)
	rc.Queues = map[string]river.QueueConfig{
		delivery.QueueFanout:  {MaxWorkers: max(4, workers/10)},
		delivery.QueueDeliver: {MaxWorkers: workers},
	}
	rc.PeriodicJobs = engine.PeriodicJobs()
	return rc
}

// loadCatalog makes the shared catalog exactly extra (offered to every
// owner) plus each profile's own types (offered to that profile's owners
// only), which win over extra on a name: a profile's test event stays its
// own. Types a previous start shared and this one does not are removed.
func loadCatalog(ctx context.Context, db *store.DB, profiles *profile.Registry, extra []event.Type, now time.Time) error {
	byName := map[string]event.Type{}
	var names []string
	put := func(t event.Type, prof string) error {
		if err := event.ValidateTypeName(t.Name); err != nil {
			return fmt.Errorf("catalog: %w", err)
		}
		exp, err := event.ParseExposure(string(t.Exposure))
		if err != nil {
			return fmt.Errorf("catalog %s: %w", t.Name, err)
		}
		if _, seen := byName[t.Name]; !seen {
			names = append(names, t.Name)
		}
		t.OwnerID, t.Exposure, t.Profile, t.CreatedAt = "", exp, prof, now.UTC()
		byName[t.Name] = t
		return nil
	}
	for _, t := range extra {
		if err := put(t, ""); err != nil {
			return err
		}
	}
	for _, p := range profiles.All() {
		for _, t := range p.Catalog() {
			if err := put(t, p.Name()); err != nil {
				return err
			}
		}
	}
	return db.InTx(ctx, func(q *store.Q) error {
		for _, n := range names {
			t := byName[n]
			if err := q.PutEventType(ctx, &t); err != nil {
				return err
			}
		}
		return q.KeepSharedEventTypes(ctx, names)
	})
}

// Start runs River (the workers, when Config.Work). It returns at once.
// Cancelling ctx later does not stop the workers (River would hard-stop on
// it, cancelling in-flight deliveries); call Stop for a graceful stop.
func (h *Hookd) Start(ctx context.Context) error {
	if !h.work {
		return nil
	}
	return h.Queue.Start(context.WithoutCancel(ctx))
}

// Stop stops fetching new jobs and waits for in-flight deliveries until ctx
// ends; then cancels what is left (those jobs are retried later).
func (h *Hookd) Stop(ctx context.Context) error {
	if !h.work {
		return nil
	}
	err := h.Queue.Stop(ctx)
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		hard, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		return h.Queue.StopAndCancel(hard)
	}
	return err
}

// Close closes the database (after Stop).
func (h *Hookd) Close() error { return h.DB.Close() }

// Handler is the admin and publish API (mount it in your own server).
func (h *Hookd) Handler() http.Handler { return h.API.Handler() }
