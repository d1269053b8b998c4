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
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/hookd/hookd/internal/audit"
)

// The PostgreSQL part of the store: how hookd opens its pool (and the
// API's own: postgres_foreground.go), its schema, the pgx querier and the
// relaxed one (a pipelined batch that commits without waiting for its WAL
// flush), the pipelined transaction (postgres_pipeline.go), LISTEN/NOTIFY
// for polls (postgres_listen.go), and what its dialect says where the SQL
// or the transactions differ from SQLite's (pgDialect).

var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// urlHasParam reports whether a postgres:// URL sets query parameter name.
func urlHasParam(rawURL, name string) bool {
	u, err := url.Parse(rawURL)
	return err == nil && u.Query().Has(name)
}

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
	db := newPostgresDB(pool, fg, cfg.Schema, log)
	db.PartitionOnMigrate(cfg.PartitionInterval)
	return db, nil
}

// PartitionOnMigrate makes Migrate partition the event and delivery
// tables by time, interval each, if they are not yet (0: leave them as
// they are); Config.PartitionInterval, for a DB from FromPool. A no-op on
// SQLite.
func (db *DB) PartitionOnMigrate(interval time.Duration) {
	if interval > 0 && db.Backend == Postgres {
		db.partitionInterval, db.partitionOn = interval, true
	}
}

func newPostgresDB(pool, fg *pgxpool.Pool, schema string, log *slog.Logger) *DB {
	db := &DB{Backend: Postgres, schema: schema, log: log, pool: pool, fgPool: fg, base: pgQuerier{pool}, partitionInterval: DefaultPartitionInterval}
	db.d = pgDialect{db}
	return db
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

// FromPool wraps a PostgreSQL pool the caller opened (library mode); schema
// may be empty (the pool's search_path decides).
func FromPool(pool *pgxpool.Pool, schema string, log *slog.Logger) *DB {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return newPostgresDB(pool, nil, schema, log)
}

// --- pgx (PostgreSQL) ---

type pgConn interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

type pgQuerier struct{ c pgConn }

func (p pgQuerier) exec(ctx context.Context, q string, args ...any) (int64, error) {
	tag, err := p.c.Exec(ctx, q, args...)
	if err != nil {
		return 0, classify(err)
	}
	return tag.RowsAffected(), nil
}

func (p pgQuerier) query(ctx context.Context, q string, args ...any) (rows, error) {
	r, err := p.c.Query(ctx, q, args...)
	if err != nil {
		return nil, classify(err)
	}
	return pgRows{r}, nil
}

// pgRows classifies the error pgx reports only once the rows are read (a
// query on a connection that died is lazy about saying so).
type pgRows struct{ pgx.Rows }

func (r pgRows) Err() error { return classify(r.Rows.Err()) }

func (p pgQuerier) queryRow(ctx context.Context, q string, args ...any) row {
	return pgRow{p.c.QueryRow(ctx, q, args...)}
}

type pgRow struct{ r pgx.Row }

func (r pgRow) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return errNoRows
	}
	return classify(err)
}

// pgRelaxed runs each statement in its own implicit transaction whose
// commit does not wait for the WAL flush (synchronous_commit off for that
// transaction only), in one round trip: set_config and the statement go
// out as one pipelined batch. For writes a database crash may lose without
// losing anything that matters (see DB.Relaxed).
type pgRelaxed struct{ pool *pgxpool.Pool }

const relaxCommit = `SELECT set_config('synchronous_commit', 'off', true)`

func (p pgRelaxed) send(ctx context.Context, q string, args ...any) pgx.BatchResults {
	var b pgx.Batch
	b.Queue(relaxCommit)
	b.Queue(q, args...)
	return p.pool.SendBatch(ctx, &b)
}

func (p pgRelaxed) exec(ctx context.Context, q string, args ...any) (int64, error) {
	br := p.send(ctx, q, args...)
	var tag pgconn.CommandTag
	_, err := br.Exec() // set_config
	if err == nil {
		tag, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, classify(err)
	}
	return tag.RowsAffected(), nil
}

func (p pgRelaxed) query(ctx context.Context, q string, args ...any) (rows, error) {
	br := p.send(ctx, q, args...)
	if _, err := br.Exec(); err != nil {
		_ = br.Close() // the batch failed already: err is what it says
		return nil, classify(err)
	}
	r, err := br.Query()
	if err != nil {
		_ = br.Close() // the batch failed already: err is what it says
		return nil, classify(err)
	}
	return &pgBatchRows{Rows: r, br: br}, nil
}

func (p pgRelaxed) queryRow(ctx context.Context, q string, args ...any) row {
	r, err := p.query(ctx, q, args...)
	return pgFirstRow{r, err}
}

// pgBatchRows closes its batch with the rows (which returns the
// connection). The batch is an implicit transaction whose commit PostgreSQL
// reports after the rows, so Err after Close includes the batch's error.
type pgBatchRows struct {
	pgx.Rows
	br       pgx.BatchResults
	closed   bool
	closeErr error
}

func (r *pgBatchRows) Close() {
	r.Rows.Close()
	if !r.closed {
		r.closed = true
		r.closeErr = r.br.Close()
	}
}

func (r *pgBatchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return classify(err)
	}
	return classify(r.closeErr)
}

type pgFirstRow struct {
	r   rows
	err error
}

func (f pgFirstRow) Scan(dest ...any) error {
	if f.err != nil {
		return f.err
	}
	defer f.r.Close()
	if !f.r.Next() {
		if err := f.r.Err(); err != nil {
			return err
		}
		return errNoRows
	}
	if err := f.r.Scan(dest...); err != nil {
		return err
	}
	f.r.Close()
	return f.r.Err()
}

// pgDialect is PostgreSQL's side of the dialect seam (dialect.go).
type pgDialect struct{ db *DB }

func (d pgDialect) inTx(ctx context.Context, opts TxOptions, fn func(*Q) error) error {
	db := d.db
	switch {
	case opts.Foreground && db.fgPool != nil:
		return d.inPipeTx(ctx, db.fgPool, opts.Relaxed, fn)
	case opts.Relaxed:
		return d.inPipeTx(ctx, db.pool, true, fn)
	}
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

func (d pgDialect) relaxed() querier { return pgRelaxed{d.db.pool} }

func (d pgDialect) foreground() querier {
	if d.db.fgPool == nil {
		return d.db.base
	}
	return pgQuerier{d.db.fgPool}
}

func (d pgDialect) withTx(tx any) (*Q, error) {
	switch t := tx.(type) {
	case pgx.Tx:
		return &Q{db: d.db, querier: pgQuerier{t}, tx: t}, nil
	case *sql.Tx:
		return nil, errors.New("a *sql.Tx was given, but hookd runs on PostgreSQL: pass a pgx.Tx")
	}
	return nil, fmt.Errorf("unsupported transaction type %T", tx)
}

func (d pgDialect) close() error {
	if d.db.fgPool != nil {
		d.db.fgPool.Close()
	}
	d.db.pool.Close()
	return nil
}

func (pgDialect) keyShare() string           { return ` FOR KEY SHARE` }
func (pgDialect) skipLocked() string         { return ` FOR UPDATE SKIP LOCKED` }
func (pgDialect) eventKeys() bool            { return true }
func (pgDialect) pendingIndex() string       { return `` }
func (pgDialect) bulkParams() paramStyle     { return numbered }
func (pgDialect) jsonText(col string) string { return col }
func (pgDialect) roundTrips() bool           { return true }

// reclaim vacuums the pruned tables: their dead rows' space is reused by
// the next inserts instead of the tables growing, whether or not
// autovacuum is on (and on time: its default threshold is a fifth of a
// table, a day's churn of a month's retention). SKIP_LOCKED leaves a
// table autovacuum is already at. Plain VACUUM takes no lock that stops
// reads or writes; it reads the pages not known all-visible, which after
// a pass are the deleted ones and the recently written.
func (d pgDialect) reclaim(ctx context.Context) error {
	_, err := d.db.pool.Exec(ctx, `VACUUM (SKIP_LOCKED) hookd_deliveries, hookd_events, hookd_poll_messages`)
	return err
}

// lockEvent: SELECT … FOR UPDATE SKIP LOCKED.
func (pgDialect) lockEvent(ctx context.Context, q *Q, id string) (bool, error) {
	var got string
	err := q.queryRow(ctx, q.routed(lockEventSQL, id), id).Scan(&got)
	if NotFound(err) {
		return false, nil // locked (or pruned: the fanout finds it gone next time)
	}
	if err != nil {
		return false, fmt.Errorf("lock event: %w", err)
	}
	return true, nil
}

// notifyPollers: pg_notify on PollChannel, sent at q's commit.
func (pgDialect) notifyPollers(ctx context.Context, q *Q, ids string) error {
	if _, err := q.exec(ctx, `SELECT pg_notify('`+PollChannel+`', $1)`, ids); err != nil {
		return fmt.Errorf("notify pollers: %w", err)
	}
	return nil
}

// execRelaxed: one round trip, the statements out as one pipelined batch
// (an implicit transaction) that commits without waiting for its WAL
// flush.
func (d pgDialect) execRelaxed(ctx context.Context, stmts []stmt) error {
	var b pgx.Batch
	b.Queue(relaxCommit)
	for _, st := range stmts {
		b.Queue(st.sql, st.args...)
	}
	return d.db.pool.SendBatch(ctx, &b).Close()
}

func (d pgDialect) newRiver(cfg *river.Config) (JobClient, error) {
	db := d.db
	cfg.Schema = db.schema
	drv := riverpgxv5.New(db.pool)
	c, err := river.NewClient(drv, cfg)
	if err != nil {
		return nil, fmt.Errorf("river: %w", err)
	}
	db.notifyQueue = notifyInsert(drv.GetExecutor(), db.schema)
	return riverClient[pgx.Tx]{c}, nil
}

func (pgDialect) useRiver(client any) (JobClient, error) {
	switch c := client.(type) {
	case *river.Client[pgx.Tx]:
		return riverClient[pgx.Tx]{c}, nil
	case *river.Client[*sql.Tx]:
		return nil, errors.New("a River client on database/sql was given, but hookd runs on PostgreSQL: pass your *river.Client[pgx.Tx] (riverpgxv5)")
	}
	return nil, errUnsupportedRiver(client)
}

// migrate: in turns with other processes (an advisory lock).
func (d pgDialect) migrate(ctx context.Context) error { return d.db.migratePostgres(ctx) }

func (d pgDialect) riverMigrator(cfg *rivermigrate.Config) (riverMigrations, error) {
	return rivermigrate.New(riverpgxv5.New(d.db.pool), cfg)
}

func (pgDialect) tableExists(name string) string {
	return `SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = '` + name + `'`
}
