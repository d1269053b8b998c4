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

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookd/hookd/internal/app"
)

// Hookd is hookd opened on a database: ready to publish, to serve its API,
// and (after Start, or on your River client) to deliver.
type Hookd struct {
	a *app.App // what hookd is built from (internal/app); Hookd is its public face
}

// Open opens the database Config.Database names (a postgres:// URL or an
// SQLite file path), applies hookd's and River's migrations, and registers
// the event types. Call Start to run the workers, Close when done.
func Open(ctx context.Context, cfg Config) (*Hookd, error) {
	return wrap(app.Open(ctx, cfg.app()))
}

// OpenPool opens hookd on your PostgreSQL pool and migrates it: hookd's and
// River's tables go where the pool's search_path says (set Config.Schema to
// that schema's name when it is not the default). Publish with PublishTx
// inside transactions on this pool. Close leaves the pool open.
func OpenPool(ctx context.Context, pool *pgxpool.Pool, cfg Config) (*Hookd, error) {
	return wrap(app.OpenPool(ctx, pool, cfg.app()))
}

// OpenDB opens hookd on your SQLite database and migrates it. Open db with
// OpenSQLite (or as it does: one connection, foreign keys on,
// _txlock=immediate), and publish with PublishTx inside its transactions.
// Close leaves db open.
func OpenDB(ctx context.Context, db *sql.DB, cfg Config) (*Hookd, error) {
	return wrap(app.OpenDB(ctx, db, cfg.app()))
}

// OpenSQLite opens an SQLite file the way hookd and River need it (one
// connection, WAL, foreign keys, immediate transactions, a statement
// cache), for your tables and hookd's alike. Pass it to OpenDB.
func OpenSQLite(ctx context.Context, path string) (*sql.DB, error) {
	return app.OpenSQLite(ctx, path)
}

func wrap(a *app.App, err error) (*Hookd, error) {
	if err != nil {
		return nil, err
	}
	return &Hookd{a: a}, nil
}

// Start runs hookd's own River client with the delivery workers, when
// Config.Work; otherwise it does nothing. It returns at once. Cancelling
// ctx later does not stop the workers (River would hard-stop on it,
// cancelling deliveries in flight); call Stop for a graceful stop.
func (h *Hookd) Start(ctx context.Context) error { return h.a.Start(ctx) }

// Stop stops fetching new jobs and waits for deliveries in flight until
// ctx ends, then cancels what is left (River retries those jobs later).
// Stop your own River client yourself when it runs hookd's workers.
func (h *Hookd) Stop(ctx context.Context) error { return h.a.Stop(ctx) }

// Close closes the database hookd opened (after Stop). A pool or *sql.DB
// given to OpenPool or OpenDB stays open: it is yours.
func (h *Hookd) Close() error { return h.a.Close() }
