package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/store"
)

// TestMigrateConcurrentProcesses: two `hookd migrate` processes started
// together on a fresh database both exit 0, and every hookd migration is
// recorded once beside River's tables. On PostgreSQL also with a schema that
// does not exist yet (both processes create it), as when several hookd
// processes are first started together.
func TestMigrateConcurrentProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	t.Parallel()
	bin := buildHookd(t)
	wantVersions := hookdMigrationFiles(t)
	cases := []struct {
		name   string
		config func(t *testing.T) store.Config
	}{
		{"sqlite", func(t *testing.T) store.Config { return dbtest.SQLite(t) }},
		{"postgres", func(t *testing.T) store.Config { return dbtest.Postgres(t) }},
		{"postgres-new-schema", func(t *testing.T) store.Config {
			cfg := dbtest.Postgres(t) // a unique name, dropped after the test…
			dropTestSchema(t, cfg)    // …that does not exist when hookd starts
			return cfg
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg := c.config(t)
			const n = 2
			cmds := make([]*exec.Cmd, n)
			outs := make([]*bytes.Buffer, n)
			for i := range cmds {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				t.Cleanup(cancel)
				cmds[i] = exec.CommandContext(ctx, bin, "migrate", "--db", cfg.URL, "--schema", cfg.Schema)
				cmds[i].Env = append(os.Environ(), "HOOKD_LOG_LEVEL=warn")
				outs[i] = &bytes.Buffer{}
				cmds[i].Stdout, cmds[i].Stderr = outs[i], outs[i]
			}
			began := time.Now()
			for i, cmd := range cmds {
				if err := cmd.Start(); err != nil {
					t.Fatalf("start migrate %d: %v", i, err)
				}
			}
			for i, cmd := range cmds {
				if err := cmd.Wait(); err != nil {
					t.Errorf("migrate %d: %v\n%s", i, err, outs[i])
				} else if !strings.Contains(outs[i].String(), "migrations applied") {
					t.Errorf("migrate %d said:\n%s", i, outs[i])
				}
			}
			t.Logf("%d concurrent migrations took %v", n, time.Since(began).Round(time.Millisecond))
			if t.Failed() {
				return
			}

			db, err := store.Open(context.Background(), cfg) // no Migrate: look at what the processes left
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			versions := queryInts(t, db, `SELECT version FROM hookd_migrations ORDER BY version`)
			if fmt.Sprint(versions) != fmt.Sprint(wantVersions) {
				t.Errorf("hookd_migrations has versions %v, want each of %v once", versions, wantVersions)
			}
			river := queryInts(t, db, `SELECT version FROM river_migration ORDER BY version`)
			if len(river) == 0 {
				t.Error("river_migration is empty")
			}
			for _, table := range []string{"river_job", "river_queue", "river_leader", "hookd_events", "hookd_deliveries"} {
				queryInts(t, db, `SELECT count(*) FROM `+table) // fails the test if the table is missing
			}
			if cfg.Schema != "" {
				n := queryInts(t, db, `SELECT count(*) FROM information_schema.tables WHERE table_schema = $1 AND table_name IN ('river_job', 'hookd_migrations')`, cfg.Schema)
				if n[0] != 2 {
					t.Errorf("river_job and hookd_migrations are not both in schema %s", cfg.Schema)
				}
			}
		})
	}
}

// hookdMigrationFiles returns the versions of internal/store/migrations.
func hookdMigrationFiles(t *testing.T) []int {
	t.Helper()
	files, err := filepath.Glob("../../internal/store/migrations/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("migration files: %v (%d found)", err, len(files))
	}
	var out []int
	for _, f := range files {
		var v int
		if _, err := fmt.Sscanf(filepath.Base(f), "%d_", &v); err != nil {
			t.Fatalf("migration %s: %v", f, err)
		}
		out = append(out, v)
	}
	return out
}

func queryInts(t *testing.T, db *store.DB, query string, args ...any) []int {
	t.Helper()
	var out []int
	scan := func(next func() bool, scan func(...any) error, errf func() error) {
		for next() {
			var v int
			if err := scan(&v); err != nil {
				t.Fatalf("%s: %v", query, err)
			}
			out = append(out, v)
		}
		if err := errf(); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	}
	if p := db.Pool(); p != nil {
		rows, err := p.Query(context.Background(), query, args...)
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		defer rows.Close()
		scan(rows.Next, rows.Scan, rows.Err)
		return out
	}
	rows, err := db.SQLDB().Query(query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	scan(rows.Next, rows.Scan, rows.Err)
	return out
}

func dropTestSchema(t *testing.T, cfg store.Config) {
	t.Helper()
	db, err := store.Open(context.Background(), store.Config{URL: cfg.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Pool().Exec(context.Background(), "DROP SCHEMA "+cfg.Schema+" CASCADE"); err != nil {
		t.Fatal(err)
	}
}
