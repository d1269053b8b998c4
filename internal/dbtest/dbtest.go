// Package dbtest gives tests a fresh database on each backend: a temp-file
// SQLite, and (when HOOKD_TEST_POSTGRES is set) a PostgreSQL schema of its
// own, dropped afterwards. Without the variable PostgreSQL tests skip
// locally; with CI=true they fail instead, so CI can never skip them.
package dbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookd/hookd/internal/store"
)

// Backend is one database a test can run on.
type Backend struct {
	Name string
	// Config opens a fresh database of this backend for t.
	Config func(t testing.TB) store.Config
}

// Backends returns SQLite and PostgreSQL: run tests as a table over it.
func Backends() []Backend {
	return []Backend{
		{Name: "sqlite", Config: SQLite},
		{Name: "postgres", Config: Postgres},
	}
}

// SQLite returns a config for a new SQLite file in t's temp dir.
func SQLite(t testing.TB) store.Config {
	return store.Config{URL: filepath.Join(t.TempDir(), "hookd.db")}
}

// PostgresURL returns HOOKD_TEST_POSTGRES, skipping t without it (failing
// it under CI=true).
func PostgresURL(t testing.TB) string {
	u := os.Getenv("HOOKD_TEST_POSTGRES")
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("HOOKD_TEST_POSTGRES is not set; CI must run the PostgreSQL half (.ci/run sets it)")
		}
		t.Skip("PostgreSQL tests skipped: set HOOKD_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable to run them")
	}
	return u
}

// Postgres returns a config for a new schema on HOOKD_TEST_POSTGRES, dropped
// when t ends.
func Postgres(t testing.TB) store.Config {
	u := PostgresURL(t)
	schema := NewSchema(t, u)
	// Time-partitioned tables, as hookd makes them by default
	// (store/partition.go); HOOKD_TEST_PARTITION_INTERVAL=0 runs the
	// PostgreSQL tests on unpartitioned ones, as `serve
	// --partition-interval 0` leaves them.
	cfg := store.Config{URL: u, Schema: schema, PartitionInterval: store.DefaultPartitionInterval}
	if v := os.Getenv("HOOKD_TEST_PARTITION_INTERVAL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("HOOKD_TEST_PARTITION_INTERVAL %q: %v", v, err)
		}
		cfg.PartitionInterval = d
	}
	return cfg
}

// NewSchema creates a uniquely named schema and drops it after t.
func NewSchema(t testing.TB, url string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "t_" + hex.EncodeToString(b)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect postgres: %v", err)
	}
	defer conn.Close(ctx) //nolint:errcheck // a DDL-only session; the schema is made or the test has failed
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), url)
		if err != nil {
			return
		}
		defer c.Close(context.Background()) //nolint:errcheck // a DDL-only session at cleanup
		_, _ = c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
	})
	return schema
}

// Open opens and migrates a store of cfg, closed when t ends.
func Open(t testing.TB, cfg store.Config) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("open %s: %v", cfg.URL, err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Logf("close %s: %v", cfg.URL, err)
		}
	})
	if err := db.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return db
}

// Count runs a SELECT count(*) … directly on the engine (not through the
// store's queries), so tests check what is really in the tables.
func Count(t testing.TB, db *store.DB, query string, args ...any) int {
	t.Helper()
	var n int
	var err error
	if p := db.Pool(); p != nil {
		err = p.QueryRow(context.Background(), query, args...).Scan(&n)
	} else {
		err = db.SQLDB().QueryRow(query, args...).Scan(&n)
	}
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// Exec runs one statement directly on the engine (e.g. to break a table
// and see how hookd fails).
func Exec(t testing.TB, db *store.DB, query string) {
	t.Helper()
	var err error
	if p := db.Pool(); p != nil {
		_, err = p.Exec(context.Background(), query)
	} else {
		_, err = db.SQLDB().Exec(query)
	}
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}
