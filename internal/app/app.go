// Package app composes hookd: it opens (or takes) the database, migrates
// it, and builds the delivery service, the ops, the River client and the
// HTTP API on it. It is the one constructor package hookd (the library's
// public face), the hookd command and the tests share: hookd.Hookd wraps an
// *App, the command builds one from its flags, and the tests reach its
// parts (the store, the delivery service, the ops) through its fields.
package app

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/destination"
	"github.com/hookd/hookd/internal/egress"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/httpapi"
	"github.com/hookd/hookd/internal/metrics"
	"github.com/hookd/hookd/internal/ops"
	"github.com/hookd/hookd/internal/profile"
	"github.com/hookd/hookd/internal/scope"
	"github.com/hookd/hookd/internal/store"
	"github.com/hookd/hookd/internal/transform"
)

// App is hookd opened on a database: ready to publish, to serve its API,
// and (after Start, or on the application's River client) to deliver.
type App struct {
	DB       *store.DB
	Delivery *delivery.Service
	Ops      *ops.Service
	// Jobs is the River client hookd inserts its jobs with: its own (an
	// insert-only one unless Config.Work), or the application's after
	// UseRiver.
	Jobs store.JobClient
	API  *httpapi.Server

	cfg       Config
	ownsDB    bool            // Close closes DB (Open); not a pool or *sql.DB the caller passed
	ownRiver  store.JobClient // hookd's own client, started by Start when Work
	usesYours bool            // UseRiver was called
	// uiCtx bounds River UI's background services; Close ends it.
	uiCtx   context.Context
	stopUI  context.CancelFunc
	metrics *metrics.Metrics
	started atomic.Bool // Start started hookd's own River client
	// dests holds the connections to broker destinations; Close closes them.
	dests *destination.Pool
}

// Open opens the database cfg.Database names (a postgres:// URL or an
// SQLite file path), applies hookd's and River's migrations, and registers
// the event types. Call Start to run the workers, Close when done.
func Open(ctx context.Context, cfg Config) (*App, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	db, err := store.Open(ctx, store.Config{URL: cfg.Database, Schema: cfg.Schema, Log: cfg.Log, PartitionInterval: cfg.partitionInterval()})
	if err != nil {
		return nil, err
	}
	a, err := build(ctx, db, cfg)
	if err != nil {
		if cerr := db.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close hookd's database: %w", cerr))
		}
		return nil, err
	}
	a.ownsDB = true
	return a, nil
}

// OpenPool opens hookd on the caller's PostgreSQL pool and migrates it.
// Close leaves the pool open.
func OpenPool(ctx context.Context, pool *pgxpool.Pool, cfg Config) (*App, error) {
	if pool == nil {
		return nil, errors.New("OpenPool: the pool is nil")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	db := store.FromPool(pool, cfg.Schema, cfg.Log)
	db.PartitionOnMigrate(cfg.partitionInterval())
	return build(ctx, db, cfg)
}

// OpenDB opens hookd on the caller's SQLite database (see OpenSQLite) and
// migrates it. Close leaves db open.
func OpenDB(ctx context.Context, db *sql.DB, cfg Config) (*App, error) {
	if db == nil {
		return nil, errors.New("OpenDB: the *sql.DB is nil")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return build(ctx, store.FromSQL(db, cfg.Log), cfg.WithDefaults())
}

// OpenSQLite opens an SQLite file the way hookd and River need it (one
// connection, WAL, foreign keys, immediate transactions, a statement
// cache), for the application's tables and hookd's alike.
func OpenSQLite(ctx context.Context, path string) (*sql.DB, error) {
	return store.OpenSQLite(ctx, path)
}

// build wires hookd on an open store, migrating it first; cfg has its
// defaults.
func build(ctx context.Context, db *store.DB, cfg Config) (*App, error) {
	sealer, err := endpoint.NewSealer(cfg.MasterKey)
	if err != nil {
		return nil, err
	}
	profiles := profile.Default()
	db.KeepFor(cfg.Retention, cfg.Now) // reads hide what retention expired
	if err := db.Migrate(ctx); err != nil {
		return nil, err
	}
	m := metrics.New(metrics.Config{Profiles: profiles.Names(), OwnerLabels: cfg.MetricsOwnerLabels, Process: true})
	dests := destination.New(destination.Config{Allow: cfg.EgressAllow, DialTimeout: cfg.HTTPTimeout, Now: cfg.Now, Log: cfg.Log})
	deliverySvc := delivery.New(delivery.Config{
		DB: db, Profiles: profiles, Sealer: sealer, Destinations: dests,
		Client:    egress.New(egress.Config{Allow: cfg.EgressAllow, Proxy: cfg.EgressProxy, UserAgent: cfg.UserAgent, Timeout: cfg.HTTPTimeout, Now: cfg.Now}),
		UserAgent: cfg.UserAgent,
		Scope:     scope.Predicate{Source: cfg.Scope},
		Now:       cfg.Now, Log: cfg.Log, Retention: cfg.Retention, AuditRetention: cfg.AuditRetention,
		LeaseFor: cfg.LeaseFor, BusySnooze: cfg.BusySnooze, JobTimeout: cfg.JobTimeout,
		HTTPTimeout: cfg.HTTPTimeout, DrainFor: drainFor(cfg), DrainMax: cfg.DrainMax,
		Workers: cfg.Workers, SlowWorkers: cfg.SlowWorkers, OwnerShare: cfg.OwnerShare, SlowAfter: cfg.SlowAfter,
		Metrics: m, Tracer: tracer(cfg.TracerProvider),
		Code: transform.New(transform.Limits{Time: cfg.TransformationTimeLimit}, cfg.NoTransformations),
	})
	if err := registerCatalog(ctx, db, deliverySvc, profiles, cfg); err != nil {
		return nil, err
	}
	lanes := []string{delivery.QueueDeliver, delivery.QueueDeliverSlow}
	if err := m.Register(&metrics.DBCollector{DB: db, Queues: append([]string{delivery.QueueFanout}, lanes...), Lanes: lanes,
		InFlight: func() map[string]int { _, n := deliverySvc.InFlight(0); return n }, Now: cfg.Now, Timeout: 3 * time.Second, Log: cfg.Log}); err != nil {
		return nil, err
	}
	queue, err := db.NewRiver(riverConfig(cfg, deliverySvc, db.Backend))
	if err != nil {
		return nil, err
	}
	opsSvc := &ops.Service{DB: db, Delivery: deliverySvc, Profiles: profiles, Sealer: sealer, Jobs: queue, EgressAllow: cfg.EgressAllow, Destinations: cfg.Destinations, UserAgent: cfg.UserAgent, DefaultProfile: cfg.DefaultProfile, Now: cfg.Now, Log: cfg.Log, ForeignGrants: cfg.Scope != nil}
	a := &App{
		DB: db, Delivery: deliverySvc, Ops: opsSvc, Jobs: queue, ownRiver: queue,
		API: &httpapi.Server{Ops: opsSvc, Log: cfg.Log, Tracing: cfg.TracerProvider, Metrics: m},
		cfg: cfg, metrics: m, dests: dests,
	}
	a.uiCtx, a.stopUI = context.WithCancel(context.Background())
	deliverySvc.ListenPoll(a.uiCtx) // other processes' fanouts wake this one's long-polls
	a.API.Ready = a.Ready
	return a, nil
}

// Start runs hookd's own River client with the delivery workers, when
// Config.Work; otherwise it does nothing. It returns at once. Cancelling
// ctx later does not stop the workers (River would hard-stop on it,
// cancelling deliveries in flight); call Stop for a graceful stop.
func (a *App) Start(ctx context.Context) error {
	if !a.cfg.Work {
		return nil
	}
	if err := a.ownRiver.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	a.started.Store(true)
	return nil
}

// Stop stops fetching new jobs and waits for deliveries in flight until
// ctx ends, then cancels what is left (River retries those jobs later).
func (a *App) Stop(ctx context.Context) error {
	if !a.cfg.Work {
		return nil
	}
	err := a.ownRiver.Stop(ctx)
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		hard, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		return a.ownRiver.StopAndCancel(hard)
	}
	return err
}

// Close closes the database Open opened (after Stop). A pool or *sql.DB
// given to OpenPool or OpenDB stays open: it is the caller's.
func (a *App) Close() error {
	a.stopUI()
	a.dests.Close()
	if !a.ownsDB {
		return nil
	}
	if err := a.DB.Close(); err != nil {
		return fmt.Errorf("close hookd's database: %w", err)
	}
	return nil
}
