package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/store"
)

// sqlitePages reads the file's page count and free-list length.
func sqlitePages(t *testing.T, db *sql.DB) (pages, free int64) {
	t.Helper()
	must(t, db.QueryRowContext(context.Background(), `SELECT page_count, freelist_count FROM pragma_page_count(), pragma_freelist_count()`).Scan(&pages, &free))
	return pages, free
}

// fillDeliveries writes n finished deliveries of ep, finished at 1 µs.
func fillDeliveries(s *bundle, ep string, prefix string, n int) {
	for b := 0; b < n; b += 500 {
		var sb strings.Builder
		sb.WriteString(`INSERT INTO hookd_deliveries (id, owner_id, endpoint_id, event_id, event_type, state, last_error, created_at, updated_at, finished_at) VALUES `)
		for i := b; i < min(n, b+500); i++ {
			if i > b {
				sb.WriteString(", ")
			}
			fmt.Fprintf(&sb, "('dlv_%s_%06d', 'acme', '%s', 'evt_%s_%06d', 'order.paid', 'delivered', '%s', 1, 1, 1)", prefix, i, ep, prefix, i, strings.Repeat("x", 200))
		}
		s.exec(sb.String())
	}
}

// prunedFile opens the SQLite file of cfg, checks its auto_vacuum is
// wantMode, writes n deliveries and deletes them all, in batches; it
// returns the file's page count before the delete.
func prunedFile(t *testing.T, cfg store.Config, wantMode, n int) (*bundle, *endpoint.Endpoint, int64) {
	s := newBundle(t, dbtest.Open(t, cfg))
	var mode int
	must(t, s.db.SQLDB().QueryRow(`PRAGMA auto_vacuum`).Scan(&mode))
	if mode != wantMode {
		t.Fatalf("auto_vacuum = %d, want %d (0 NONE for a file made before, 2 INCREMENTAL for a new one)", mode, wantMode)
	}
	s.owner("acme")
	ep := s.endpoint("acme", 1)
	fillDeliveries(s, ep.ID, "a", n)
	before, _ := sqlitePages(t, s.db.SQLDB())
	for {
		n, err := s.q.PruneDeliveries(s.ctx, 2, store.IDRange{}, 1000)
		must(t, err)
		if n < 1000 {
			return s, ep, before
		}
	}
}

// TestSQLiteReclaimShrinks: a new file has auto_vacuum INCREMENTAL, and
// after a prune of most of its rows Reclaim gives the free pages back to
// the filesystem down to a quarter of the file (the next inserts' share):
// the page count drops, and the free list with it.
func TestSQLiteReclaimShrinks(t *testing.T) {
	t.Parallel()
	s, ep, before := prunedFile(t, dbtest.SQLite(t), 2, 20000)
	sqlDB := s.db.SQLDB()
	pruned, freeAfterPrune := sqlitePages(t, sqlDB)
	if freeAfterPrune < before/2 {
		t.Fatalf("after deleting every delivery %d of %d pages are free; the test needs most of the file free", freeAfterPrune, pruned)
	}
	must(t, s.db.Reclaim(s.ctx))
	after, free := sqlitePages(t, sqlDB)
	if after >= pruned/2 || free > after/4 {
		t.Fatalf("Reclaim: %d pages with %d free before, %d with %d free after; want the file halved at least and at most a quarter of it free", pruned, freeAfterPrune, after, free)
	}
	// The rows that come next reuse the file: a second Reclaim finds
	// nothing to give back.
	fillDeliveries(s, ep.ID, "b", 1000)
	must(t, s.db.Reclaim(s.ctx))
	if again, _ := sqlitePages(t, sqlDB); again < after {
		t.Fatalf("with the free pages under a quarter of the file, Reclaim shrank it %d → %d pages", after, again)
	}
}

// TestSQLiteReclaimOldFile: a file made before hookd set auto_vacuum
// (NONE) opens, migrates and prunes as before; Reclaim leaves its free
// list to the next inserts; a one-time VACUUM converts it.
func TestSQLiteReclaimOldFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=auto_vacuum(NONE)")
	must(t, err)
	_, err = raw.ExecContext(ctx, `CREATE TABLE made_before (x INTEGER)`)
	must(t, err)
	must(t, raw.Close())

	s, _, _ := prunedFile(t, store.Config{URL: path}, 0, 5000)
	sqlDB := s.db.SQLDB()
	var mode int
	pages, free := sqlitePages(t, sqlDB)
	must(t, s.db.Reclaim(s.ctx))
	if p, f := sqlitePages(t, sqlDB); p != pages || f != free {
		t.Fatalf("Reclaim on an auto_vacuum=NONE file changed it: %d/%d pages/free → %d/%d", pages, free, p, f)
	}
	_, err = sqlDB.ExecContext(ctx, `VACUUM`) // the connection asks for INCREMENTAL: VACUUM rebuilds the file so
	must(t, err)
	must(t, sqlDB.QueryRow(`PRAGMA auto_vacuum`).Scan(&mode))
	if p, f := sqlitePages(t, sqlDB); mode != 2 || p >= pages || f != 0 {
		t.Fatalf("after VACUUM: auto_vacuum %d, %d pages (%d free); want 2, fewer than %d, none free", mode, p, f, pages)
	}
}
