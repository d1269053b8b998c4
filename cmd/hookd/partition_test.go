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

// TestPartitionIntervalFlag: `hookd migrate` partitions a PostgreSQL
// database's event and delivery tables by day unless told
// `--partition-interval 0`, which leaves them unpartitioned; an interval
// that is not a duration of at least an hour is refused with exit 2 and
// what to write instead, by migrate and by serve, before anything is
// opened.
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

	for _, c := range []struct {
		args  []string
		parts int
	}{
		{nil, 5}, // 4 days and a default
		{[]string{"--partition-interval", "0"}, 0},
	} {
		cfg := dbtest.Postgres(t)
		if code, stderr := runIn(append([]string{"migrate", "--db", cfg.URL, "--schema", cfg.Schema}, c.args...)...); code != 0 {
			t.Fatalf("migrate %v: exit %d, %s", c.args, code, stderr)
		}
		s, err := store.Open(context.Background(), store.Config{URL: cfg.URL, Schema: cfg.Schema, MaxConns: 2})
		if err != nil {
			t.Fatal(err)
		}
		parts, err := s.Partitions(context.Background())
		s.Close()
		if err != nil || len(parts) != c.parts {
			t.Errorf("after migrate %v: %d partitions (%v), want %d", c.args, len(parts), err, c.parts)
		}
	}
}
