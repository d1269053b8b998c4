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
//   - The drains' reads of fresh deliveries by endpoint name today's
//     partition while no other holds a fresh delivery and the next five
//     minutes are today's; a fresh delivery in the default partition, a
//     window across midnight, a resend of a delivery 40 days old (at
//     once, and for a minute after), and a fresh delivery 40 days old
//     another process made (at the next reading) make them read every
//     partition.
//   - The deliver job's, a drain's and the fanout's statements, run
//     through the store inside one transaction with generic plans
//     forced, hold locks on one events and one deliveries partition,
//     among 46 of each; the same statements about an event in the
//     default partition, which no route names, lock them all (so the
//     count can tell).
//   - An id that is not strictly "evt_" and a ULID, events of two
//     partitions, and an interval with no partition of its own are not
//     routed.
//   - A partition another process dropped fails the statement that named
//     it once; the next one goes through the parent and finds the
//     delivery gone.
func TestPartitionRouting(t *testing.T) {
	t.Parallel()
	cfg, s, now := partitionedDays(t, 41)
	day0 := now.Truncate(24 * time.Hour)
	ep := s.endpoint("acme", 1)
	today, stray := todayAndStray(now)
	old := eventAt("acme", "", day0.AddDate(0, 0, -40).Add(time.Hour))
	s.insertEvents(today, stray, old)
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

	// The drains' reads of fresh deliveries name today's partition only
	// while no other partition holds one, and today's holds every id
	// within five minutes of now.
	noon := day0.Add(12 * time.Hour)
	freshDue := s.db.FreshReadsSQL()["FreshDue"]
	freshIn := func(at time.Time) string {
		t.Helper()
		must(t, s.db.ReadRoutesAt(s.ctx, at))
		return s.db.RoutedFresh(freshDue)
	}
	if got := freshIn(noon); got != freshDue {
		t.Errorf("with a fresh delivery in the default partition, the drains read %q, want every partition", got)
	}
	s.exec(`UPDATE hookd_deliveries SET state = 'delivered' WHERE event_id = $1`, stray.ID)
	todays := strings.Replace(freshDue, "hookd_deliveries", "hookd_deliveries_"+suffix, 1)
	if got := freshIn(noon); got != todays {
		t.Errorf("with fresh deliveries in today's partition only, the drains read %q, want %q", got, todays)
	}
	if got := freshIn(day0.Add(24*time.Hour - time.Minute)); got != freshDue {
		t.Errorf("a minute before the day's end, the drains read %q, want every partition (the window spans two days)", got)
	}
	// A delivery of 40 days ago sent again is fresh in its own partition.
	freshIn(noon)
	s.exec(`UPDATE hookd_deliveries SET state = 'failed' WHERE event_id = $1`, old.ID)
	oldDelivery, err := s.q.FindDelivery(s.ctx, ep.ID, old.ID)
	must(t, err)
	must(t, s.q.ResetDelivery(s.ctx, oldDelivery.ID, 0, ts(now)))
	if got := s.db.RoutedFresh(freshDue); got != freshDue {
		t.Errorf("right after a resend of an old delivery, the drains read %q, want every partition", got)
	}
	s.exec(`UPDATE hookd_deliveries SET state = 'delivered' WHERE event_id = $1`, old.ID)
	if got := freshIn(noon); got != freshDue {
		t.Errorf("a reading within a minute of the resend (which may run before the resend commits) has the drains read %q, want every partition", got)
	}
	s.db.EndFreshHold()
	// A fresh delivery 40 days back that this process did not make (the
	// reading finds it).
	s.exec(`UPDATE hookd_deliveries SET state = 'pending', attempts = 0 WHERE event_id = $1`, old.ID)
	if got := freshIn(noon); got != freshDue {
		t.Errorf("with a fresh delivery pending 40 days back, the drains read %q, want every partition", got)
	}
	s.exec(`UPDATE hookd_deliveries SET state = 'delivered' WHERE event_id = $1`, old.ID)
	if got := freshIn(noon); got != todays {
		t.Errorf("with fresh deliveries in today's partition only again, the drains read %q, want %q", got, todays)
	}
	// A resend told while a reading runs, after its check for the hold:
	// the reading must not store the partition it found.
	must(t, s.db.ReadRoutesMissedDuring(s.ctx, noon))
	if got := s.db.RoutedFresh(freshDue); got != freshDue {
		t.Errorf("after a reading a resend overlapped, the drains read %q, want every partition", got)
	}
	s.db.EndFreshHold()
	if got := freshIn(noon); got != todays {
		t.Errorf("a reading after the hold, the drains read %q, want %q", got, todays)
	}

	// The locks: a store transaction, generic plans forced, each
	// statement of the deliver job, a drain and a fanout, then the
	// partitions the transaction holds a lock on.
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
			if _, err := q.FreshDue(s.ctx, ep.ID, 4); err != nil {
				return err
			}
			if _, err := q.FreshAttempts(s.ctx, ep.ID, "", 10, 4); err != nil {
				return err
			}
			if _, err := q.ClaimFresh(s.ctx, ep.ID, "", 10, 4, 5); err != nil {
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
	if pass, err := other.DropExpiredPartitions(s.ctx, day0, 30*24*time.Hour); err != nil || pass.Dropped < 1 {
		t.Fatalf("the other process dropped %d partitions (%v), want the expired ones", pass.Dropped, err)
	}
	if _, err := s.q.LoadAttempt(s.ctx, ep.ID, old.ID); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("a lookup naming the dropped partition: %v, want its relation's absence", err)
	}
	if _, err := s.q.LoadAttempt(s.ctx, ep.ID, old.ID); apperr.CodeOf(err) != apperr.NotFound {
		t.Errorf("the lookup again: %v, want not found (through the parent)", err)
	}
}

// partitionedDays is a PostgreSQL database partitioned by day, with the
// partitions of the days days before today too and an owner "acme".
func partitionedDays(t *testing.T, days int) (store.Config, *bundle, time.Time) {
	cfg := dbtest.Postgres(t)
	cfg.PartitionInterval = store.DefaultPartitionInterval
	s := newBundle(t, dbtest.Open(t, cfg))
	now := time.Now().UTC()
	day0 := now.Truncate(24 * time.Hour)
	must(t, s.db.EnsurePartitionsFor(s.ctx, day0.AddDate(0, 0, -days), day0))
	s.owner("acme")
	return cfg, s, now
}

// todayAndStray are two events of acme's at now: one with an id of now,
// in today's partition, and one whose id is in lower case, which no
// route names and which lives in the default partition.
func todayAndStray(now time.Time) (today, stray *event.Event) {
	today, stray = eventAt("acme", "", now), eventAt("acme", "", now)
	stray.ID = strings.ToLower(stray.ID)
	return today, stray
}

// insertEvents writes the events.
func (s *bundle) insertEvents(evs ...*event.Event) {
	s.t.Helper()
	for _, e := range evs {
		_, _, err := s.q.InsertEvent(s.ctx, e)
		must(s.t, err)
	}
}

// TestPartitionOnMigrate: a DB opened without a partition interval (as
// FromPool's, the library's pool) partitions its tables when told so
// before Migrate, on PostgreSQL; SQLite is not partitioned.
func TestPartitionOnMigrate(t *testing.T) {
	t.Parallel()
	for _, e := range dbtest.Backends() {
		t.Run(e.Name, func(t *testing.T) {
			t.Parallel()
			cfg := e.Config(t)
			cfg.PartitionInterval = 0
			db, err := store.Open(t.Context(), cfg)
			must(t, err)
			t.Cleanup(func() { _ = db.Close() })
			db.PartitionOnMigrate(store.DefaultPartitionInterval)
			must(t, db.Migrate(t.Context()))
			parts, err := db.Partitions(t.Context())
			must(t, err)
			want := 5 // today, the three days after it, the default
			if db.Pool() == nil {
				want = 0
			}
			if len(parts) != want {
				t.Errorf("%d partitions after Migrate, want %d", len(parts), want)
			}
		})
	}
}
