// Package store is hookd's one storage contract with two backends: embedded
// SQLite (modernc.org/sqlite, no cgo) and PostgreSQL (pgx). Both run the
// same SQL; they differ only in how connections and transactions are opened
// and in the River driver each hands to the job engine. Every test runs on
// both (setup, in setup_test.go).
//
// The queries follow a webhook's way through hookd, a file per step:
//
//   - publish: event.go writes events, each with its fanout job's id.
//   - fanout: fanout.go locks the event, takes along others awaiting
//     fanout, inserts their deliveries and tells which endpoints are busy.
//   - deliver: attempt.go reads everything one attempt needs; lease.go
//     holds an endpoint's lease slots and a delivery's claim; drain.go is
//     a lease holder's batches (claim, load, record, release, then wake the
//     next delivery's job); ordered.go and ratelimit.go are the endpoint
//     controls a send waits on.
//   - settle: settle.go records one attempt's outcome; drain.go records a
//     drained batch's successes.
//
// Around them: the resources (owner.go, endpoint.go, grant.go,
// eventtype.go, apikey.go, session.go), a delivery's row and the log of
// them (delivery.go, delivery_log.go), River's tables (river.go), and the
// connections (db.go, querier.go, foreground.go, migrate.go).
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"modernc.org/sqlite" // the embedded engine

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
	Log      *slog.Logger
}

// DB is an open hookd database.
type DB struct {
	Backend Backend
	// Path is the SQLite file (empty for PostgreSQL).
	Path   string
	schema string
	log    *slog.Logger
	sqlDB  *sql.DB
	ckpt   *checkpointer // SQLite files hookd opened: WAL checkpoints off the writers' path (checkpoint.go)
	lock   *fileLock     // SQLite files hookd opened: the shared lock a restore waits for (sqlitelock.go)
	pool   *pgxpool.Pool
	fgPool *pgxpool.Pool // the API's own connections (foreground.go); nil: none
	base   querier
	jobs   JobClient
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
	keys       keyLookups // API key lookups, shared by concurrent requests
	keyCache   keyCache   // keys looked up before, for ops that confirm them (apikey_lookup.go)
}

func newSQLiteDB(sqlDB *sql.DB, path string, log *slog.Logger) *DB {
	return &DB{Backend: SQLite, Path: path, log: log, sqlDB: sqlDB, base: sqlQuerier{c: sqlDB}}
}

var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

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

func openSQLite(ctx context.Context, path string, log *slog.Logger) (*DB, error) {
	var lock *fileLock
	if !inMemory(path) {
		var err error
		if lock, err = lockShared(path); err != nil {
			return nil, err
		}
	}
	sqlDB, err := OpenSQLite(ctx, path)
	if err != nil {
		return nil, errors.Join(err, lock.Release())
	}
	db := newSQLiteDB(sqlDB, path, log)
	db.lock = lock
	db.ckpt = startCheckpointer(ctx, sqlDB, path, log)
	return db, nil
}

// sqliteCacheKiB is the page cache of hookd's SQLite connection, in KiB.
// SQLite's default is 2 MiB: once the delivery log outgrew it, the drains'
// reads and settles read their index pages back from the file. With 16 MiB
// a 100,000-delivery run (1,000 endpoints) delivered 1.2× as fast at 0.89×
// the CPU, for 25–30 MB more peak RSS; 64 MiB gave 1.32× for 120 MB more
// (performance-history.md, 2026-12-03).
const sqliteCacheKiB = 16384

// OpenSQLite opens the SQLite file at path the way hookd and River need it:
// one connection (River's SQLite driver requires it), WAL for concurrent
// readers of the file (e.g. `hookd apikey create` while serving), immediate
// transactions so writers queue instead of failing, foreign keys for
// cascades, a per-connection statement cache (CachingSQLiteDriver), and a
// 16 MiB page cache (sqliteCacheKiB).
func OpenSQLite(ctx context.Context, path string) (*sql.DB, error) {
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)&_pragma=cache_size(-" + strconv.Itoa(sqliteCacheKiB) + ")&_txlock=immediate"
	sqlDB, err := sql.Open(CachingSQLiteDriver, dsn)
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	sqlDB.SetMaxOpenConns(1)
	sqlDB.SetMaxIdleConns(1)
	sqlDB.SetConnMaxLifetime(0)
	if err := pingSQLite(ctx, sqlDB); err != nil {
		_ = sqlDB.Close() // nothing was opened: the ping's error is the one to report
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	return sqlDB, nil
}

// urlHasParam reports whether a postgres:// URL sets query parameter name.
func urlHasParam(rawURL, name string) bool {
	u, err := url.Parse(rawURL)
	return err == nil && u.Query().Has(name)
}

// pingSQLite opens the first connection, which runs the DSN's pragmas.
// Switching a new file to WAL takes an exclusive lock that SQLite does not
// wait for (busy_timeout does not apply), so two processes opening a new
// file at once can get SQLITE_BUSY here: retry that for a few seconds.
func pingSQLite(ctx context.Context, sqlDB *sql.DB) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := sqlDB.PingContext(ctx)
		var se *sqlite.Error
		if err == nil || !errors.As(err, &se) || se.Code()&0xff != sqliteBusy || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

const sqliteBusy = 5 // SQLITE_BUSY, the primary code of every busy variant

// DefaultMaxConns is the PostgreSQL pool's size when neither the URL nor
// Config sets one: twice the CPUs Go may use, at least 4. A delivery holds
// a connection only for its short queries, so a hundred workers share a
// few; and more connections than that made everything slower, not faster:
// on 2 cores, pools of 4, 8 and 20 delivered the breadth run at 5,466,
// 4,580 and 3,691/s, and 20 put 0.7 s on the latency p99 (each new backend
// loads its catalog caches and plans every statement afresh, and twenty of
// them contend for two cores).
func DefaultMaxConns() int32 { return int32(max(4, 2*runtime.GOMAXPROCS(0))) }

func openPostgres(ctx context.Context, cfg Config, log *slog.Logger) (*DB, error) {
	pc, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("parse database URL: %w", err)
	}
	switch {
	case cfg.MaxConns > 0:
		pc.MaxConns = cfg.MaxConns
	case !urlHasParam(cfg.URL, "pool_max_conns"):
		pc.MaxConns = DefaultMaxConns()
	}
	if pc.MaxConns < 2 {
		return nil, fmt.Errorf("database pool of %d connections: hookd needs at least 2 (migrations hold one for their lock while running on another)", pc.MaxConns)
	}
	if cfg.Schema != "" {
		if !schemaName.MatchString(cfg.Schema) {
			return nil, fmt.Errorf("schema %q: use lowercase letters, digits and _", cfg.Schema)
		}
		pc.ConnConfig.RuntimeParams["search_path"] = cfg.Schema
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("connect postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect postgres: %w", err)
	}
	if cfg.Schema != "" {
		if err := createSchema(ctx, pool, cfg.Schema); err != nil {
			pool.Close()
			return nil, err
		}
	}
	fg, err := openForeground(ctx, pc)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect postgres: %w", err)
	}
	return &DB{Backend: Postgres, schema: cfg.Schema, log: log, pool: pool, fgPool: fg, base: pgQuerier{pool}}, nil
}

// createSchema creates schema if it is missing. IF NOT EXISTS is not safe
// against a concurrent CREATE (several hookd processes starting on a new
// database): the loser gets unique_violation on pg_namespace, or
// duplicate_schema. Either means the schema now exists, which is all we want.
func createSchema(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	_, err := pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+schema)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "23505" || pgErr.Code == "42P06") {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create schema %s: %w", schema, err)
	}
	return nil
}

// Close closes the database. Stop River first.
func (db *DB) Close() error {
	if db.pool != nil {
		if db.fgPool != nil {
			db.fgPool.Close()
		}
		db.pool.Close()
		return nil
	}
	if db.ckpt != nil {
		if err := db.ckpt.close(); err != nil {
			db.log.Warn("sqlite: close the checkpointer's connection", "error", err)
		}
	}
	return errors.Join(db.sqlDB.Close(), db.lock.Release())
}

// SQLDB returns the SQLite *sql.DB (nil on PostgreSQL), for library users who
// publish inside their own transactions.
func (db *DB) SQLDB() *sql.DB { return db.sqlDB }

// Pool returns the PostgreSQL pool (nil on SQLite).
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// Q returns the store's queries outside any transaction.
func (db *DB) Q() *Q { return &Q{db: db, querier: db.base} }

// InTx runs fn in one transaction: committed if fn returns nil, rolled back
// otherwise. Never call out over the network inside fn. When ctx carries an
// op's pending audit record not yet written, it is written in this
// transaction, before its commit (audit.go).
func (db *DB) InTx(ctx context.Context, fn func(q *Q) error) error {
	if db.pool != nil {
		var pending *audit.Pending
		err := classify(pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
			q := &Q{db: db, querier: pgQuerier{tx}, tx: tx}
			if err := fn(q); err != nil {
				return err
			}
			var err error
			pending, err = q.writeAudit(ctx)
			return err
		}))
		if err != nil {
			pending.Untake()
		}
		return err
	}
	tx, err := db.sqlDB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	q := &Q{db: db, querier: sqlQuerier{c: tx}, tx: tx}
	err = fn(q)
	var pending *audit.Pending
	if err == nil {
		pending, err = q.writeAudit(ctx)
	}
	if err != nil {
		if rerr := tx.Rollback(); rerr != nil {
			// fn's error is the caller's answer; a failed rollback means the
			// connection is in trouble, which the next statement will say too.
			db.log.Warn("rollback after a failed transaction", "error", rerr, "cause", err)
		}
		return err
	}
	if err := tx.Commit(); err != nil {
		pending.Untake()
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// WithTx wraps a transaction the caller opened on this database (a *sql.Tx
// on SQLite, a pgx.Tx on PostgreSQL) so hookd writes inside it: the
// transactional outbox of library mode.
func (db *DB) WithTx(tx any) (*Q, error) {
	switch t := tx.(type) {
	case *sql.Tx:
		if db.Backend != SQLite {
			return nil, errors.New("a *sql.Tx was given, but hookd runs on PostgreSQL: pass a pgx.Tx")
		}
		return &Q{db: db, querier: sqlQuerier{c: t}, tx: t}, nil
	case pgx.Tx:
		if db.Backend != Postgres {
			return nil, errors.New("a pgx.Tx was given, but hookd runs on SQLite: pass a *sql.Tx")
		}
		return &Q{db: db, querier: pgQuerier{t}, tx: t}, nil
	}
	return nil, fmt.Errorf("unsupported transaction type %T", tx)
}

// Q runs hookd's queries on a connection or inside a transaction: its
// methods write their SQL against the embedded querier (q.query, q.exec,
// q.queryRow), which is that connection or transaction.
type Q struct {
	querier
	db *DB
	tx any // the native transaction, nil outside one
}

// keyShare is the lock a foreign key's check takes on the parent row: it
// keeps the row from being deleted (or its key changed) until the
// transaction ends, and lets others read and lock it too. SQLite has one
// writer at a time and no such clause.
func (q *Q) keyShare() string {
	if q.db.Backend == Postgres {
		return ` FOR KEY SHARE`
	}
	return ``
}

// skipLocked makes concurrent takers on PostgreSQL pass over rows another
// taker is updating (a lease slot, a fresh delivery) and take the next free
// one, instead of queueing on the same row and finding it gone. SQLite has
// one writer at a time and no such clause.
func (q *Q) skipLocked() string {
	if q.db.Backend == Postgres {
		return ` FOR UPDATE SKIP LOCKED`
	}
	return ``
}

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

// FromSQL wraps an SQLite *sql.DB the caller opened (library mode). It must
// allow one open connection only, with foreign keys on and
// _txlock=immediate, as Open configures it; opened with the
// CachingSQLiteDriver driver name (instead of "sqlite") it compiles each
// statement once.
func FromSQL(sqlDB *sql.DB, log *slog.Logger) *DB {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return newSQLiteDB(sqlDB, "", log)
}

// FromPool wraps a PostgreSQL pool the caller opened (library mode); schema
// may be empty (the pool's search_path decides).
func FromPool(pool *pgxpool.Pool, schema string, log *slog.Logger) *DB {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &DB{Backend: Postgres, schema: schema, log: log, pool: pool, base: pgQuerier{pool}}
}

// Count runs a SELECT count(*) query (for tests and diagnostics).
func (db *DB) Count(ctx context.Context, query string, args ...any) (int, error) {
	var n int
	err := db.base.queryRow(ctx, query, args...).Scan(&n)
	return n, err
}

// InTxRelaxed is InTx for writes that may be lost in a database crash
// without losing anything that matters: on PostgreSQL the commit does not
// wait for its WAL flush (synchronous_commit off, for this transaction
// only). hookd uses it to settle delivery attempts: if PostgreSQL itself
// crashes, a "delivered" mark may roll back and that delivery is sent again
// (at-least-once); events and jobs are never written this way. On SQLite
// (WAL, synchronous=NORMAL) commits already skip the per-commit fsync.
//
// On PostgreSQL the transaction is a pipeTx (pipeline.go): BEGIN goes out
// with its first statement and the setting with its COMMIT, so neither
// costs a round trip of its own (a fanout's transaction had four, and
// three statements, of nothing but BEGIN, SET LOCAL and COMMIT).
func (db *DB) InTxRelaxed(ctx context.Context, fn func(q *Q) error) error {
	if db.pool == nil {
		return db.InTx(ctx, fn)
	}
	return db.inPipeTx(ctx, db.pool, true, fn)
}

// Relaxed returns the store's queries outside any transaction, each write
// committed without waiting for its WAL flush on PostgreSQL (one round
// trip, as InTxRelaxed would for one statement). For writes whose loss in a
// database crash is safe: an attempt record (the delivery is sent again),
// a claim (it expires or reverts: sent again), a lease release (the lease
// expires after LeaseFor). Never for events, jobs or a lease take. On
// SQLite it is Q.
func (db *DB) Relaxed() *Q {
	if db.pool == nil {
		return db.Q()
	}
	return &Q{db: db, querier: pgRelaxed{db.pool}}
}

// Ping checks that the database answers a query.
func (db *DB) Ping(ctx context.Context) error {
	var one int
	if err := db.base.queryRow(ctx, `SELECT 1`).Scan(&one); err != nil {
		return fmt.Errorf("database: %w", err)
	}
	return nil
}
