package store_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/store"
)

// TestDeliveryLookupPlans: the reads of a delivery by (endpoint, event) use
// the unique (endpoint_id, event_id) for both columns in the plan a
// connection caches (a generic plan, made once after five runs) while the
// table has never been analyzed: a new database's first minute, and every
// benchmark's whole run. Before migration 013 that plan took
// hookd_deliveries_endpoint_recent, matched only endpoint_id and filtered
// all of the endpoint's deliveries by event. The console's reads of
// endpoint_recent keep it.
func TestDeliveryLookupPlans(t *testing.T) {
	t.Parallel()
	cfg := unpartitioned(t)
	ctx := context.Background()
	db, err := store.Open(ctx, cfg)
	must(t, err)
	t.Cleanup(func() { db.Close() })
	must(t, db.Migrate(ctx))
	pc, err := db.Pool().Acquire(ctx)
	must(t, err)
	conn := pc.Hijack() // its plan cache setting stays out of the pool
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	must(t, execSimple(ctx, conn, `SET plan_cache_mode = force_generic_plan`))

	// genericPlan is the plan a connection would cache for sql now.
	prepared := 0
	genericPlan := func(sql string, values ...any) string {
		t.Helper()
		prepared++
		return pgGenericPlan(t, conn, fmt.Sprintf("plan%d", prepared), sql, values...)
	}
	// Deliveries of 10 endpoints, as a fresh database fills up; rows
	// written count for the planner at once, with no ANALYZE.
	written := 0
	for _, size := range []int{0, 300, 3000} {
		_, err := conn.Exec(ctx, `INSERT INTO hookd_deliveries (id, owner_id, endpoint_id, event_id, event_type, state, created_at, updated_at)
			SELECT 'dlv_' || i, 'own_1', 'ep_' || (i % 10), 'evt_' || i, 'order.paid', 'delivered', 1700000000000 + i, 1700000000000 + i
			FROM generate_series($1::int, $2::int) i`, written+1, size)
		must(t, err)
		written = size
		for _, c := range deliveryLookups() {
			if len(c.values) > 2 && size > 0 && size < 1000 {
				// With several endpoints a plan made on a table of a few
				// hundred rows scans it, as cheaper at that size; it stays
				// until autovacuum's first ANALYZE (a minute at most)
				// replans it. Not a read of a job's own delivery.
				continue
			}
			plan := genericPlan(c.sql, c.values...)
			if !strings.Contains(plan, "using hookd_deliveries_endpoint_id_event_id_key on hookd_deliveries") || strings.Contains(plan, "Filter: (event_id") {
				t.Errorf("%d deliveries: %s does not read hookd_deliveries by the unique (endpoint_id, event_id) with both columns:\n%s", size, c.name, plan)
			}
		}
	}
	for _, c := range []deliveryLookup{
		{"EndpointActivity", store.EndpointActivitySQL, []any{"own_1", "1700000000000"}},
		{"HourlyOutcomes", store.HourlyOutcomesSQL, []any{"ep_1", "1700000000000", "1700003600000"}},
		{"HourlyOutcomes, the hours in one", store.HourlyOutcomesHoursSQL, []any{"ep_1", "1700000000000", "24"}},
	} {
		if plan := genericPlan(c.sql, c.values...); !strings.Contains(plan, "hookd_deliveries_endpoint_recent") {
			t.Errorf("%d deliveries: %s does not read the endpoint_recent index:\n%s", written, c.name, plan)
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

// TestDeliveryLogStatePlans: the log filtered to failed or pending
// deliveries reads that state's partial (endpoint_id, id) index, newest
// first, on both engines (on PostgreSQL in the plan a connection caches):
// a page costs its rows, not a walk back through the endpoint's whole log
// (the soak bench's filtered page at 200,000 deliveries took 26 ms
// before, 0.2 ms after). The state is written into the statement as a
// literal: a bound value rules a partial index out of a generic plan.
func TestDeliveryLogStatePlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	logSQL := func(state endpoint.DeliveryState) (string, []any, string) {
		sql, args := store.DeliveryLogSQL(store.DeliveryFilter{OwnerID: "own_1", EndpointID: "ep_1", State: state, Limit: 50})
		return sql, args, "hookd_deliveries_" + string(state)
	}
	states := []endpoint.DeliveryState{endpoint.Failed, endpoint.Pending}
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		db, err := store.Open(ctx, dbtest.SQLite(t))
		must(t, err)
		t.Cleanup(func() { db.Close() })
		must(t, db.Migrate(ctx))
		// Failed only: with no statistics SQLite reads a pending-only log
		// by the (endpoint_id, id) index and filters; pending rows are
		// the newest, so that walk is short.
		for _, state := range states[:1] {
			sql, args, index := logSQL(state)
			if p := strings.Join(sqlitePlan(t, db, sql, args...), "; "); !strings.Contains(p, "USING INDEX "+index) || strings.Contains(p, "TEMP B-TREE") {
				t.Errorf("the log of %s deliveries reads %q, want %s in its order", state, p, index)
			}
		}
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		db, err := store.Open(ctx, unpartitioned(t))
		must(t, err)
		t.Cleanup(func() { db.Close() })
		must(t, db.Migrate(ctx))
		pc, err := db.Pool().Acquire(ctx)
		must(t, err)
		conn := pc.Hijack()
		t.Cleanup(func() { _ = conn.Close(context.Background()) })
		must(t, execSimple(ctx, conn, `SET plan_cache_mode = force_generic_plan`))
		// Enough deliveries of several endpoints that a scan is dearer.
		_, err = conn.Exec(ctx, `INSERT INTO hookd_deliveries (id, owner_id, endpoint_id, event_id, event_type, state, created_at, updated_at)
			SELECT 'dlv_' || lpad(i::text, 6, '0'), 'own_1', 'ep_' || (i % 10), 'evt_' || i, 'order.paid',
				CASE WHEN i % 50 = 0 THEN 'failed' WHEN i % 50 = 1 THEN 'pending' ELSE 'delivered' END, i, i
			FROM generate_series(1, 20000) i`)
		must(t, err)
		must(t, execSimple(ctx, conn, `ANALYZE hookd_deliveries`))
		for n, state := range states {
			sql, args, index := logSQL(state)
			if p := pgGenericPlan(t, conn, fmt.Sprintf("logplan%d", n), sql, args...); !strings.Contains(p, index) || strings.Contains(p, "Sort") {
				t.Errorf("the log of %s deliveries, generic plan:\n%s\nwant %s in its order", state, p, index)
			}
		}
	})
}

// sqlitePlan is SQLite's EXPLAIN QUERY PLAN of sql: each step's detail.
func sqlitePlan(t *testing.T, db *store.DB, sql string, args ...any) []string {
	t.Helper()
	rows, err := db.SQLDB().QueryContext(context.Background(), `EXPLAIN QUERY PLAN `+sql, args...)
	must(t, err)
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		must(t, rows.Scan(&id, &parent, &unused, &detail))
		plan = append(plan, detail)
	}
	must(t, rows.Err())
	return plan
}

// pgGenericPlan prepares sql as name on conn and returns the plan
// EXPLAIN EXECUTE shows for args (written as literals): under
// plan_cache_mode = force_generic_plan, the plan a connection caches.
func pgGenericPlan(t *testing.T, conn *pgx.Conn, name, sql string, args ...any) string {
	t.Helper()
	ctx := context.Background()
	must(t, execSimple(ctx, conn, `PREPARE `+name+` AS `+sql))
	literals := make([]string, len(args))
	for i, v := range args {
		literals[i] = fmt.Sprintf("'%v'", v)
	}
	rows, err := conn.Query(ctx, `EXPLAIN EXECUTE `+name+`(`+strings.Join(literals, ", ")+`)`, pgx.QueryExecModeSimpleProtocol)
	must(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	must(t, err)
	return strings.Join(lines, "\n")
}

// unpartitioned is a new PostgreSQL schema with unpartitioned tables,
// whatever HOOKD_TEST_PARTITION_INTERVAL says: the plans these tests pin
// are the unpartitioned tables' (TestPartitions pins the partitions').
func unpartitioned(t *testing.T) store.Config {
	cfg := dbtest.Postgres(t)
	cfg.PartitionInterval = 0
	return cfg
}

// TestFreshReadsPendingIndexSQLite: the reads of an endpoint's fresh
// deliveries in order of id (the drain's and the wake-ups') go through
// hookd_deliveries_pending on SQLite. Without statistics SQLite took the
// (endpoint_id, id) index of every delivery for them (the wake-ups order
// by id with no range on it; FreshAttempts reads the attempt's columns,
// which that index does not cover either) and walked the endpoint's whole
// history to its first pending row: beside 5 M delivered rows a drain's
// first read took 1.6 s, and delivering fell to 6–300 a second
// (docs/performance.md, "SQLite at volume").
func TestFreshReadsPendingIndexSQLite(t *testing.T) {
	t.Parallel()
	db := dbtest.Open(t, dbtest.SQLite(t))
	param := regexp.MustCompile(`\$([0-9])`)
	for name, sql := range db.FreshReadsSQL() {
		// The endpoint, then 1 for every other parameter: without
		// statistics the plan does not depend on the values.
		n := 0
		for _, m := range param.FindAllStringSubmatch(sql, -1) {
			n = max(n, int(m[1][0]-'0'))
		}
		args := []any{"ep_1"}
		for len(args) < n {
			args = append(args, int64(1))
		}
		plan := sqlitePlan(t, db, param.ReplaceAllString(sql, "?$1"), args...)
		if !strings.Contains(strings.Join(plan, "\n"), "USING INDEX hookd_deliveries_pending ") {
			t.Errorf("%s does not read hookd_deliveries_pending: %q", name, plan)
		}
	}
}
