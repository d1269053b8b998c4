package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/hookd/hookd/internal/store"
)

// TestOpenSQLiteSettings: the connection OpenSQLite gives hookd and River
// has what its doc promises, read back from SQLite itself: WAL,
// synchronous NORMAL, foreign keys on and a 16 MiB page cache (SQLite's
// default, 2 MiB, made the drains read index pages back from the file
// once the delivery log outgrew it), and auto_vacuum INCREMENTAL, which
// retention's Reclaim needs to give free pages back (sqlite_reclaim.go).
func TestOpenSQLiteSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "hookd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	for _, c := range []struct {
		pragma string
		want   string
	}{
		{"journal_mode", "wal"},
		{"synchronous", "1"}, // NORMAL
		{"foreign_keys", "1"},
		{"cache_size", "-16384"}, // KiB
		{"busy_timeout", "10000"},
		{"auto_vacuum", "2"}, // INCREMENTAL: set before the first table, or never
	} {
		var got string
		if err := db.QueryRowContext(ctx, "PRAGMA "+c.pragma).Scan(&got); err != nil {
			t.Fatalf("PRAGMA %s: %v", c.pragma, err)
		}
		if got != c.want {
			t.Errorf("PRAGMA %s = %s, want %s", c.pragma, got, c.want)
		}
	}
}
