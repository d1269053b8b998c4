package delivery_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/profile"
)

// TestRetentionSteadyState turns a one-hour retention window over six
// times, each window 3,000 events and finished deliveries (plus a few
// pending ones) written in bulk: every pass deletes exactly the window
// that aged out and no pending delivery, and on SQLite the database
// stops growing after the first window (the pages retention frees are
// reused by the next window's rows). Both engines.
func TestRetentionSteadyState(t *testing.T) {
	for _, backend := range dbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			t.Parallel()
			b := openGroupBench(t, backend)
			ctx := context.Background()
			var now time.Time
			svc := delivery.New(delivery.Config{DB: b.db, Profiles: profile.Default(), Retention: time.Hour, Now: func() time.Time { return now }})
			var epID string
			if b.db.Pool() != nil {
				must(t, b.db.Pool().QueryRow(ctx, `SELECT id FROM hookd_endpoints WHERE owner_id = 'acme'`).Scan(&epID))
			} else {
				must(t, b.db.SQLDB().QueryRow(`SELECT id FROM hookd_endpoints WHERE owner_id = 'acme'`).Scan(&epID))
			}
			blob := `CAST('{}' AS BLOB)`
			if b.db.Pool() != nil {
				blob = `'\x7b7d'::bytea`
			}
			const perWindow, pendingPerWindow = 3000, 5
			base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			var firstPages int
			for w := range 6 {
				at := base.Add(time.Duration(w) * 2 * time.Hour).UnixMicro()
				dbtest.Exec(t, b.db, fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
					INSERT INTO hookd_events (id, owner_id, type, occurred_at, data, created_at)
					SELECT 'ev_w%d_' || i, 'acme', 'order.paid', %d, %s, %d FROM n`, perWindow+pendingPerWindow, w, at, blob, at))
				dbtest.Exec(t, b.db, fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
					INSERT INTO hookd_deliveries (id, owner_id, endpoint_id, event_id, event_type, state, attempts, last_status, created_at, updated_at, finished_at)
					SELECT 'dl_w%d_' || i, 'acme', '%s', 'ev_w%d_' || i, 'order.paid',
						CASE WHEN i > %d THEN 'pending' ELSE 'succeeded' END, 1, 200, %d, %d,
						CASE WHEN i > %d THEN NULL ELSE %d END FROM n`,
					perWindow+pendingPerWindow, w, epID, w, perWindow, at, at, perWindow, at))
				now = base.Add(time.Duration(w)*2*time.Hour + time.Hour + time.Minute)
				deliveries, events, err := svc.Prune(ctx)
				must(t, err)
				if deliveries != perWindow || events != perWindow+pendingPerWindow {
					t.Fatalf("window %d: pruned %d deliveries and %d events; want the window's %d finished deliveries and its %d events", w, deliveries, events, perWindow, perWindow+pendingPerWindow)
				}
				if n := dbtest.Count(t, b.db, `SELECT count(*) FROM hookd_deliveries WHERE state = 'pending'`); n != pendingPerWindow*(w+1) {
					t.Fatalf("window %d: %d pending deliveries left; want every one of the %d written", w, n, pendingPerWindow*(w+1))
				}
				if b.db.Pool() != nil {
					continue
				}
				pages := dbtest.Count(t, b.db, `PRAGMA page_count`)
				t.Logf("window %d: %d pages, %d of them free", w, pages, dbtest.Count(t, b.db, `PRAGMA freelist_count`))
				if w == 0 {
					firstPages = pages
				} else if pages > firstPages*11/10 {
					t.Fatalf("window %d: the database has %d pages, %d after the first window; retention's freed pages are not reused", w, pages, firstPages)
				}
			}
		})
	}
}
