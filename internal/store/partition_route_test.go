package store_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/store"
)

// TestPartitionRouting: on time-partitioned tables a statement about one
// event's rows names that event's partitions (store/partition_route.go),
// so PostgreSQL 15 locks one partition of each table, not all of them, in
// the plan a connection caches.
//   - The deliver job's and the fanout's statements, run through the
//     store inside one transaction with generic plans forced, hold locks
//     on one events and one deliveries partition, among 46 of each; the
//     same statements about an event in the default partition, which no
//     route names, lock them all (so the count can tell).
//   - An id that is not strictly "evt_" and a ULID, events of two
//     partitions, and an interval with no partition of its own are not
//     routed.
//   - A partition another process dropped fails the statement that named
//     it once; the next one goes through the parent and finds the
//     delivery gone.
func TestPartitionRouting(t *testing.T) {
	t.Parallel()
	cfg := dbtest.Postgres(t)
	cfg.PartitionInterval = store.DefaultPartitionInterval
	s := newBundle(t, dbtest.Open(t, cfg))
	now := time.Now().UTC()
	day0 := now.Truncate(24 * time.Hour)
	must(t, s.db.EnsurePartitionsFor(s.ctx, day0.AddDate(0, 0, -41), day0))
	s.owner("acme")
	ep := s.endpoint("acme", 1)
	today := eventAt("acme", "", now)
	stray := eventAt("acme", "", now)
	stray.ID = strings.ToLower(stray.ID) // no route: the parent's, and the default partition's
	old := eventAt("acme", "", day0.AddDate(0, 0, -40).Add(time.Hour))
	for _, e := range []*event.Event{today, stray, old} {
		_, _, err := s.q.InsertEvent(s.ctx, e)
		must(t, err)
	}
	s.insertDelivery(ep.ID, today.ID, "pending")
	s.insertDelivery(ep.ID, stray.ID, "pending")
	s.insertDelivery(ep.ID, old.ID, "delivered")
	if got := s.partitionOf("hookd_events", "id", stray.ID); got != "hookd_events_default" {
		t.Fatalf("the lower-case id is in %s, want the default partition", got)
	}

	suffix := "p" + day0.Format("20060102")
	for _, c := range []struct {
		name string
		ids  []string
		want bool
	}{
		{"today's event", []string{today.ID}, true},
		{"two of today's", []string{today.ID, eventAt("acme", "", now).ID}, true},
		{"a lower-case id", []string{stray.ID}, false},
		{"not an event id", []string{"evt_1"}, false},
		{"today's and a day 40 days old", []string{today.ID, old.ID}, false},
		{"an event of 2100 (no partition)", []string{eventAt("acme", "", time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)).ID}, false},
		{"none", nil, false},
	} {
		got := s.db.Routed(store.LoadAttemptSQL, c.ids...)
		named := strings.Contains(got, "hookd_deliveries_"+suffix+" d") && strings.Contains(got, "hookd_events_"+suffix+" ev")
		if named != c.want || (!c.want && got != store.LoadAttemptSQL) {
			t.Errorf("%s: routed to today's partitions %v, want %v:\n%s", c.name, named, c.want, got)
		}
	}

	// The locks: a store transaction, generic plans forced, each
	// statement of the deliver job and of a fanout, then the partitions
	// the transaction holds a lock on.
	locked := func(ev string) (events, deliveries int) {
		t.Helper()
		err := s.db.InTx(s.ctx, store.TxOptions{}, func(q *store.Q) error {
			if _, err := q.Exec(s.ctx, `SET LOCAL plan_cache_mode = force_generic_plan`); err != nil {
				return err
			}
			if _, err := q.LoadAttempt(s.ctx, ep.ID, ev); err != nil {
				return err
			}
			if _, err := q.DeliveryPending(s.ctx, ep.ID, ev, 0); err != nil {
				return err
			}
			d, err := q.FindDelivery(s.ctx, ep.ID, ev)
			if err != nil {
				return err
			}
			if _, err := q.ClaimDelivery(s.ctx, d.ID, ev, 0, 1, 2); err != nil {
				return err
			}
			if err := q.RecordAttempt(s.ctx, store.Attempt{DeliveryID: d.ID, EventID: ev, State: endpoint.Pending, Now: 3}); err != nil {
				return err
			}
			if _, err := q.EndpointsWithDelivery(s.ctx, ev, []string{ep.ID}); err != nil {
				return err
			}
			if _, err := q.GetEvent(s.ctx, "acme", ev); err != nil {
				return err
			}
			if _, err := q.LockEvent(s.ctx, ev); err != nil {
				return err
			}
			return q.QueryRow(s.ctx, `SELECT count(DISTINCT c.oid) FILTER (WHERE c.relname ~ '^hookd_events_'), count(DISTINCT c.oid) FILTER (WHERE c.relname ~ '^hookd_deliveries_')
				FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
				WHERE l.pid = pg_backend_pid() AND l.locktype = 'relation' AND c.relkind = 'r'`).Scan(&events, &deliveries)
		})
		must(t, err)
		return events, deliveries
	}
	parts, err := s.db.Partitions(s.ctx)
	must(t, err)
	if e, d := locked(today.ID); e != 1 || d != 1 {
		t.Errorf("today's event's statements lock %d events and %d deliveries partitions, want 1 and 1 (of %d)", e, d, len(parts))
	}
	if e, d := locked(stray.ID); e < len(parts) || d < len(parts) {
		t.Errorf("an unrouted event's statements lock %d events and %d deliveries partitions, want all %d (the count cannot tell otherwise)", e, d, len(parts))
	}

	// Another process drops the partition of 40 days ago.
	other := dbtest.Open(t, cfg)
	if n, err := other.DropExpiredPartitions(s.ctx, day0.AddDate(0, 0, -30)); err != nil || n < 1 {
		t.Fatalf("the other process dropped %d partitions (%v), want the expired ones", n, err)
	}
	if _, err := s.q.LoadAttempt(s.ctx, ep.ID, old.ID); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("a lookup naming the dropped partition: %v, want its relation's absence", err)
	}
	if _, err := s.q.LoadAttempt(s.ctx, ep.ID, old.ID); apperr.CodeOf(err) != apperr.NotFound {
		t.Errorf("the lookup again: %v, want not found (through the parent)", err)
	}
}
