// Package store is hookd's one storage contract with two backends: embedded
// SQLite (modernc.org/sqlite, no cgo) and PostgreSQL (pgx). Both run the
// same SQL; they differ only in how connections and transactions are opened,
// in a few clauses and statements one engine has and the other lacks, and
// in the River driver each hands to the job engine: all of that is the
// dialect's (dialect.go), in files named by it (postgres*.go, sqlite*.go).
// Every test runs on both (setup, in setup_test.go).
//
// One transaction entry point, DB.InTx, whose TxOptions say what differs
// (relaxed durability, the API's own connections); outside a transaction,
// DB.Q (plain) and DB.Relaxed (each write committed without waiting for its
// WAL flush); DB.WithTx wraps a transaction a library user opened.
//
// The queries follow a webhook's way through hookd, a file per step, each
// step's fast path beside its rule, named by the step it speeds up:
//
//   - publish: event.go writes events, each with its fanout job's id;
//     publish_onetrip.go is its one-round-trip fast path (the commit with
//     the last insert, and the rules read and the insert in one statement
//     when they are as expected).
//   - fanout: fanout.go locks the event, takes along others awaiting
//     fanout, inserts their deliveries and tells which endpoints are busy;
//     fanout_write_batch.go writes them with their jobs in one statement.
//   - deliver: attempt.go reads everything one attempt needs; lease.go
//     holds an endpoint's lease slots and a delivery's claim;
//     deliver_drain.go is a lease holder's batches (claim, load, record,
//     release, then wake the next delivery's job); ordered.go and
//     ratelimit.go are the endpoint controls a send waits on.
//   - settle: settle.go records one attempt's outcome; deliver_drain.go
//     records a drained batch's successes.
//
// Around them: the resources (owner.go, endpoint.go, grant.go,
// eventtype.go, apikey.go and its shared, cached lookups
// apikey_lookup_cached.go, session.go), a delivery's row and the log of
// them (delivery.go, delivery_log.go), River's tables (river.go), and the
// connections (db.go, querier.go, dialect.go, postgres*.go, sqlite*.go,
// migrate.go).
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookd/hookd/internal/audit"
)

// Backend names the database a DB runs on: embedded SQLite or PostgreSQL.
type Backend string

// The backends; the values are what /healthz and the logs call them.
const (
	SQLite   Backend = "sqlite"
	Postgres Backend = "postgres"
)

// Config says which database to open.
type Config struct {
	// URL is a postgres:// (or postgresql://) URL, or an SQLite file path
	// (optionally "sqlite:" prefixed). Empty means "hookd.db".
	URL string
	// Schema, for PostgreSQL, puts hookd's and River's tables in that schema
	// (created if missing). Tests use one per package.
	Schema string
	// MaxConns bounds the PostgreSQL pool: default the URL's pool_max_conns
	// if it has one, else DefaultMaxConns(); at least 2. SQLite always uses
	// one connection: River's SQLite driver requires it.
	MaxConns int32
	// PartitionInterval, on PostgreSQL, partitions the event and delivery
	// tables by time, each partition this long (partition.go), when
	// Migrate runs; 0 leaves an unpartitioned database as it is. A
	// database partitioned before keeps its partitions and gets new ones
	// of this span (DefaultPartitionInterval if 0).
	PartitionInterval time.Duration
	Log               *slog.Logger
}

// DB is an open hookd database.
type DB struct {
	Backend Backend
	// Path is the SQLite file (empty for PostgreSQL).
	Path string
	log  *slog.Logger
	// d is what differs between the engines (dialect.go).
	d    dialect
	base querier
	// The SQLite part's: the one connection's database, and, for files
	// hookd opened, WAL checkpoints off the writers' path
	// (sqlite_checkpoint.go) and the shared lock a restore waits for
	// (sqlite_lock.go).
	sqlDB *sql.DB
	ckpt  *checkpointer
	lock  *fileLock
	// The PostgreSQL part's: the pool, the API's own connections
	// (postgres_foreground.go; nil: none) and the schema.
	pool   *pgxpool.Pool
	fgPool *pgxpool.Pool
	schema string
	// partitionInterval sizes new time partitions; partitionOn: Migrate
	// partitions an unpartitioned database (partition.go).
	partitionInterval time.Duration
	partitionOn       bool
	// partitioned: Migrate found the tables partitioned, so a read by
	// time also names the ids' range (event_list.go).
	partitioned bool
	// route names the partition a statement about one event's rows
	// addresses (partition_route.go).
	route router
	jobs  JobClient
	// notifyQueue tells River's producers a job in queue is available
	// (PostgreSQL only; on SQLite a job it would wake waits for the poll).
	notifyQueue func(ctx context.Context, queue string) error
	// notifyTx sends River's insert notification for queues inside tx
	// (SQLite only: an outbox row; on PostgreSQL WriteFanoutAndCommit's
	// statement notifies).
	notifyTx func(ctx context.Context, tx *sql.Tx, queues []string) error
	// jobsDirect: a statement may write River's job rows itself
	// (CanInsertJobs), set by NewRiver.
	jobsDirect bool
	// retention and clock: how long retention keeps finished records,
	// which the reads an owner sees honour (retention.go; 0: forever).
	retention time.Duration
	clock     func() time.Time
	keys      keyLookups // API key lookups, shared by concurrent requests
	keyCache  keyCache   // keys looked up before, for ops that confirm them (apikey_lookup_cached.go)
}

// Open opens (but does not migrate) the database cfg names.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	u := cfg.URL
	if strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://") {
		return openPostgres(ctx, cfg, log)
	}
	path := strings.TrimPrefix(u, "sqlite:")
	if path == "" {
		path = "hookd.db"
	}
	return openSQLite(ctx, path, log)
}

// Close closes the database. Stop River first.
func (db *DB) Close() error {
	db.route.wg.Wait()
	return db.d.close()
}

// SQLDB returns the SQLite *sql.DB (nil on PostgreSQL), for library users who
// publish inside their own transactions.
func (db *DB) SQLDB() *sql.DB { return db.sqlDB }

// Pool returns the PostgreSQL pool (nil on SQLite).
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// Q returns the store's queries outside any transaction, each statement
// committed on its own.
func (db *DB) Q() *Q { return &Q{db: db, querier: db.base} }

// Relaxed returns the store's queries outside any transaction, each write
// committed without waiting for its WAL flush on PostgreSQL (one round
// trip, as a relaxed InTx would for one statement). For writes whose loss
// in a database crash is safe: an attempt record (the delivery is sent
// again), a claim (it expires or reverts: sent again), a lease release
// (the lease expires after LeaseFor). Never for events, jobs or a lease
// take. On SQLite it is Q.
func (db *DB) Relaxed() *Q { return &Q{db: db, querier: db.d.relaxed()} }

// TxOptions say what a transaction needs beyond an ordinary one. The zero
// value is an ordinary transaction on the main connections.
type TxOptions struct {
	// Relaxed: the writes may be lost in a database crash without losing
	// anything that matters, so on PostgreSQL the commit does not wait for
	// its WAL flush (synchronous_commit off, for this transaction only).
	// hookd uses it to settle delivery attempts and write fanouts: if
	// PostgreSQL itself crashes, a "delivered" mark may roll back and that
	// delivery is sent again (at-least-once); events are never written this
	// way. On SQLite (WAL, synchronous=NORMAL) commits already skip the
	// per-commit fsync. On PostgreSQL the transaction is pipelined
	// (postgres_pipeline.go): BEGIN goes out with its first statement and
	// the setting with its COMMIT, so neither costs a round trip of its own.
	Relaxed bool
	// Foreground: work a client is waiting for, which must not queue behind
	// the delivery workers. On PostgreSQL it runs on the API's own
	// connections (postgres_foreground.go), pipelined, and
	// Q.InsertEventsAndCommit's statement goes out with its COMMIT. On
	// SQLite, and on a pool the library user passed in, it is an ordinary
	// transaction.
	Foreground bool
}

// InTx runs fn in one transaction of the kind opts asks for: committed if
// fn returns nil, rolled back otherwise. Never call out over the network
// inside fn. When ctx carries an op's pending audit record not yet
// written, it is written in this transaction, before its commit
// (audit.go).
func (db *DB) InTx(ctx context.Context, opts TxOptions, fn func(q *Q) error) error {
	return db.d.inTx(ctx, opts, fn)
}

// runTx runs fn on q, inside a transaction the dialect began, writes the
// op's pending audit record, and commits, or rolls back if either failed:
// what every transaction of InTx does, whichever the engine.
func (db *DB) runTx(ctx context.Context, q *Q, fn func(q *Q) error, commit, rollback func(context.Context) error) error {
	err := fn(q)
	var pending *audit.Pending
	if err == nil {
		pending, err = q.writeAudit(ctx)
	}
	if err != nil {
		if rerr := rollback(ctx); rerr != nil {
			// fn's error is the caller's answer; a failed rollback means the
			// connection is in trouble, which the next statement will say too.
			db.log.Warn("rollback after a failed transaction", "error", rerr, "cause", err)
		}
		return err
	}
	if err := commit(ctx); err != nil {
		pending.Untake()
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// WithTx wraps a transaction the caller opened on this database (a *sql.Tx
// on SQLite, a pgx.Tx on PostgreSQL) so hookd writes inside it: the
// transactional outbox of library mode.
func (db *DB) WithTx(tx any) (*Q, error) { return db.d.withTx(tx) }

// Q runs hookd's queries on a connection or inside a transaction: its
// methods write their SQL against the embedded querier (q.query, q.exec,
// q.queryRow), which is that connection or transaction.
type Q struct {
	querier
	db *DB
	tx any // the native transaction, nil outside one
}

// keyShare is the lock a foreign key's check takes on the parent row
// (dialect.keyShare).
func (q *Q) keyShare() string { return q.db.d.keyShare() }

// skipLocked makes concurrent takers pass over rows another taker is
// updating (dialect.skipLocked).
func (q *Q) skipLocked() string { return q.db.d.skipLocked() }

// --- time and JSON columns ---

func ts(t time.Time) int64 { return t.UnixMicro() }

func fromTS(v int64) time.Time { return time.UnixMicro(v).UTC() }

func fromTSPtr(v *int64) *time.Time {
	if v == nil {
		return nil
	}
	t := fromTS(*v)
	return &t
}

func tsPtr(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	v := ts(*t)
	return &v
}

// NotFound reports whether err means no row matched.
func NotFound(err error) bool { return errors.Is(err, errNoRows) }

// ErrNotFound is returned (wrapped) when a row does not exist.
var ErrNotFound = errNoRows

// Count runs a SELECT count(*) query (for tests and diagnostics).
func (db *DB) Count(ctx context.Context, query string, args ...any) (int, error) {
	var n int
	err := db.base.queryRow(ctx, query, args...).Scan(&n)
	return n, err
}

// Ping checks that the database answers a query.
func (db *DB) Ping(ctx context.Context) error {
	var one int
	if err := db.base.queryRow(ctx, `SELECT 1`).Scan(&one); err != nil {
		return fmt.Errorf("database: %w", err)
	}
	return nil
}
