package store_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/store"
)

// TestMigrations: Migrations lists River's and hookd's migrations of a
// fresh database as pending, with the SQL that applying them runs, and
// creates nothing; after Migrate every one is applied (hookd's with a
// time); a migration a newer hookd applied is listed as unknown, and one
// missing again is pending with its SQL. On both engines.
func TestMigrations(t *testing.T) {
	for _, e := range dbtest.Backends() {
		t.Run(e.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			cfg := e.Config(t)
			db, err := store.Open(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			s := newBundle(t, db)

			ms, err := db.Migrations(ctx)
			must(t, err)
			versions, err := store.HookdMigrationVersions()
			must(t, err)
			lines := map[string]int{}
			for _, m := range ms {
				lines[m.Line]++
				if m.Applied || m.Unknown {
					t.Errorf("fresh database: %s %d is %+v, want pending", m.Line, m.Version, m)
				}
				postgresOnly := m.Line == store.LineHookd && db.Backend == store.SQLite && isPostgresOnly(t, m)
				if len(m.SQL) == 0 != postgresOnly {
					t.Errorf("%s %d %s: %d statements", m.Line, m.Version, m.Name, len(m.SQL))
				}
			}
			if lines[store.LineHookd] != len(versions) || lines[store.LineRiver] == 0 {
				t.Errorf("fresh database lists %v migrations, want %d of hookd's and River's", lines, len(versions))
			}
			if first := ms[len(ms)-len(versions)]; first.Name != "init" || !strings.Contains(first.SQL[0], "CREATE TABLE") {
				t.Errorf("hookd's first migration is %q with %.60q…", first.Name, first.SQL)
			}
			if n := tableCount(s, "hookd_migrations", "river_migration", "river_job"); n != 0 {
				t.Errorf("listing the migrations created %d of their tables", n)
			}

			must(t, db.Migrate(ctx))
			ms, err = db.Migrations(ctx)
			must(t, err)
			for _, m := range ms {
				if !m.Applied || len(m.SQL) != 0 || (m.Line == store.LineHookd) == m.AppliedAt.IsZero() {
					t.Errorf("migrated: %s %d is %+v", m.Line, m.Version, m)
				}
			}

			s.exec(`INSERT INTO hookd_migrations (version, applied_at) VALUES (999, 0)`)
			s.exec(`DELETE FROM hookd_migrations WHERE version = 12`)
			ms, err = db.Migrations(ctx)
			must(t, err)
			last, missing := ms[len(ms)-1], store.Migration{}
			for _, m := range ms {
				if m.Line == store.LineHookd && m.Version == 12 {
					missing = m
				}
			}
			if last.Version != 999 || !last.Unknown || !last.Applied {
				t.Errorf("a newer hookd's migration is listed as %+v", last)
			}
			if missing.Version != 12 || missing.Applied || len(missing.SQL) == 0 {
				t.Errorf("a migration missing again is listed as %+v", missing)
			}
		})
	}
}

// tableCount counts which of tables exist in the database's schema.
func tableCount(s *bundle, tables ...string) int {
	q := `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('` + strings.Join(tables, "','") + `')`
	if s.db.Backend == store.Postgres {
		q = `SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name IN ('` + strings.Join(tables, "','") + `')`
	}
	return s.count(q)
}

// isPostgresOnly reads whether m's file says it runs on PostgreSQL only.
func isPostgresOnly(t *testing.T, m store.Migration) bool {
	t.Helper()
	body, err := os.ReadFile(fmt.Sprintf("migrations/%03d_%s.sql", m.Version, m.Name))
	must(t, err)
	return strings.HasPrefix(string(body), "-- postgres only")
}
