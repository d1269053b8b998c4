package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/store"
)

// TestPostgresURLParams: an operator sizes the pool and names the
// connections in the URL (pool_max_conns, application_name), as pgx
// documents; an explicit Config.MaxConns wins; a pool too small to migrate
// is refused.
func TestPostgresURLParams(t *testing.T) {
	t.Parallel()
	base := dbtest.PostgresURL(t)
	schema := dbtest.NewSchema(t, base)
	with := func(params string) string {
		sep := "?"
		if strings.Contains(base, "?") {
			sep = "&"
		}
		return base + sep + params
	}
	ctx := context.Background()
	open := func(cfg store.Config) *store.DB {
		t.Helper()
		cfg.Schema = schema
		db, err := store.Open(ctx, cfg)
		must(t, err)
		t.Cleanup(func() { db.Close() })
		return db
	}

	db := open(store.Config{URL: base})
	if got, want := db.Pool().Config().MaxConns, store.DefaultMaxConns(); got != want || want < 4 {
		t.Errorf("default pool: %d connections, want %d (twice GOMAXPROCS, at least 4)", got, want)
	}
	db = open(store.Config{URL: with("pool_max_conns=3&application_name=hookd_" + schema)})
	if got := db.Pool().Config().MaxConns; got != 3 {
		t.Errorf("pool_max_conns=3: pool of %d", got)
	}
	var app, path string
	must(t, db.Pool().QueryRow(ctx, `SELECT current_setting('application_name'), current_setting('search_path')`).Scan(&app, &path))
	if app != "hookd_"+schema || path != schema {
		t.Errorf("application_name %q search_path %q; want hookd_%s and %s", app, path, schema, schema)
	}
	db = open(store.Config{URL: with("pool_max_conns=3"), MaxConns: 5})
	if got := db.Pool().Config().MaxConns; got != 5 {
		t.Errorf("Config.MaxConns 5 over pool_max_conns=3: pool of %d", got)
	}
	if db, err := store.Open(ctx, store.Config{URL: with("pool_max_conns=1"), Schema: schema}); err == nil {
		db.Close()
		t.Error("a pool of 1 connection was accepted (Migrate would deadlock)")
	}
}
