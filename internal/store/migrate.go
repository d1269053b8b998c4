package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrateLockID serialises `hookd migrate` (and serve's own migration) across
// processes on one PostgreSQL.
const migrateLockID = 0x686f6f6b64 // "hookd"

// Migrate applies River's and hookd's migrations. It is idempotent, and
// several processes may run it at once on one database: on PostgreSQL an
// advisory lock makes them take turns, on SQLite one IMMEDIATE transaction
// (the file's write lock) does; each applies only what is missing.
func (db *DB) Migrate(ctx context.Context) error { return db.d.migrate(ctx) }

// migratePostgres runs River's migrations, then hookd's, each in
// transactions of their own, under an advisory lock.
func (db *DB) migratePostgres(ctx context.Context) error {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(migrateLockID)); err != nil {
		return fmt.Errorf("migrate: lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(migrateLockID)) //nolint:errcheck // released with the session anyway
	m, err := db.riverMigrator()
	if err != nil {
		return fmt.Errorf("migrate river: %w", err)
	}
	res, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return fmt.Errorf("migrate river: %w", err)
	}
	applied, err := db.migrateHookd(ctx, func(ctx context.Context, fn func(*Q) error) error { return db.InTx(ctx, TxOptions{}, fn) })
	if err != nil {
		return err
	}
	db.logApplied(ctx, res, applied)
	if db.partitionOn {
		err = db.partitionTables(ctx, time.Now())
	} else {
		err = db.EnsurePartitions(ctx, time.Now()) // a no-op unless partitioned before
	}
	if err != nil {
		return err
	}
	parts, err := db.Partitions(ctx)
	db.partitioned = len(parts) > 0
	if err == nil && db.partitioned {
		err = db.readRoutes(ctx)
	}
	return err
}

// migrateSQLite runs River's and hookd's migrations in one transaction.
// Open's _txlock=immediate makes BEGIN take the file's write lock, so a
// second process migrating the same file waits (busy_timeout) and then finds
// everything applied. Without it both would read "nothing applied yet" and
// the slower one would fail on "table already exists".
func (db *DB) migrateSQLite(ctx context.Context) error {
	var (
		res     *rivermigrate.MigrateResult
		applied []int
	)
	err := db.InTx(ctx, TxOptions{}, func(q *Q) error {
		m, err := rivermigrate.New(riversqlite.New(db.sqlDB), &rivermigrate.Config{Logger: db.quietLog()})
		if err != nil {
			return fmt.Errorf("migrate river: %w", err)
		}
		// MigrateTx is deprecated (SA1019) because some PostgreSQL
		// migrations cannot share one transaction; on SQLite River's
		// migrations can, and the one transaction is what serialises
		// concurrent migrators.
		if res, err = m.MigrateTx(ctx, q.tx.(*sql.Tx), rivermigrate.DirectionUp, nil); err != nil { //nolint:staticcheck // SQLite only: see above

			return fmt.Errorf("migrate river: %w", err)
		}
		applied, err = db.migrateHookd(ctx, func(_ context.Context, fn func(*Q) error) error { return fn(q) })
		return err
	})
	if err != nil {
		return err
	}
	db.logApplied(ctx, res, applied)
	return nil
}

// quietLog is the logger River's migrator gets: its warnings and errors,
// not a line per applied migration (Migrate logs one line for all).
func (db *DB) quietLog() *slog.Logger {
	h := db.log.Handler()
	return slog.New(warnAndUp{h})
}

type warnAndUp struct{ slog.Handler }

func (h warnAndUp) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && h.Handler.Enabled(ctx, l)
}

func (h warnAndUp) WithAttrs(as []slog.Attr) slog.Handler { return warnAndUp{h.Handler.WithAttrs(as)} }
func (h warnAndUp) WithGroup(name string) slog.Handler    { return warnAndUp{h.Handler.WithGroup(name)} }

// logApplied logs, in one line, which migrations this run applied (none:
// nothing is logged).
func (db *DB) logApplied(ctx context.Context, river *rivermigrate.MigrateResult, hookd []int) {
	var rv []int
	if river != nil {
		for _, v := range river.Versions {
			rv = append(rv, v.Version)
		}
	}
	if len(rv) == 0 && len(hookd) == 0 {
		return
	}
	db.log.InfoContext(ctx, "applied migrations", "river", rv, "hookd", hookd)
}

// migrateHookd applies hookd's own migrations, each inside inTx, and
// returns the versions it applied.
func (db *DB) migrateHookd(ctx context.Context, inTx func(context.Context, func(*Q) error) error) ([]int, error) {
	var applied []int
	err := inTx(ctx, func(q *Q) error {
		_, err := q.exec(ctx, `CREATE TABLE IF NOT EXISTS hookd_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)`)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	files, err := hookdMigrations()
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		version, name, body := f.version, f.name, f.body
		did := false
		err = inTx(ctx, func(q *Q) error {
			var n int
			if err := q.queryRow(ctx, `SELECT count(*) FROM hookd_migrations WHERE version = $1`, version).Scan(&n); err != nil {
				return err
			}
			did = false // a retried transaction starts over
			if n > 0 {
				return nil
			}
			for _, stmt := range db.statementsOf(body) {
				if _, err := q.exec(ctx, stmt); err != nil {
					return fmt.Errorf("migration %03d_%s: %w", version, name, err)
				}
			}
			_, err := q.exec(ctx, `INSERT INTO hookd_migrations (version, applied_at) VALUES ($1, $2)`, version, ts(time.Now()))
			did = err == nil
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("migrate: %w", err)
		}
		if did {
			applied = append(applied, version)
		}
	}
	return applied, nil
}

// MigrationCount returns how many hookd migrations are recorded (for tests
// that check a migration ran exactly once).
func (db *DB) MigrationCount(ctx context.Context) (int, error) {
	var n int
	err := db.base.queryRow(ctx, `SELECT count(*) FROM hookd_migrations`).Scan(&n)
	return n, err
}

// MigrationsPending returns how many of this binary's hookd migrations the
// database has not applied (0: current; run `hookd migrate` otherwise).
func (db *DB) MigrationsPending(ctx context.Context) (int, error) {
	files, err := hookdMigrations()
	if err != nil {
		return 0, err
	}
	var applied int
	versions, err := collect(ctx, db.base, scanOne[int], `SELECT version FROM hookd_migrations`)
	if err != nil {
		return 0, fmt.Errorf("read applied migrations: %w", err)
	}
	have := setOf(versions)
	for _, f := range files {
		if have[f.version] {
			applied++
		}
	}
	return len(files) - applied, nil
}

// postgresOnly is how a migration for PostgreSQL alone begins: on SQLite
// it is recorded as applied and runs nothing (e.g. 011, which drops foreign
// keys SQLite cannot drop, and whose cost is PostgreSQL's).
const postgresOnly = "-- postgres only"

// statementsOf returns the statements of a migration to run on this
// database.
func (db *DB) statementsOf(body string) []string {
	if strings.HasPrefix(body, postgresOnly) && db.Backend != Postgres {
		return nil
	}
	return splitSQL(body)
}

// splitSQL splits a migration into statements on ';' at line ends, dropping
// comment lines.
func splitSQL(s string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(s, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "--") || t == "" {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(t, ";") {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	if strings.TrimSpace(cur.String()) != "" {
		out = append(out, cur.String())
	}
	return out
}
