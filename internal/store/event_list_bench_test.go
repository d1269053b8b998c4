package store_test

import (
	"context"
	"testing"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/store"
)

// BenchmarkListEvents: one events.list page (50, newest first, a type
// glob and a subject prefix, past a cursor) among 100,000 events of 10
// owners, on each engine.
func BenchmarkListEvents(b *testing.B) {
	for _, backend := range dbtest.Backends() {
		b.Run(backend.Name, func(b *testing.B) {
			ctx := context.Background()
			db, err := store.Open(ctx, backend.Config(b))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { db.Close() })
			if err := db.Migrate(ctx); err != nil {
				b.Fatal(err)
			}
			exec := func(sql string, args ...any) {
				b.Helper()
				var err error
				if db.Pool() != nil {
					_, err = db.Pool().Exec(ctx, sql, args...)
				} else {
					_, err = db.SQLDB().ExecContext(ctx, sql, args...)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			exec(`INSERT INTO hookd_owners (id, profile, created_at) VALUES ('own_0', 'standard', 0), ('own_1', 'standard', 0), ('own_2', 'standard', 0),
				('own_3', 'standard', 0), ('own_4', 'standard', 0), ('own_5', 'standard', 0), ('own_6', 'standard', 0), ('own_7', 'standard', 0),
				('own_8', 'standard', 0), ('own_9', 'standard', 0)`)
			for from := 0; from < 100000; from += 10000 {
				// A recursive CTE: both engines; 10,000 rows a statement.
				fill := `WITH RECURSIVE n(i) AS (SELECT CAST($1 AS INTEGER) UNION ALL SELECT i + 1 FROM n WHERE i < CAST($2 AS INTEGER))
					INSERT INTO hookd_events (id, owner_id, type, subject, occurred_at, data, created_at)
					SELECT 'evt_' || (100000000 + i), 'own_' || (i % 10), CASE WHEN i % 3 = 0 THEN 'invoice.paid' ELSE 'order.shipped' END,
						'invoice://cus_' || (i % 7) || '/' || i, 1700000000000000 + i, '{}', 1700000000000000 + i * 1000 FROM n`
				exec(fill, from, from+9999)
			}
			f := store.EventFilter{OwnerID: "own_3", Since: 0, Until: 1800000000000000, TypeGlob: "invoice.*", SubjectPrefix: "invoice://cus_2/",
				BeforeAt: 1700000000000000 + 90000*1000, BeforeID: "evt_100090000", Limit: 51}
			b.ResetTimer()
			for b.Loop() {
				evs, err := db.Q().ListEvents(ctx, f)
				if err != nil || len(evs) != 51 {
					b.Fatalf("%d events, %v", len(evs), err)
				}
			}
		})
	}
}
