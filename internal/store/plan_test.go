package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/store"
)

// TestDeliveryLookupPlans: the reads of a delivery by (endpoint, event) use
// the unique (endpoint_id, event_id) for both columns even in the plan a
// connection caches while the table has never been analyzed (a new
// database's first minute, every benchmark's whole run). Before migration
// 013 that generic plan took hookd_deliveries_endpoint_recent, matched
// only endpoint_id and filtered all of the endpoint's deliveries by event.
func TestDeliveryLookupPlans(t *testing.T) {
	t.Parallel()
	cfg := dbtest.Postgres(t)
	ctx := context.Background()
	db, err := store.Open(ctx, cfg)
	must(t, err)
	t.Cleanup(func() { db.Close() })
	must(t, db.Migrate(ctx))
	pc, err := db.Pool().Acquire(ctx)
	must(t, err)
	conn := pc.Hijack() // its plan cache setting stays out of the pool
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	// A generic plan at once, as a connection settles on after five runs.
	must(t, execSimple(ctx, conn, `SET plan_cache_mode = force_generic_plan`))

	for i, c := range deliveryLookups() {
		literals := make([]string, len(c.values))
		for j, v := range c.values {
			literals[j] = "'" + v.(string) + "'"
		}
		name := "lookup" + string(rune('a'+i))
		must(t, execSimple(ctx, conn, `PREPARE `+name+` AS `+c.sql))
		rows, err := conn.Query(ctx, `EXPLAIN EXECUTE `+name+`(`+strings.Join(literals, ", ")+`)`, pgx.QueryExecModeSimpleProtocol)
		must(t, err)
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		must(t, err)
		plan := strings.Join(lines, "\n")
		scan := ""
		for _, l := range lines {
			if strings.Contains(l, "on hookd_deliveries") {
				scan = l
			}
		}
		if !strings.Contains(scan, "hookd_deliveries_endpoint_id_event_id_key") || strings.Contains(plan, "Filter: (event_id") {
			t.Errorf("%s reads hookd_deliveries through %q, want the unique (endpoint_id, event_id) for both columns; plan:\n%s", c.name, strings.TrimSpace(scan), plan)
		}
	}
}

// TestDeliveryLookupPlansSQLite: SQLite, which has no statistics either,
// searches the unique (endpoint_id, event_id) with both columns.
func TestDeliveryLookupPlansSQLite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := store.Open(ctx, dbtest.SQLite(t))
	must(t, err)
	t.Cleanup(func() { db.Close() })
	must(t, db.Migrate(ctx))
	for _, c := range deliveryLookups() {
		rows, err := db.SQLDB().QueryContext(ctx, `EXPLAIN QUERY PLAN `+c.sql, c.values...)
		must(t, err)
		var plan []string
		search := ""
		for rows.Next() {
			var id, parent, unused int
			var detail string
			must(t, rows.Scan(&id, &parent, &unused, &detail))
			plan = append(plan, detail)
			if strings.Contains(detail, "hookd_deliveries") || strings.HasPrefix(detail, "SEARCH d ") {
				search = detail
			}
		}
		must(t, rows.Err())
		if !strings.Contains(search, "(endpoint_id=? AND event_id=?)") {
			t.Errorf("%s reads hookd_deliveries by %q, want both columns of the unique index; plan: %q", c.name, search, plan)
		}
	}
}

func execSimple(ctx context.Context, conn *pgx.Conn, sql string) error {
	_, err := conn.Exec(ctx, sql, pgx.QueryExecModeSimpleProtocol)
	return err
}

type deliveryLookup struct {
	name, sql string
	values    []any
}

// deliveryLookups are the statements that read deliveries by (endpoint,
// event), with arguments in their parameters' order.
func deliveryLookups() []deliveryLookup {
	return []deliveryLookup{
		{"LoadAttempt", store.LoadAttemptSQL, []any{"ep", "ev"}},
		{"DeliveryPending", store.DeliveryPendingSQL, []any{"ep", "ev"}},
		{"EndpointsWithDelivery, 1 endpoint", store.WithDeliverySQL(1), []any{"ev", "ep"}},
		{"EndpointsWithDelivery, 3 endpoints", store.WithDeliverySQL(3), []any{"ev", "a", "b", "c"}},
	}
}
