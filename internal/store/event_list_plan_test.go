package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/store"
)

// eventListArgs are ListEventsSQL's arguments: one owner, a window, a
// cursor, a type pattern and a subject prefix.
var eventListArgs = []any{"own_3", int64(1700000000000), int64(1700000090000), int64(1700000080000), "evt_z", "invoice.%", 8, "invoice:", 50}

// TestEventListPlans: events.list reads one owner's events, in the
// window and past the cursor, through hookd_events_owner_created on both
// engines (migration 018), not a scan of every owner's events.
func TestEventListPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		db, err := store.Open(ctx, dbtest.SQLite(t))
		must(t, err)
		t.Cleanup(func() { db.Close() })
		must(t, db.Migrate(ctx))
		got := strings.Join(sqlitePlan(t, db, store.ListEventsSQL, eventListArgs...), "\n")
		if !strings.Contains(got, "USING INDEX hookd_events_owner_created (owner_id=? AND created_at>? AND created_at<?)") || strings.Contains(got, "TEMP B-TREE") {
			t.Errorf("events.list's plan does not search hookd_events_owner_created by owner and window, in its order:\n%s", got)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		db, err := store.Open(ctx, unpartitioned(t))
		must(t, err)
		t.Cleanup(func() { db.Close() })
		must(t, db.Migrate(ctx))
		// 20,000 events of 10 owners, analyzed: the planner's choice
		// with statistics.
		_, err = db.Pool().Exec(ctx, `INSERT INTO hookd_events (id, owner_id, type, subject, occurred_at, data, created_at)
			SELECT 'evt_' || lpad(i::text, 8, '0'), 'own_' || (i % 10), 'invoice.paid', 'invoice://' || i, 1700000000000 + i, '\x7b7d', 1700000000000 + i * 10
			FROM generate_series(1, 20000) i`)
		must(t, err)
		_, err = db.Pool().Exec(ctx, `ANALYZE hookd_events`)
		must(t, err)
		rows, err := db.Pool().Query(ctx, `EXPLAIN `+store.ListEventsSQL, eventListArgs...)
		must(t, err)
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		must(t, err)
		got := strings.Join(lines, "\n")
		if !strings.Contains(got, "hookd_events_owner_created") || !strings.Contains(got, "Index Cond: ((owner_id = 'own_3'::text) AND (created_at >= ") || strings.Contains(got, "Seq Scan") {
			t.Errorf("events.list's plan does not read hookd_events_owner_created by owner and window:\n%s", got)
		}
	})
}
