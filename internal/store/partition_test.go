package store_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oklog/ulid/v2"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/store"
)

// idAt is an event id of time at (event.NewID never goes back in time, so
// a test that needs an id of the past makes its own).
func idAt(at time.Time) string {
	return "evt_" + ulid.MustNew(ulid.Timestamp(at), rand.Reader).String()
}

// eventAt is an event of time at with an id of that time, made without
// event.NewID (which would move every later id of the process to at).
func eventAt(ownerID, key string, at time.Time) *event.Event {
	e := newEvent(ownerID, key, t0)
	e.ID, e.CreatedAt = idAt(at), at
	return e
}

// partitionOf is the partition a row of table with id lives in.
func (s *bundle) partitionOf(table, col, id string) string {
	s.t.Helper()
	var name string
	must(s.t, s.db.Pool().QueryRow(s.ctx, `SELECT tableoid::regclass::text FROM `+table+` WHERE `+col+` = $1`, id).Scan(&name))
	return name
}

// insertDelivery writes a delivery of event eventID in state directly.
func (s *bundle) insertDelivery(endpointID, eventID, state string) {
	s.t.Helper()
	s.exec(`INSERT INTO hookd_deliveries (id, owner_id, endpoint_id, event_id, event_type, state, created_at, updated_at)
		VALUES ($1, 'acme', $2, $3, 'invoice.paid', $4, 1, 1)`, event.NewID("dlv_", time.Now()), endpointID, eventID, state)
}

// TestPartitions: the time partitions on PostgreSQL (store/partition.go),
// and on SQLite that every partition call is a no-op.
//   - A partitioned database has the current day's and the next three
//     days' partitions and a default; an event and its deliveries land in
//     the partition of the event's day.
//   - A lookup by event id, and the deliver job's by (endpoint, event),
//     read one partition in the plan a connection caches (a generic plan:
//     the pruning happens when it runs, "Subplans Removed").
//   - An idempotency key repeated two days later, across partitions,
//     returns the first event.
//   - Retention drops the expired days whose deliveries are all finished,
//     with their events, and keeps a day that holds a pending delivery.
func TestPartitions(t *testing.T) {
	t.Parallel()
	for _, e := range dbtest.Backends() {
		t.Run(e.Name, func(t *testing.T) {
			t.Parallel()
			cfg := e.Config(t)
			cfg.MaxConns = 8
			cfg.PartitionInterval = store.DefaultPartitionInterval
			s := newBundle(t, dbtest.Open(t, cfg))
			now := time.Now().UTC()
			if s.db.Pool() == nil {
				parts, err := s.db.Partitions(s.ctx)
				must(t, err)
				must(t, s.db.EnsurePartitions(s.ctx, now))
				must(t, s.db.EnsurePartitionsFor(s.ctx, now.AddDate(0, 0, -40), now))
				pass, err := s.db.DropExpiredPartitions(s.ctx, now, time.Hour)
				must(t, err)
				dropped := pass.Dropped
				keys, err := s.q.PruneEventKeys(s.ctx, ts(now), 100)
				must(t, err)
				if parts != nil || dropped != 0 || keys != 0 {
					t.Fatalf("SQLite: partitions %v, dropped %d, keys pruned %d; want none (not partitioned)", parts, dropped, keys)
				}
				return
			}
			testPartitionsPostgres(t, s, now)
		})
	}
}

func testPartitionsPostgres(t *testing.T, s *bundle, now time.Time) {
	parts, err := s.db.Partitions(s.ctx)
	must(t, err)
	day0 := now.Truncate(24 * time.Hour)
	var names []string
	for _, p := range parts {
		names = append(names, p.Name)
	}
	want := []string{"hookd_deliveries_p" + day0.Format("20060102"), "hookd_deliveries_p" + day0.AddDate(0, 0, 1).Format("20060102"),
		"hookd_deliveries_p" + day0.AddDate(0, 0, 2).Format("20060102"), "hookd_deliveries_p" + day0.AddDate(0, 0, 3).Format("20060102"), "hookd_deliveries_default"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("partitions %v, want %v", names, want)
	}
	// Several processes ensure at once: nothing is made twice, nothing fails.
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { must(t, s.db.EnsurePartitions(s.ctx, now)) })
	}
	wg.Wait()
	if again, err := s.db.Partitions(s.ctx); err != nil || len(again) != len(parts) {
		t.Fatalf("after concurrent ensures: %d partitions (%v), want %d", len(again), err, len(parts))
	}

	s.owner("acme")
	ep := s.endpoint("acme", 1)
	ev := eventAt("acme", "", now)
	_, _, err = s.q.InsertEvent(s.ctx, ev)
	must(t, err)
	s.insertDelivery(ep.ID, ev.ID, "pending")
	today := "hookd_events_p" + day0.Format("20060102")
	if got := s.partitionOf("hookd_events", "id", ev.ID); got != today {
		t.Errorf("today's event is in %s, want %s", got, today)
	}
	if got := s.partitionOf("hookd_deliveries", "event_id", ev.ID); got != "hookd_deliveries_p"+day0.Format("20060102") {
		t.Errorf("today's delivery is in %s, want today's partition", got)
	}

	// Pruning, in the plan a connection caches.
	pc, err := s.db.Pool().Acquire(s.ctx)
	must(t, err)
	conn := pc.Hijack()
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	must(t, execSimple(s.ctx, conn, `SET plan_cache_mode = force_generic_plan`))
	scans := regexp.MustCompile(`Scan (Backward )?using \S+ on (hookd_(events|deliveries)_\w+)`)
	onePartition := func(name, sql string, args ...any) {
		t.Helper()
		plan := pgGenericPlan(t, conn, fmt.Sprintf("p%d", time.Now().UnixNano()), sql, args...)
		read := map[string][]string{} // table: its partitions read
		for _, m := range scans.FindAllStringSubmatch(plan, -1) {
			read[m[3]] = append(read[m[3]], m[2])
		}
		for table, ps := range read {
			if len(ps) != 1 {
				t.Errorf("%s reads %d partitions of hookd_%s (%v), want one:\n%s", name, len(ps), table, ps, plan)
			}
		}
		if len(read) == 0 || !strings.Contains(plan, "Subplans Removed") {
			t.Errorf("%s is not pruned when it runs:\n%s", name, plan)
		}
		if strings.Contains(plan, "Filter: (event_id") {
			t.Errorf("%s does not read the unique (endpoint_id, event_id) with both columns:\n%s", name, plan)
		}
	}
	onePartition("an event by id", `SELECT id FROM hookd_events WHERE id = $1`, ev.ID)
	events, err := s.q.ListEvents(s.ctx, store.EventFilter{OwnerID: "acme", Since: ts(now.Add(-time.Hour)), Until: ts(now.Add(time.Hour)), Limit: 10})
	must(t, err)
	if len(events) != 1 || events[0].ID != ev.ID {
		t.Errorf("events.list over the last hour: %d events, want today's one", len(events))
	}
	for _, c := range deliveryLookups() {
		if len(c.values) == 2 { // by (endpoint, event)
			onePartition(c.name, c.sql, ep.ID, ev.ID)
		}
	}

	// An idempotency key used again two days later, in another partition.
	first := eventAt("acme", "order-7", now)
	id1, inserted, err := s.q.InsertEvent(s.ctx, first)
	must(t, err)
	again := eventAt("acme", "order-7", now.AddDate(0, 0, 2))
	id2, inserted2, err := s.q.InsertEvent(s.ctx, again)
	must(t, err)
	if !inserted || inserted2 || id2 != id1 {
		t.Errorf("key repeated across partitions: first (%s, inserted %v), again (%s, inserted %v); want the first event's id, not a second event", id1, inserted, id2, inserted2)
	}
	if n := s.count(`SELECT count(*) FROM hookd_events WHERE idempotency_key = 'order-7'`); n != 1 {
		t.Errorf("%d events with the key, want 1", n)
	}
	if n, err := s.q.PruneEventKeys(s.ctx, ts(now.Add(time.Hour)), 100); err != nil || n != 1 {
		t.Errorf("PruneEventKeys before an hour from now: %d (%v), want the 1 key", n, err)
	}

	// Retention: five days, 40 to 36 days ago; the third holds a pending
	// delivery.
	from := day0.AddDate(0, 0, -40)
	must(t, s.db.EnsurePartitionsFor(s.ctx, from, from.AddDate(0, 0, 5)))
	var old []string
	for d := range 5 {
		e := eventAt("acme", "", from.AddDate(0, 0, d).Add(time.Hour))
		_, _, err := s.q.InsertEvent(s.ctx, e)
		must(t, err)
		state := "delivered"
		if d == 2 {
			state = "pending"
		}
		s.insertDelivery(ep.ID, e.ID, state)
		old = append(old, e.ID)
	}
	if got, want := s.partitionOf("hookd_events", "id", old[0]), "hookd_events_p"+from.Format("20060102"); got != want {
		t.Fatalf("an event 40 days old is in %s, want %s", got, want)
	}
	// events.list over the last hour reads none of those old days'
	// partitions: the window's start is an id bound.
	since, until := now.Add(-time.Hour), now.Add(time.Minute)
	plan := pgGenericPlan(t, conn, "evlist", store.ListEventsPartitionedSQL, "acme", ts(since), ts(until), ts(until), "evt_z", "%", 0, "",
		50, idAt(since)[:14]+strings.Repeat("0", 16))
	if strings.Contains(plan, "hookd_events_p"+from.Format("20060102")) || !strings.Contains(plan, "Subplans Removed") {
		t.Errorf("events.list over the last hour reads the partitions of 40 days ago:\n%s", plan)
	}
	pass, err := s.db.DropExpiredPartitions(s.ctx, now, 30*24*time.Hour)
	must(t, err)
	if pass.Dropped != 4 {
		t.Errorf("dropped %d expired days, want 4 (the fifth holds a pending delivery)", pass.Dropped)
	}
	for d, id := range old {
		events := s.count(`SELECT count(*) FROM hookd_events WHERE id = $1`, id)
		deliveries := s.count(`SELECT count(*) FROM hookd_deliveries WHERE event_id = $1`, id)
		if kept := d == 2; (events == 1 && deliveries == 1) != kept || (!kept && events+deliveries != 0) {
			t.Errorf("day %d (kept %v): %d events, %d deliveries left", d, kept, events, deliveries)
		}
	}
	if s.count(`SELECT count(*) FROM hookd_events WHERE id = $1`, ev.ID) != 1 {
		t.Error("retention dropped today's event")
	}
}

// TestPartitionLiveDatabase: a database with rows, unpartitioned, is
// partitioned by Migrate while a publisher writes events into it, and
// nothing is lost: every event written before, during and after is read
// back, the old rows are in the legacy partition (the old table,
// attached), an idempotency key used before still returns its event, and
// a lookup of an old delivery reads the legacy partition alone.
func TestPartitionLiveDatabase(t *testing.T) {
	t.Parallel()
	cfg := dbtest.Postgres(t)
	cfg.MaxConns = 8
	cfg.PartitionInterval = 0 // unpartitioned, whatever HOOKD_TEST_PARTITION_INTERVAL says
	s := newBundle(t, dbtest.Open(t, cfg))
	s.owner("acme")
	ep := s.endpoint("acme", 1)
	var written []string
	for i := range 200 {
		e := newEvent("acme", fmt.Sprintf("k%d", i%20), time.Now())
		id, inserted, err := s.q.InsertEvent(s.ctx, e)
		must(t, err)
		if inserted {
			written = append(written, id)
			s.insertDelivery(ep.ID, id, "delivered")
		}
	}
	if len(written) != 20 {
		t.Fatalf("%d events written, want 20 (20 keys)", len(written))
	}

	// A publisher keeps writing while the second process partitions.
	var (
		mu      sync.Mutex
		during  []string
		stop    atomic.Bool
		pubErrs atomic.Int64
		wg      sync.WaitGroup
	)
	wg.Go(func() {
		for !stop.Load() {
			e := eventAt("acme", "", time.Now())
			if _, _, err := s.q.InsertEvent(s.ctx, e); err != nil {
				pubErrs.Add(1)
				t.Errorf("publish during the partitioning: %v", err)
				return
			}
			mu.Lock()
			during = append(during, e.ID)
			mu.Unlock()
		}
	})
	pcfg := cfg
	pcfg.PartitionInterval = store.DefaultPartitionInterval
	p := dbtest.Open(t, pcfg) // Migrate partitions
	// Let the publisher go on across the swap, then stop it.
	for deadline := time.Now().Add(10 * time.Second); ; {
		mu.Lock()
		n := len(during)
		mu.Unlock()
		if n >= 50 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()

	parts, err := p.Partitions(s.ctx)
	must(t, err)
	if len(parts) < 3 || !parts[0].Legacy || parts[0].Name != "hookd_deliveries_legacy" || !parts[len(parts)-1].Default {
		t.Fatalf("partitions %+v: want the legacy first, then days, then the default", parts)
	}
	cut := parts[0].To
	if !cut.After(time.Now()) {
		t.Errorf("the legacy takes ids below %v, which is not ahead of now", cut)
	}
	for _, id := range append(append([]string(nil), written...), during...) {
		if n := s.count(`SELECT count(*) FROM hookd_events WHERE id = $1`, id); n != 1 {
			t.Fatalf("event %s: %d rows after the partitioning, want 1", id, n)
		}
	}
	if got := s.partitionOf("hookd_events", "id", written[0]); got != "hookd_events_legacy" {
		t.Errorf("an old event is in %s, want hookd_events_legacy", got)
	}
	// A key used before the partitioning still answers with its event.
	repeat := newEvent("acme", "k3", time.Now())
	id, inserted, err := p.Q().InsertEvent(s.ctx, repeat)
	must(t, err)
	if inserted || id != written[3] {
		t.Errorf("key k3 after the partitioning: (%s, inserted %v), want the earlier %s", id, inserted, written[3])
	}
	// An event past the cut lands in its day's partition.
	later := eventAt("acme", "", cut.Add(time.Hour))
	_, _, err = p.Q().InsertEvent(s.ctx, later)
	must(t, err)
	if got, want := s.partitionOf("hookd_events", "id", later.ID), "hookd_events_p"+cut.Format("20060102"); got != want {
		t.Errorf("an event past the cut is in %s, want %s", got, want)
	}
	// The old rows keep their indexes: a delivery lookup reads the legacy.
	pc, err := p.Pool().Acquire(s.ctx)
	must(t, err)
	conn := pc.Hijack()
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	must(t, execSimple(s.ctx, conn, `SET plan_cache_mode = force_generic_plan`))
	plan := pgGenericPlan(t, conn, "legacy_lookup", `SELECT state FROM hookd_deliveries WHERE endpoint_id = $1 AND event_id = $2`, ep.ID, written[0])
	if !strings.Contains(plan, "on hookd_deliveries_legacy") || !strings.Contains(plan, "Subplans Removed") || strings.Contains(plan, "Seq Scan") {
		t.Errorf("an old delivery's lookup does not read the legacy partition's index alone:\n%s", plan)
	}
	// Migrating again changes nothing.
	must(t, p.Migrate(s.ctx))
	if again, err := p.Partitions(s.ctx); err != nil || len(again) != len(parts) {
		t.Errorf("a second migrate: %d partitions (%v), want %d", len(again), err, len(parts))
	}
}

// TestVacuumClosedPartitions: a retention pass vacuums the newest ended
// interval's partitions once (both tables'), not the current one, not
// one it has vacuumed since the interval ended; afterwards an endpoint's
// rows of that day are read from the index alone (no heap fetch), as the
// console's count of the last day reads them.
func TestVacuumClosedPartitions(t *testing.T) {
	t.Parallel()
	_, s, now := partitionedDays(t, 3)
	ep := s.endpoint("acme", 1)
	day0 := now.Truncate(day)
	yesterday := day0.Add(-day)
	s.fillDay(ep, yesterday.Add(time.Hour), 2000)
	vacuumedAt := func(table string) int {
		return s.count(`SELECT count(*) FROM pg_stat_user_tables WHERE relid = to_regclass($1) AND greatest(last_vacuum, last_autovacuum) IS NOT NULL`, table)
	}
	suffix := func(d time.Time) string { return "_p" + d.Format("20060102") }
	// VACUUM marks a page all-visible only once no transaction that began
	// before its rows were written is open (another test's, on this
	// server).
	s.waitVacuumHorizon()

	n, err := s.db.VacuumClosedPartitions(s.ctx, now, 30*day, 1)
	must(t, err)
	if n != 1 {
		t.Fatalf("vacuumed %d partitions, want yesterday's", n)
	}
	for _, table := range []string{"hookd_deliveries", "hookd_events"} {
		if vacuumedAt(table+suffix(yesterday)) != 1 {
			t.Errorf("%s of yesterday not vacuumed", table)
		}
		if vacuumedAt(table+suffix(day0)) != 0 {
			t.Errorf("%s of today, not ended, was vacuumed", table)
		}
	}
	// Then the day before (older, next in line); then nothing is left
	// that has not been vacuumed since it ended.
	if n, err := s.db.VacuumClosedPartitions(s.ctx, now, 30*day, 5); err != nil || n != 2 {
		t.Errorf("second pass vacuumed %d (%v), want the two older days", n, err)
	}
	if n, err := s.db.VacuumClosedPartitions(s.ctx, now, 30*day, 5); err != nil || n != 0 {
		t.Errorf("third pass vacuumed %d (%v), want none", n, err)
	}
	// A day later today's has ended; the older days, expired in a 2-day
	// window or vacuumed since they ended, are left alone.
	if n, err := s.db.VacuumClosedPartitions(s.ctx, now.Add(day), 2*day, 5); err != nil || n != 1 {
		t.Errorf("a day later: %d vacuumed (%v), want only today's, which has ended then", n, err)
	}

	if plan, ok := s.indexAlone("hookd_deliveries"+suffix(yesterday), ep.ID); !ok {
		t.Errorf("yesterday's rows of an endpoint, after the vacuum, are not read from the index alone:\n%s", plan)
	}
}

// indexAlone runs, with EXPLAIN ANALYZE, the console's count of an
// endpoint's rows in one partition of the deliveries, and says whether
// it read them from the index alone (an index-only scan with no heap
// fetch: the partition's visibility map is set), with the plan.
func (s *bundle) indexAlone(partition, endpointID string) (plan string, ok bool) {
	s.t.Helper()
	pc, err := s.db.Pool().Acquire(s.ctx)
	must(s.t, err)
	conn := pc.Hijack()
	s.t.Cleanup(func() { _ = conn.Close(context.Background()) })
	must(s.t, execSimple(s.ctx, conn, `SET enable_seqscan = off; SET enable_bitmapscan = off`))
	rows, err := conn.Query(s.ctx, `EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*), sum(attempts) FROM `+pgx.Identifier{partition}.Sanitize()+` WHERE endpoint_id = $1 AND created_at >= 0`, endpointID)
	must(s.t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	must(s.t, err)
	plan = strings.Join(lines, "\n")
	return plan, strings.Contains(plan, "Index Only Scan") && strings.Contains(plan, "Heap Fetches: 0")
}

// TestVacuumCurrentPartition: where autovacuum is off (here the
// partitions' own autovacuum_enabled, whatever the server's setting),
// a retention pass vacuums the interval being written once it has taken
// autovacuum's threshold of inserts since its last vacuum, both tables'
// partitions, and not before; the day's rows of an endpoint are then read
// from the index alone, as the console's count of the last day reads
// them.
func TestVacuumCurrentPartition(t *testing.T) {
	t.Parallel()
	_, s, now := partitionedDays(t, 1)
	ep := s.endpoint("acme", 1)
	day0 := now.Truncate(day)
	today := "_p" + day0.Format("20060102")
	for _, table := range []string{"hookd_deliveries", "hookd_events"} {
		s.exec(`ALTER TABLE ` + table + today + ` SET (autovacuum_enabled = false)`)
	}
	vacuums := func(table string) int {
		return s.count(`SELECT vacuum_count FROM pg_stat_user_tables WHERE relid = to_regclass($1)`, table+today)
	}
	// pg_stat_user_tables is the server's statistics, which a backend
	// sends when its transaction ends: wait until they count the rows.
	inserted := func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for s.count(`SELECT n_ins_since_vacuum FROM pg_stat_user_tables WHERE relid = to_regclass($1)`, "hookd_deliveries"+today) < n {
			if time.Now().After(deadline) {
				t.Fatalf("the statistics never counted %d inserts", n)
			}
			time.Sleep(20 * time.Millisecond) // the server's view: no signal to wait on
		}
	}

	s.fillDay(ep, day0, 2000)
	inserted(2000)
	s.waitVacuumHorizon()
	did, err := s.db.VacuumCurrentPartition(s.ctx, now)
	must(t, err)
	if !did || vacuums("hookd_deliveries") != 1 || vacuums("hookd_events") != 1 {
		t.Fatalf("after 2,000 inserts: vacuumed %v, deliveries' partition %d times, events' %d; want both once",
			did, vacuums("hookd_deliveries"), vacuums("hookd_events"))
	}
	if plan, ok := s.indexAlone("hookd_deliveries"+today, ep.ID); !ok {
		t.Errorf("today's rows of an endpoint, after the vacuum, are not read from the index alone:\n%s", plan)
	}

	// Below autovacuum's threshold (1,000 inserts and a fifth of the
	// 2,000 rows, by default): not again.
	s.fillDay(ep, day0.Add(time.Minute), 100)
	inserted(100)
	if did, err := s.db.VacuumCurrentPartition(s.ctx, now); err != nil || did {
		t.Errorf("after 100 more inserts: vacuumed %v (%v), want not yet", did, err)
	}
	s.fillDay(ep, day0.Add(2*time.Minute), 2000)
	inserted(2100)
	if did, err := s.db.VacuumCurrentPartition(s.ctx, now); err != nil || !did || vacuums("hookd_deliveries") != 2 {
		t.Errorf("after 2,100 more inserts: vacuumed %v (%v), %d vacuums in all; want a second", did, err, vacuums("hookd_deliveries"))
	}
	// Tomorrow has no partition yet here: nothing to vacuum, no error.
	if did, err := s.db.VacuumCurrentPartition(s.ctx, day0.Add(3*day)); err != nil || did {
		t.Errorf("with no partition for now: vacuumed %v (%v)", did, err)
	}
}
