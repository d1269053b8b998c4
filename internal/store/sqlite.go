package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"modernc.org/sqlite" // the embedded engine
)

// The SQLite part of the store: how hookd opens an SQLite file (one
// connection, WAL, immediate transactions, a statement cache:
// sqlite_driver.go), keeps its WAL short (sqlite_checkpoint.go), holds the
// lock a restore waits for (sqlite_lock.go), waits out a busy file
// (pingSQLite), and what its dialect says where the SQL or the
// transactions differ from PostgreSQL's (sqliteDialect).

func newSQLiteDB(sqlDB *sql.DB, path string, log *slog.Logger) *DB {
	db := &DB{Backend: SQLite, Path: path, log: log, sqlDB: sqlDB, base: sqlQuerier{c: sqlDB}}
	db.d = sqliteDialect{db}
	return db
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
// cascades, a per-connection statement cache (CachingSQLiteDriver), a
// 16 MiB page cache (sqliteCacheKiB), and auto_vacuum = INCREMENTAL, so
// that retention can give a large prune's free pages back to the
// filesystem (sqlite_reclaim.go). SQLite takes auto_vacuum only before
// the file's first table, so it is the first pragma; on an older file,
// made with NONE, it changes nothing until a VACUUM rebuilds the file
// (docs/design.md, "Retention").
func OpenSQLite(ctx context.Context, path string) (*sql.DB, error) {
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?_pragma=auto_vacuum(INCREMENTAL)&_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)&_pragma=cache_size(-" + strconv.Itoa(sqliteCacheKiB) + ")&_txlock=immediate"
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

// --- database/sql (SQLite) ---

type sqlConn interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// sqlQuerier runs SQL on SQLite. Statements are compiled once per text by
// the connection itself (CachingSQLiteDriver), inside transactions too.
type sqlQuerier struct{ c sqlConn }

func (s sqlQuerier) exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := s.c.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (s sqlQuerier) query(ctx context.Context, q string, args ...any) (rows, error) {
	r, err := s.c.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{r}, nil
}

func (s sqlQuerier) queryRow(ctx context.Context, q string, args ...any) row {
	return sqlRow{s.c.QueryRowContext(ctx, q, args...)}
}

type sqlRows struct{ *sql.Rows }

// Close drops *sql.Rows.Close's error: it is the iteration's, which Err
// reports too (database/sql keeps it for Err after Close).
func (r sqlRows) Close() { _ = r.Rows.Close() }

type sqlRow struct{ r *sql.Row }

func (r sqlRow) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return errNoRows
	}
	return err
}

// sqliteDialect is SQLite's side of the dialect seam (dialect.go). One
// connection serves the database (River's SQLite driver requires it), so
// one writer runs at a time: no row locks to take or skip, and one process
// serves the file, so there is nobody to notify.
type sqliteDialect struct{ db *DB }

// inTx: one immediate transaction on the one connection, whatever opts
// say: commits already skip the per-commit fsync (WAL, synchronous=NORMAL),
// and there are no other connections for the API to own.
func (d sqliteDialect) inTx(ctx context.Context, _ TxOptions, fn func(*Q) error) error {
	db := d.db
	tx, err := db.sqlDB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	q := &Q{db: db, querier: sqlQuerier{c: tx}, tx: tx}
	return db.runTx(ctx, q, fn, func(context.Context) error { return tx.Commit() }, func(context.Context) error { return tx.Rollback() })
}

func (d sqliteDialect) relaxed() querier    { return d.db.base }
func (d sqliteDialect) foreground() querier { return d.db.base }

func (d sqliteDialect) withTx(tx any) (*Q, error) {
	switch t := tx.(type) {
	case *sql.Tx:
		return &Q{db: d.db, querier: sqlQuerier{c: t}, tx: t}, nil
	case pgx.Tx:
		return nil, errors.New("a pgx.Tx was given, but hookd runs on SQLite: pass a *sql.Tx")
	}
	return nil, fmt.Errorf("unsupported transaction type %T", tx)
}

func (d sqliteDialect) close() error {
	db := d.db
	if db.ckpt != nil {
		if err := db.ckpt.close(); err != nil {
			db.log.Warn("sqlite: close the checkpointer's connection", "error", err)
		}
	}
	return errors.Join(db.sqlDB.Close(), db.lock.Release())
}

func (sqliteDialect) keyShare() string       { return `` }
func (sqliteDialect) skipLocked() string     { return `` }
func (sqliteDialect) eventKeys() bool        { return false }
func (sqliteDialect) pendingIndex() string   { return ` INDEXED BY hookd_deliveries_pending` }
func (sqliteDialect) bulkParams() paramStyle { return anonymous }

// jsonText: River's SQLite schema stores JSON as JSONB; json() reads it
// back as text.
func (sqliteDialect) jsonText(col string) string { return `json(` + col + `)` }

// roundTrips: a query is a call into the embedded engine.
func (sqliteDialect) roundTrips() bool { return false }

// reclaim gives back to the filesystem the free pages beyond a quarter of
// the file, in steps that hold the writer about as long as a prune batch
// (sqlite_reclaim.go); the free pages it keeps are the next inserts'
// (TestRetentionSteadyState).
func (d sqliteDialect) reclaim(ctx context.Context) error {
	return newSQLiteReclaimer(d.db.sqlDB, d.db.log).run(ctx)
}

// lockEvent: the one writer always has it.
func (sqliteDialect) lockEvent(context.Context, *Q, string) (bool, error) { return true, nil }

// notifyPollers: a fanout wakes its own process's polls (one process).
func (sqliteDialect) notifyPollers(context.Context, *Q, string) error { return nil }

// listenPoll returns at once (notifyPollers).
func (sqliteDialect) listenPoll(context.Context, func([]string), func()) {}

// execRelaxed: one transaction.
func (d sqliteDialect) execRelaxed(ctx context.Context, stmts []stmt) error {
	return d.db.InTx(ctx, TxOptions{Relaxed: true}, func(q *Q) error {
		for _, st := range stmts {
			if _, err := q.exec(ctx, st.sql, st.args...); err != nil {
				return err
			}
		}
		return nil
	})
}

func (d sqliteDialect) newRiver(cfg *river.Config) (JobClient, error) {
	drv := riversqlite.New(d.db.sqlDB)
	c, err := river.NewClient(drv, cfg)
	if err != nil {
		return nil, fmt.Errorf("river: %w", err)
	}
	d.db.notifyTx = func(ctx context.Context, tx *sql.Tx, queues []string) error {
		return insertNotification(ctx, drv.UnwrapExecutor(tx), "", queues)
	}
	return riverClient[*sql.Tx]{c}, nil
}

func (sqliteDialect) useRiver(client any) (JobClient, error) {
	switch c := client.(type) {
	case *river.Client[*sql.Tx]:
		return riverClient[*sql.Tx]{c}, nil
	case *river.Client[pgx.Tx]:
		return nil, errors.New("a River client on pgx was given, but hookd runs on SQLite: pass your *river.Client[*sql.Tx] (riversqlite)")
	}
	return nil, errUnsupportedRiver(client)
}

// migrate: in one immediate transaction, which serialises processes.
func (d sqliteDialect) migrate(ctx context.Context) error { return d.db.migrateSQLite(ctx) }

func (d sqliteDialect) riverMigrator(cfg *rivermigrate.Config) (riverMigrations, error) {
	return rivermigrate.New(riversqlite.New(d.db.sqlDB), cfg)
}

func (sqliteDialect) tableExists(name string) string {
	return `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '` + name + `'`
}
