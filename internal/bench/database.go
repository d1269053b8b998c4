package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookd/hookd/internal/store"
)

// database is a fresh database for one run, removed by drop.
type database struct {
	engine string // "sqlite" or "postgres"
	url    string // what hookd opens: the SQLite file or the postgres URL
	schema string // PostgreSQL only
	// appName is the application_name of hookd's PostgreSQL connections
	// (set in url), by which the run's backends are found.
	appName string
	drop    func()
}

// freshDatabase makes an empty database: a temp-dir SQLite file, or a new
// schema on the PostgreSQL server of dbURL.
func freshDatabase(ctx context.Context, dbURL string) (*database, error) {
	if !isPostgres(dbURL) {
		dir, err := os.MkdirTemp("", "hookd-bench-")
		if err != nil {
			return nil, err
		}
		return &database{engine: "sqlite", url: filepath.Join(dir, "hookd.db"), drop: func() { _ = os.RemoveAll(dir) }}, nil
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "bench_" + hex.EncodeToString(b)
	if err := pgExec(ctx, dbURL, "CREATE SCHEMA "+schema); err != nil {
		return nil, fmt.Errorf("create schema %s: %w", schema, err)
	}
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = pgExec(ctx, dbURL, "DROP SCHEMA "+schema+" CASCADE")
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		drop()
		return nil, fmt.Errorf("database URL: %w", err)
	}
	q := u.Query()
	q.Set("application_name", "hookd_"+schema)
	u.RawQuery = q.Encode()
	return &database{engine: "postgres", url: u.String(), schema: schema, appName: "hookd_" + schema, drop: drop}, nil
}

// pgExec runs one statement on its own connection. The URL's pool_*
// parameters are pgxpool's (hookd reads them): the server would refuse them.
func pgExec(ctx context.Context, dbURL, sql string) error {
	conn, err := pgx.Connect(ctx, pgURL(dbURL))
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, sql)
	return errors.Join(err, conn.Close(context.WithoutCancel(ctx)))
}

// pgURL is dbURL without its pool_* parameters, which are pgxpool's (hookd
// reads them) and which the server would refuse, and without the run's
// application_name, so the bench's own connections are not counted as
// hookd's.
func pgURL(dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		return dbURL
	}
	q := u.Query()
	for k := range q {
		if strings.HasPrefix(k, "pool_") || k == "application_name" {
			q.Del(k)
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// countPartitions is how many partitions hookd's delivery table has in db
// (0: unpartitioned).
func countPartitions(ctx context.Context, db *database) (int, error) {
	st, err := store.Open(ctx, store.Config{URL: db.url, Schema: db.schema, MaxConns: 2})
	if err != nil {
		return 0, err
	}
	parts, err := st.Partitions(ctx)
	return len(parts), errors.Join(err, st.Close())
}

// makePartitions creates the time partitions of the days days before now
// in db, which hookd has migrated.
func makePartitions(ctx context.Context, db *database, days int) error {
	st, err := store.Open(ctx, store.Config{URL: db.url, Schema: db.schema, MaxConns: 2})
	if err != nil {
		return err
	}
	now := time.Now()
	return errors.Join(st.EnsurePartitionsFor(ctx, now.AddDate(0, 0, -days), now), st.Close())
}
