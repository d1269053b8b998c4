package store

import (
	"context"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/riverqueue/river/rivermigrate"
)

// The migration lines a database carries: River's tables and hookd's own.
const (
	LineRiver = "river"
	LineHookd = "hookd"
)

// Migration is one of River's or hookd's migrations and whether the
// database has it (`hookd migrate status`, `hookd migrate up --dry-run`).
type Migration struct {
	Line    string // LineRiver or LineHookd
	Version int
	Name    string
	Applied bool
	// AppliedAt is when hookd applied one of its own (River records no
	// time hookd reads back: zero).
	AppliedAt time.Time
	// Unknown: the database has it and this binary does not (a newer
	// hookd applied it).
	Unknown bool
	// SQL is what applying a pending migration runs here, statement by
	// statement (none for a PostgreSQL-only migration on SQLite).
	SQL []string
}

// hookdMigration is one file of migrations/.
type hookdMigration struct {
	version int
	name    string // the file name without its version and .sql, e.g. init
	body    string
}

// hookdMigrations returns this binary's migrations in order.
func hookdMigrations() ([]hookdMigration, error) {
	files, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	out := make([]hookdMigration, 0, len(files))
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(f, "migrations/"), ".sql")
		before, after, _ := strings.Cut(name, "_")
		version, err := strconv.Atoi(before)
		if err != nil {
			return nil, fmt.Errorf("migration %s: bad name", name)
		}
		body, err := migrationFS.ReadFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, hookdMigration{version: version, name: after, body: string(body)})
	}
	return out, nil
}

// HookdMigrationVersions returns the versions of this binary's own
// migrations, in order.
func HookdMigrationVersions() ([]int, error) {
	ms, err := hookdMigrations()
	if err != nil {
		return nil, err
	}
	vs := make([]int, len(ms))
	for i, m := range ms {
		vs[i] = m.version
	}
	return vs, nil
}

// riverMigrations is what hookd asks of River's migrator, whichever
// driver it runs on.
type riverMigrations interface {
	AllVersions() []rivermigrate.Migration
	ExistingVersions(ctx context.Context) ([]rivermigrate.Migration, error)
	Migrate(ctx context.Context, direction rivermigrate.Direction, opts *rivermigrate.MigrateOpts) (*rivermigrate.MigrateResult, error)
}

// riverMigrator returns River's migrator on this database.
func (db *DB) riverMigrator() (riverMigrations, error) {
	cfg := &rivermigrate.Config{Schema: db.schema, Logger: db.quietLog()}
	m, err := db.d.riverMigrator(cfg)
	if err != nil {
		return nil, fmt.Errorf("river migrator: %w", err)
	}
	return m, nil
}

// Migrations lists River's migrations, then hookd's, each applied or
// pending, with the SQL of the pending ones; and any the database has that
// this binary does not know. It changes nothing.
func (db *DB) Migrations(ctx context.Context) ([]Migration, error) {
	river, err := db.riverMigrations(ctx)
	if err != nil {
		return nil, err
	}
	hookd, err := db.hookdMigrationStates(ctx)
	if err != nil {
		return nil, err
	}
	return append(river, hookd...), nil
}

func (db *DB) riverMigrations(ctx context.Context) ([]Migration, error) {
	m, err := db.riverMigrator()
	if err != nil {
		return nil, err
	}
	existing, err := m.ExistingVersions(ctx)
	if err != nil {
		return nil, fmt.Errorf("read River's applied migrations: %w", err)
	}
	have := map[int]bool{}
	for _, v := range existing {
		have[v.Version] = true
	}
	// River's own dry run: the SQL as it would run here (its schema
	// filled in), nothing executed or recorded.
	dry, err := m.Migrate(ctx, rivermigrate.DirectionUp, &rivermigrate.MigrateOpts{DryRun: true})
	if err != nil {
		return nil, fmt.Errorf("river dry run: %w", err)
	}
	sqlOf := map[int]string{}
	for _, v := range dry.Versions {
		sqlOf[v.Version] = v.SQL
	}
	var out []Migration
	for _, v := range m.AllVersions() {
		mg := Migration{Line: LineRiver, Version: v.Version, Name: v.Name, Applied: have[v.Version]}
		if !mg.Applied {
			mg.SQL = []string{sqlOf[v.Version]}
		}
		out = append(out, mg)
	}
	return out, nil
}

func (db *DB) hookdMigrationStates(ctx context.Context) ([]Migration, error) {
	files, err := hookdMigrations()
	if err != nil {
		return nil, err
	}
	applied, err := db.appliedHookdMigrations(ctx)
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, f := range files {
		mg := Migration{Line: LineHookd, Version: f.version, Name: f.name}
		if at, ok := applied[f.version]; ok {
			mg.Applied, mg.AppliedAt = true, time.UnixMicro(at).UTC()
			delete(applied, f.version)
		} else {
			mg.SQL = db.statementsOf(f.body)
		}
		out = append(out, mg)
	}
	unknown := make([]int, 0, len(applied))
	for v := range applied {
		unknown = append(unknown, v)
	}
	sort.Ints(unknown)
	for _, v := range unknown {
		out = append(out, Migration{Line: LineHookd, Version: v, Applied: true, AppliedAt: time.UnixMicro(applied[v]).UTC(), Unknown: true})
	}
	return out, nil
}

// appliedHookdMigrations returns when each recorded hookd migration was
// applied (none on a database hookd never migrated).
func (db *DB) appliedHookdMigrations(ctx context.Context) (map[int]int64, error) {
	exists := db.d.tableExists(`hookd_migrations`)
	var n int
	if err := db.base.queryRow(ctx, exists).Scan(&n); err != nil {
		return nil, fmt.Errorf("read applied migrations: %w", err)
	}
	out := map[int]int64{}
	if n == 0 {
		return out, nil
	}
	type row2 struct {
		version int
		at      int64
	}
	rows, err := collect(ctx, db.base, func(r row) (row2, error) {
		var x row2
		return x, r.Scan(&x.version, &x.at)
	}, `SELECT version, applied_at FROM hookd_migrations`)
	if err != nil {
		return nil, fmt.Errorf("read applied migrations: %w", err)
	}
	for _, r := range rows {
		out[r.version] = r.at
	}
	return out, nil
}
