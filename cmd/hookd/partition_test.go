package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/store"
)

// TestPartitionIntervalFlag: `hookd migrate --partition-interval 24h`
// partitions a PostgreSQL database's event and delivery tables, and an
// interval that is not a duration of at least an hour is refused with
// exit 2 and what to write instead, by migrate and by serve, before
// anything is opened.
func TestPartitionIntervalFlag(t *testing.T) {
	t.Parallel()
	runIn := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
		return code, stderr.String()
	}
	db := filepath.Join(t.TempDir(), "hookd.db")
	for _, cmd := range []string{"migrate", "serve"} {
		for _, bad := range []string{"30m", "daily", "-24h"} {
			code, stderr := runIn(cmd, "--db", db, "--partition-interval", bad)
			if code != 2 || !strings.Contains(stderr, "--partition-interval") || !strings.Contains(stderr, "at least 1h") {
				t.Errorf("hookd %s --partition-interval %s: exit %d, stderr %q; want 2 and what to write", cmd, bad, code, stderr)
			}
		}
	}

	cfg := dbtest.Postgres(t)
	if code, stderr := runIn("migrate", "--db", cfg.URL, "--schema", cfg.Schema, "--partition-interval", "24h"); code != 0 {
		t.Fatalf("migrate --partition-interval 24h: exit %d, %s", code, stderr)
	}
	s, err := store.Open(context.Background(), store.Config{URL: cfg.URL, Schema: cfg.Schema, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	parts, err := s.Partitions(context.Background())
	if err != nil || len(parts) != 5 {
		t.Fatalf("after migrate --partition-interval 24h: %d partitions (%v), want 4 days and a default", len(parts), err)
	}
}
