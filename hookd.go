// Package hookd sends your application's events as signed webhooks, from
// inside your application.
//
// You publish an event in the same database transaction as the business
// change it reports (the transactional outbox): if the transaction rolls
// back, nothing is sent; if it commits, hookd fans the event out to every
// endpoint subscribed to its type, signs each request (Standard Webhooks),
// retries failures with backoff, and tracks each endpoint's health. Its
// admin API, MCP tools and OpenAPI document mount in your own HTTP server,
// where the endpoints' owners manage their endpoints, secrets and
// deliveries.
//
// hookd runs on PostgreSQL or SQLite, with River as its job engine. It can
// open the database itself (Open), or share the pool or *sql.DB your
// application already has (OpenPool, OpenDB). Its delivery workers run on
// hookd's own River client (Config.Work), or on yours (AddWorkers and
// UseRiver), so one River client runs every job of your application.
//
// The tasks, one example each:
//
//   - open hookd on your database: Open, OpenPool, OpenDB;
//   - declare what you publish: Config.EventTypes;
//   - publish inside your transaction: PublishTx;
//   - run the workers on your River client: AddWorkers, UseRiver;
//   - mount the API in your server under a prefix: Mount;
//   - decide which events an endpoint may see: ScopeFunc;
//   - give owners API keys: CreateAPIKey;
//   - shut down: Stop, then Close.
//
// The hookd command (cmd/hookd) is this package behind flags.
package hookd

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
	"github.com/hookd/hookd/internal/parts"
	"github.com/hookd/hookd/internal/profile"
	"github.com/hookd/hookd/internal/store"
	"github.com/hookd/hookd/internal/transform"
)

// Hookd is hookd opened on a database: ready to publish, to serve its API,
// and (after Start, or on your River client) to deliver.
type Hookd struct {
	cfg      Config
	db       *store.DB
	ownsDB   bool // Close closes db (Open); not a pool or *sql.DB you passed
	delivery *delivery.Service
	ops      *ops.Service
	// queue is the River client hookd inserts its jobs with: its own (an
	// insert-only one unless Config.Work), or yours after UseRiver.
	queue     store.JobClient
	ownRiver  store.JobClient // hookd's own client, started by Start when Work
	api       *httpapi.Server
	usesYours bool // UseRiver was called
	// uiCtx bounds River UI's background services; Close ends it.
	uiCtx   context.Context
	stopUI  context.CancelFunc
	metrics *metrics.Metrics
	started atomic.Bool // Start started hookd's own River client
	// dests holds the connections to broker destinations; Close closes them.
	dests *destination.Pool
}

func init() {
	parts.Of = func(h any) *parts.Parts {
		x := h.(*Hookd)
		return &parts.Parts{DB: x.db, Delivery: x.delivery, Ops: x.ops, Jobs: x.queue, API: x.api}
	}
}

// Open opens the database Config.Database names (a postgres:// URL or an
// SQLite file path), applies hookd's and River's migrations, and registers
// the event types. Call Start to run the workers, Close when done.
func Open(ctx context.Context, cfg Config) (*Hookd, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	db, err := store.Open(ctx, store.Config{URL: cfg.Database, Schema: cfg.Schema, Log: cfg.Log})
	if err != nil {
		return nil, err
	}
	h, err := build(ctx, db, cfg)
	if err != nil {
		if cerr := db.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close hookd's database: %w", cerr))
		}
		return nil, err
	}
	h.ownsDB = true
	return h, nil
}

// OpenPool opens hookd on your PostgreSQL pool and migrates it: hookd's and
// River's tables go where the pool's search_path says (set Config.Schema to
// that schema's name when it is not the default). Publish with PublishTx
// inside transactions on this pool. Close leaves the pool open.
func OpenPool(ctx context.Context, pool *pgxpool.Pool, cfg Config) (*Hookd, error) {
	if pool == nil {
		return nil, errors.New("OpenPool: the pool is nil")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return build(ctx, store.FromPool(pool, cfg.Schema, cfg.Log), cfg)
}

// OpenDB opens hookd on your SQLite database and migrates it. Open db with
// OpenSQLite (or as it does: one connection, foreign keys on,
// _txlock=immediate), and publish with PublishTx inside its transactions.
// Close leaves db open.
func OpenDB(ctx context.Context, db *sql.DB, cfg Config) (*Hookd, error) {
	if db == nil {
		return nil, errors.New("OpenDB: the *sql.DB is nil")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return build(ctx, store.FromSQL(db, cfg.Log), cfg.withDefaults())
}

// OpenSQLite opens an SQLite file the way hookd and River need it (one
// connection, WAL, foreign keys, immediate transactions, a statement
// cache), for your tables and hookd's alike. Pass it to OpenDB.
func OpenSQLite(ctx context.Context, path string) (*sql.DB, error) {
	return store.OpenSQLite(ctx, path)
}

// build wires hookd on an open store, migrating it first; cfg has its
// defaults.
func build(ctx context.Context, db *store.DB, cfg Config) (*Hookd, error) {
	sealer, err := endpoint.NewSealer(cfg.MasterKey)
	if err != nil {
		return nil, err
	}
	profiles := profile.Default()
	if err := db.Migrate(ctx); err != nil {
		return nil, err
	}
	m := metrics.New(metrics.Config{Profiles: profiles.Names(), OwnerLabels: cfg.MetricsOwnerLabels, Process: true})
	dests := destination.New(destination.Config{Allow: cfg.EgressAllow, DialTimeout: cfg.HTTPTimeout, Now: cfg.Now, Log: cfg.Log})
	deliverySvc := delivery.New(delivery.Config{
		DB: db, Profiles: profiles, Sealer: sealer, Destinations: dests,
		Client:    egress.New(egress.Config{Allow: cfg.EgressAllow, Proxy: cfg.EgressProxy, UserAgent: cfg.UserAgent, Timeout: cfg.HTTPTimeout, Now: cfg.Now}),
		UserAgent: cfg.UserAgent,
		Scope:     scopePredicate(cfg.Scope),
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
	opsSvc := &ops.Service{DB: db, Delivery: deliverySvc, Profiles: profiles, Sealer: sealer, Jobs: queue, EgressAllow: cfg.EgressAllow, UserAgent: cfg.UserAgent, DefaultProfile: cfg.DefaultProfile, Now: cfg.Now, Log: cfg.Log, ForeignGrants: cfg.Scope != nil}
	h := &Hookd{
		cfg: cfg, db: db, delivery: deliverySvc, ops: opsSvc, queue: queue, ownRiver: queue,
		api:     &httpapi.Server{Ops: opsSvc, Log: cfg.Log, Tracing: cfg.TracerProvider, Metrics: m},
		metrics: m, dests: dests,
	}
	h.uiCtx, h.stopUI = context.WithCancel(context.Background())
	deliverySvc.ListenPoll(h.uiCtx) // other processes' fanouts wake this one's long-polls
	h.api.Ready = h.Ready
	return h, nil
}

// Start runs hookd's own River client with the delivery workers, when
// Config.Work; otherwise it does nothing. It returns at once. Cancelling
// ctx later does not stop the workers (River would hard-stop on it,
// cancelling deliveries in flight); call Stop for a graceful stop.
func (h *Hookd) Start(ctx context.Context) error {
	if !h.cfg.Work {
		return nil
	}
	if err := h.ownRiver.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	h.started.Store(true)
	return nil
}

// Stop stops fetching new jobs and waits for deliveries in flight until
// ctx ends, then cancels what is left (River retries those jobs later).
// Stop your own River client yourself when it runs hookd's workers.
func (h *Hookd) Stop(ctx context.Context) error {
	if !h.cfg.Work {
		return nil
	}
	err := h.ownRiver.Stop(ctx)
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		hard, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		return h.ownRiver.StopAndCancel(hard)
	}
	return err
}

// Close closes the database hookd opened (after Stop). A pool or *sql.DB
// given to OpenPool or OpenDB stays open: it is yours.
func (h *Hookd) Close() error {
	h.stopUI()
	h.dests.Close()
	if !h.ownsDB {
		return nil
	}
	if err := h.db.Close(); err != nil {
		return fmt.Errorf("close hookd's database: %w", err)
	}
	return nil
}
