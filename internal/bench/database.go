package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// database is a fresh database for one run, removed by drop.
type database struct {
	engine string // "sqlite" or "postgres"
	url    string // what hookd opens: the SQLite file or the postgres URL
	schema string // PostgreSQL only
	drop   func()
}

// freshDatabase makes an empty database: a temp-dir SQLite file, or a new
// schema on the PostgreSQL server of dbURL.
func freshDatabase(ctx context.Context, dbURL string) (*database, error) {
	if !isPostgres(dbURL) {
		dir, err := os.MkdirTemp("", "hookd-bench-")
		if err != nil {
			return nil, err
		}
		return &database{engine: "sqlite", url: filepath.Join(dir, "hookd.db"), drop: func() { os.RemoveAll(dir) }}, nil
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
	return &database{engine: "postgres", url: dbURL, schema: schema, drop: drop}, nil
}

// pgExec runs one statement on its own connection. The URL's pool_*
// parameters are pgxpool's (hookd reads them): the server would refuse them.
func pgExec(ctx context.Context, dbURL, sql string) error {
	if u, err := url.Parse(dbURL); err == nil {
		q := u.Query()
		for k := range q {
			if strings.HasPrefix(k, "pool_") {
				q.Del(k)
			}
		}
		u.RawQuery = q.Encode()
		dbURL = u.String()
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, sql)
	return err
}
