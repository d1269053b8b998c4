package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/store"
)

// TestMigrateStatusDryRun runs the commands as an operator would, on both
// engines: `hookd migrate status` of a new database lists hookd's and
// River's migrations as pending; `hookd migrate up --dry-run` prints
// their SQL and applies none of it (status still lists every one
// pending, and a new SQLite file is not even created); after `hookd
// migrate` status is up to date and --dry-run has nothing to print.
func TestMigrateStatusDryRun(t *testing.T) {
	// Not parallel: t.Setenv (run reads HOOKD_* from the process environment).
	t.Setenv("HOOKD_DATABASE", "")
	t.Setenv("HOOKD_LOG_LEVEL", "warn")
	for _, e := range dbtest.Backends() {
		t.Run(e.Name, func(t *testing.T) {
			var cfg store.Config
			if e.Name == "sqlite" {
				cfg.URL = filepath.Join(t.TempDir(), "hookd.db")
			} else {
				cfg = e.Config(t)
			}
			hookd := func(args ...string) string {
				t.Helper()
				args = append(args, "--db", cfg.URL)
				if cfg.Schema != "" {
					args = append(args, "--schema", cfg.Schema)
				}
				var stdout, stderr strings.Builder
				if code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr); code != 0 {
					t.Fatalf("hookd %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
				}
				return stdout.String()
			}
			pending := func(out string) (hookdN, riverN int) {
				for _, line := range strings.Split(out, "\n") {
					f := strings.Fields(line)
					if len(f) >= 4 && f[len(f)-1] == "pending" {
						switch f[0] {
						case store.LineHookd:
							hookdN++
						case store.LineRiver:
							riverN++
						}
					}
				}
				return hookdN, riverN
			}
			versions, err := store.HookdMigrationVersions()
			if err != nil {
				t.Fatal(err)
			}

			status := hookd("migrate", "status")
			if h, r := pending(status); h != len(versions) || r == 0 {
				t.Fatalf("status of a new database: %d of hookd's %d and %d of River's pending:\n%s", h, len(versions), r, status)
			}
			sql := hookd("migrate", "up", "--dry-run")
			if !strings.Contains(sql, "CREATE TABLE") || !strings.Contains(sql, "hookd_deliveries") || !strings.Contains(sql, "nothing was applied (--dry-run)") {
				t.Errorf("--dry-run printed no migration SQL:\n%.2000s", sql)
			}
			if e.Name == "sqlite" {
				if _, err := os.Stat(cfg.URL); err == nil {
					t.Error("--dry-run created the SQLite file")
				}
			}
			if again := hookd("migrate", "status"); again != status {
				t.Errorf("--dry-run changed the status:\n%s\nafter:\n%s", status, again)
			}

			if out := hookd("migrate"); !strings.Contains(out, "migrations applied") {
				t.Errorf("hookd migrate: %q", out)
			}
			status = hookd("migrate", "status")
			if h, r := pending(status); h != 0 || r != 0 || !strings.Contains(status, "up to date") {
				t.Errorf("status after migrate: %d and %d pending:\n%s", h, r, status)
			}
			if sql := hookd("migrate", "up", "--dry-run"); !strings.Contains(sql, "nothing to apply") || strings.Contains(sql, "CREATE TABLE") {
				t.Errorf("--dry-run on an up-to-date database:\n%s", sql)
			}
		})
	}
}
