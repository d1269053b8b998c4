package store_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/store"
)

// finished writes a delivery of ev to ep that ended in state at finish
// (Pending: never finished).
func (s *bundle) finished(ep *endpoint.Endpoint, ev *event.Event, state endpoint.DeliveryState, finish time.Time) *endpoint.Delivery {
	s.t.Helper()
	d := newDelivery(ep.OwnerID, ep.ID, ev.ID, ev.CreatedAt)
	s.deliveries(d)
	if state != endpoint.Pending {
		must(s.t, s.q.RecordAttempt(s.ctx, store.Attempt{DeliveryID: d.ID, Sent: true, Status: 500, State: state, Now: ts(finish)}))
	}
	return d
}

// TestExpiredHidden: once KeepFor says how long retention keeps records,
// every read an owner sees hides a delivery finished before the window and
// an event created before it, though their rows are still there (as they
// are until a partition's drop): the delivery log, a delivery, a delivery
// by (endpoint, event), an event's deliveries, an event, events.list, the
// failed deliveries redeliver takes, a recovery's selection and the
// endpoint list's last delivery. A pending delivery is never hidden. With
// no retention, every one of them is read again.
func TestExpiredHidden(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		ep, ep2, ep3 := s.endpoint("acme", 1), s.endpoint("acme", 1), s.endpoint("acme", 1)
		old, recent := eventAt("acme", "", t0), eventAt("acme", "", t0.Add(20*day))
		s.insertEvents(old, recent)
		expired := s.finished(ep, old, endpoint.Failed, t0.Add(time.Hour))
		pending := s.finished(ep2, old, endpoint.Pending, time.Time{})
		kept := s.finished(ep, recent, endpoint.Failed, t0.Add(20*day))
		onlyExpired := s.finished(ep3, old, endpoint.Delivered, t0.Add(2*time.Hour)) // ep3's last delivery
		now := t0.Add(40 * day)                                                      // the window, 30 days, starts at t0 + 10 days

		type reads struct {
			log, eventDeliveries, failed, recoverable []string
			last                                      string
			delivery, byPair, event, pendingByPair    bool
			events                                    []string
		}
		read := func() reads {
			t.Helper()
			var r reads
			log, err := s.q.ListDeliveriesWhere(s.ctx, store.DeliveryFilter{OwnerID: "acme", EndpointID: ep.ID, Limit: 10})
			must(t, err)
			r.log = deliveryIDs(log)
			eds, err := s.q.EventDeliveries(s.ctx, "acme", old.ID)
			must(t, err)
			r.eventDeliveries = deliveryIDs(eds)
			slices.Sort(r.eventDeliveries)
			failed, err := s.q.FailedDeliveries(s.ctx, ep.ID, 10)
			must(t, err)
			r.failed = deliveryIDs(failed)
			w := store.RecoverWindow{EndpointID: ep.ID, Since: 0, Until: ts(now), States: []string{"failed", "delivered"}}
			rec, err := s.q.RecoverableDeliveries(s.ctx, w, 10)
			must(t, err)
			r.recoverable = deliveryIDs(rec)
			if n, err := s.q.CountRecoverable(s.ctx, w); err != nil || n != len(rec) {
				t.Fatalf("CountRecoverable = %d (%v), want the %d RecoverableDeliveries reads", n, err, len(rec))
			}
			acts, err := s.q.EndpointActivity(s.ctx, "acme", t0)
			must(t, err)
			for _, a := range acts {
				if a.EndpointID == ep3.ID && a.Last != nil {
					r.last = a.Last.ID
				}
			}
			found := func(err error) bool {
				t.Helper()
				if err != nil && apperr.CodeOf(err) != apperr.NotFound {
					t.Fatal(err)
				}
				return err == nil
			}
			_, err = s.q.GetDelivery(s.ctx, "acme", ep.ID, expired.ID)
			r.delivery = found(err)
			_, err = s.q.FindDelivery(s.ctx, ep.ID, old.ID)
			r.byPair = found(err)
			_, err = s.q.FindDelivery(s.ctx, ep2.ID, old.ID)
			r.pendingByPair = found(err)
			_, err = s.q.GetEvent(s.ctx, "acme", old.ID)
			r.event = found(err)
			evs, err := s.q.ListEvents(s.ctx, store.EventFilter{OwnerID: "acme", Since: 0, Until: ts(now), Limit: 10})
			must(t, err)
			for _, e := range evs {
				r.events = append(r.events, e.ID)
			}
			return r
		}

		s.db.KeepFor(30*day, func() time.Time { return now })
		got := read()
		want := reads{log: []string{kept.ID}, eventDeliveries: []string{pending.ID}, failed: []string{kept.ID}, recoverable: []string{kept.ID},
			pendingByPair: true, events: []string{recent.ID}}
		if !equalReads(got.log, want.log, got.eventDeliveries, want.eventDeliveries, got.failed, want.failed, got.recoverable, want.recoverable, got.events, want.events) ||
			got.last != want.last || got.delivery || got.byPair || got.event || !got.pendingByPair {
			t.Errorf("a 30-day window, 40 days on:\n got %+v\nwant %+v", got, want)
		}
		if n := s.count(`SELECT count(*) FROM hookd_deliveries WHERE id = $1`, expired.ID); n != 1 {
			t.Fatalf("the expired delivery's row: %d, want it still there (only hidden)", n)
		}

		s.db.KeepFor(0, nil)
		got = read()
		want = reads{log: []string{kept.ID, expired.ID}, eventDeliveries: sortedIDs(expired.ID, pending.ID, onlyExpired.ID), failed: []string{expired.ID, kept.ID},
			recoverable: []string{expired.ID, kept.ID}, last: onlyExpired.ID, delivery: true, byPair: true, event: true, pendingByPair: true, events: []string{recent.ID, old.ID}}
		if !equalReads(got.log, want.log, got.eventDeliveries, want.eventDeliveries, got.failed, want.failed, got.recoverable, want.recoverable, got.events, want.events) ||
			got.last != want.last || !got.delivery || !got.byPair || !got.event || !got.pendingByPair {
			t.Errorf("no retention:\n got %+v\nwant %+v", got, want)
		}
	})
}

func sortedIDs(ids ...string) []string {
	slices.Sort(ids)
	return ids
}

// equalReads compares pairs of id lists (got, want, got, want, …), nil
// and empty alike.
func equalReads(pairs ...[]string) bool {
	for i := 0; i+1 < len(pairs); i += 2 {
		if len(pairs[i]) != len(pairs[i+1]) || (len(pairs[i]) > 0 && !slices.Equal(pairs[i], pairs[i+1])) {
			return false
		}
	}
	return true
}

// TestRetentionSparesCutoffPartition (PostgreSQL, daily partitions, a
// 30-day window): one retention pass
//   - names the partition that holds the cutoff as the one the row loops
//     spare, and the row loops delete none of its expired rows (their
//     statement does not read it at all);
//   - drops an expired partition whose deliveries all finished before the
//     window, and keeps one holding a delivery that finished within it
//     (a late retry), whose expired rows the row loops delete instead;
//   - spares nothing with a window of an hour, where a day's partition is
//     more than a tenth of it: those rows go one by one.
func TestRetentionSparesCutoffPartition(t *testing.T) {
	t.Parallel()
	_, s, now := partitionedDays(t, 40)
	ep := s.endpoint("acme", 1)
	const window = 30 * day
	cutoff := now.Add(-window)
	cutDay := cutoff.Truncate(day)
	at := s.eventOn
	spared := at(cutDay.Add(cutoff.Sub(cutDay) / 2))
	s.finished(ep, spared, endpoint.Delivered, spared.CreatedAt)
	dropped := at(cutDay.AddDate(0, 0, -3).Add(time.Hour))
	s.finished(ep, dropped, endpoint.Delivered, dropped.CreatedAt)
	late, lateDone := at(cutDay.AddDate(0, 0, -5).Add(time.Hour)), at(cutDay.AddDate(0, 0, -5).Add(2*time.Hour))
	s.finished(ep, late, endpoint.Failed, now.Add(-time.Hour))
	s.finished(ep, lateDone, endpoint.Delivered, lateDone.CreatedAt)

	pass, err := s.db.DropExpiredPartitions(s.ctx, now, window)
	must(t, err)
	if want := (store.IDRange{From: cutDay, To: cutDay.Add(day)}); pass.Spare != want {
		t.Errorf("spare %v, want the cutoff's day %v", pass.Spare, want)
	}
	if pass.Dropped < 1 {
		t.Errorf("dropped %d partitions, want the expired ones", pass.Dropped)
	}
	for _, c := range []struct {
		e    *event.Event
		left int
	}{{spared, 1}, {dropped, 0}, {late, 1}, {lateDone, 1}} {
		if n := s.count(`SELECT count(*) FROM hookd_deliveries WHERE event_id = $1`, c.e.ID); n != c.left {
			t.Errorf("after the drop, %d deliveries of the event of %s, want %d", n, c.e.CreatedAt, c.left)
		}
	}

	cond := `finished_at < $1 AND (event_id < $2 OR event_id >= $3)`
	var plan []string
	rows, err := s.db.Pool().Query(s.ctx, `EXPLAIN SELECT id FROM hookd_deliveries WHERE `+cond+` ORDER BY finished_at LIMIT 10`,
		ts(cutoff), store.IDBound(pass.Spare.From), store.IDBound(pass.Spare.To))
	must(t, err)
	for rows.Next() {
		var line string
		must(t, rows.Scan(&line))
		plan = append(plan, line)
	}
	must(t, rows.Err())
	if p := strings.Join(plan, "\n"); strings.Contains(p, "_p"+cutDay.Format("20060102")) {
		t.Errorf("the row loop's read names the spared partition:\n%s", p)
	}

	n, err := s.q.PruneDeliveries(s.ctx, ts(cutoff), pass.Spare, 1000)
	must(t, err)
	if n != 1 || s.count(`SELECT count(*) FROM hookd_deliveries WHERE event_id = $1`, lateDone.ID) != 0 {
		t.Errorf("the row loop deleted %d deliveries, want the kept partition's one expired delivery", n)
	}
	events, err := s.q.PruneEvents(s.ctx, ts(cutoff), pass.Spare, 1000)
	must(t, err)
	if events != 2 || s.count(`SELECT count(*) FROM hookd_events WHERE id = $1`, spared.ID) != 1 {
		t.Errorf("the row loop deleted %d events, want the kept partition's 2 and not the spared one", events)
	}
	if n := s.count(`SELECT count(*) FROM hookd_deliveries WHERE event_id = $1`, spared.ID); n != 1 {
		t.Errorf("the spared partition's expired delivery: %d rows, want it left to the drop", n)
	}

	// A delivery finished before the one-hour cutoff, in the partition
	// that holds that cutoff (not wholly expired, so not dropped),
	// whatever the time of day.
	hourCut := now.Add(-time.Hour)
	recent := at(later(hourCut.Truncate(day), hourCut.Add(-30*time.Minute)))
	s.finished(ep, recent, endpoint.Delivered, recent.CreatedAt.Add(hourCut.Sub(recent.CreatedAt)/2))
	hour, err := s.db.DropExpiredPartitions(s.ctx, now, time.Hour)
	must(t, err)
	if !hour.Spare.IsZero() {
		t.Errorf("a one-hour window spares %v, want nothing (a day is over a tenth of it)", hour.Spare)
	}
	if n, err := s.q.PruneDeliveries(s.ctx, ts(now.Add(-time.Hour)), hour.Spare, 1000); err != nil || n != 1 {
		t.Errorf("the one-hour window's row loop deleted %d (%v), want the one finished before the cutoff, in the cutoff's partition", n, err)
	}
}

// TestHourlyOutcomes: an endpoint's deliveries counted by the hour they
// were created in and their state, each hour on its own, an hour with
// none zero and a delivery outside the hours not counted (PostgreSQL
// reads all the hours in one statement, SQLite one an hour).
func TestHourlyOutcomes(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		ep, other := s.endpoint("acme", 1), s.endpoint("acme", 1)
		since := t0.Truncate(time.Hour)
		at := func(ep *endpoint.Endpoint, created time.Time, state endpoint.DeliveryState) {
			ev := eventAt("acme", "", created)
			s.insertEvents(ev)
			s.finished(ep, ev, state, created.Add(time.Second))
		}
		at(ep, since.Add(30*time.Minute), endpoint.Delivered)
		at(ep, since.Add(40*time.Minute), endpoint.Delivered)
		at(ep, since.Add(90*time.Minute), endpoint.Failed)
		at(ep, since.Add(95*time.Minute), endpoint.Pending)
		at(ep, since.Add(4*time.Hour), endpoint.Delivered)       // past the hours asked
		at(other, since.Add(10*time.Minute), endpoint.Delivered) // another endpoint's
		at(ep, since.Add(-time.Minute), endpoint.Failed)         // before them
		got, err := s.q.HourlyOutcomes(s.ctx, ep.ID, since, 3)
		must(t, err)
		want := []store.HourCount{{Delivered: 2}, {Failed: 1, Pending: 1}, {}}
		if !slices.Equal(got, want) {
			t.Errorf("hourly outcomes %+v, want %+v", got, want)
		}
	})
}

// eventOn writes an event of acme's at d, with an id of that time.
func (s *bundle) eventOn(d time.Time) *event.Event {
	e := eventAt("acme", "", d)
	s.insertEvents(e)
	return e
}

// fillDay writes n delivered deliveries of ep (PostgreSQL, straight into
// the table, with no events) whose event ids are of time at, created and
// finished a microsecond apart from at: a full day's partition.
func (s *bundle) fillDay(ep *endpoint.Endpoint, at time.Time, n int) {
	s.t.Helper()
	s.exec(`INSERT INTO hookd_deliveries (id, owner_id, endpoint_id, event_id, event_type, state, attempts, created_at, updated_at, finished_at)
		SELECT 'dlv_' || $2 || '_' || i, $1, $3, $2 || lpad(i::text, 16, '0'), 'invoice.paid', 'delivered', 1, $4::bigint + i, $4::bigint + i, $4::bigint + i
		FROM generate_series(1, $5::int) i`, ep.OwnerID, idAt(at)[:14], ep.ID, ts(at), n)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// TestEndpointActivityPartitions: on partitioned tables the endpoint
// list's day count reads the day's partitions, and an old one only when
// it can hold a delivery created within the day: a resend of an event
// of 39 days ago (its delivery created now, in that day's partition) is
// counted, a day whose deliveries all finished long ago is not read, and
// a day holding a pending delivery is read. The counts are what the
// parent table's count says.
func TestEndpointActivityPartitions(t *testing.T) {
	t.Parallel()
	_, s, now := partitionedDays(t, 41)
	ep := s.endpoint("acme", 1)
	day0 := now.Truncate(day)
	at := s.eventOn
	today := at(now.Add(-time.Minute))
	s.finished(ep, today, endpoint.Delivered, now)
	s.finished(ep, at(now.Add(-2*time.Minute)), endpoint.Pending, now)
	quiet := at(day0.AddDate(0, 0, -40).Add(time.Hour))
	s.finished(ep, quiet, endpoint.Delivered, quiet.CreatedAt)
	resent := at(day0.AddDate(0, 0, -39).Add(time.Hour))
	s.finished(ep, resent, endpoint.Delivered, resent.CreatedAt)
	later := s.endpoint("acme", 1) // made after the event: a resend to it makes a new delivery of the old event
	again := newDelivery("acme", later.ID, resent.ID, now.Add(-time.Minute))
	s.deliveries(again)
	must(t, s.q.RecordAttempt(s.ctx, store.Attempt{DeliveryID: again.ID, Sent: true, Status: 500, State: endpoint.Failed, Now: ts(now)}))
	idle := s.endpoint("acme", 1) // nothing within the day: its last delivery is 40 days old
	idleLast := s.finished(idle, quiet, endpoint.Delivered, quiet.CreatedAt)
	waiting := at(day0.AddDate(0, 0, -38).Add(time.Hour))
	s.finished(ep, waiting, endpoint.Pending, now)

	since := now.Add(-24 * time.Hour)
	parts, ok, err := s.q.ActivityPartitions(s.ctx, since)
	must(t, err)
	name := func(d time.Time) string { return "hookd_deliveries_p" + d.Format("20060102") }
	read := strings.Join(parts, " ")
	if !ok {
		t.Fatal("partitioned tables: the count reads the parent")
	}
	for _, want := range []string{name(day0), name(day0.AddDate(0, 0, -39)), name(day0.AddDate(0, 0, -38))} {
		if !strings.Contains(read, want) {
			t.Errorf("the count reads %v, not %s", parts, want)
		}
	}
	for _, not := range []string{name(day0.AddDate(0, 0, -40)), name(day0.AddDate(0, 0, -20)), "hookd_deliveries_default"} {
		if strings.Contains(read, not) {
			t.Errorf("the count reads %s (%v): nothing there was created within the day", not, parts)
		}
	}
	// The test of a full day's partition, in the plan a connection caches
	// (generic): a step into an index for each half, not a scan of the
	// partition for a delivery finished after $1 (which a generic plan of
	// an EXISTS chose: it expects a third of the rows to match).
	full := day0.AddDate(0, 0, -20)
	s.fillDay(ep, full.Add(time.Hour), 20000)
	s.exec(`ANALYZE hookd_deliveries`)
	pc, err := s.db.Pool().Acquire(s.ctx)
	must(t, err)
	conn := pc.Hijack()
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	must(t, execSimple(s.ctx, conn, `SET plan_cache_mode = force_generic_plan`))
	if plan := pgGenericPlan(t, conn, "live", store.LiveSinceSQL([]string{name(full)}), ts(since)); strings.Contains(plan, "Seq Scan") {
		t.Errorf("the test of a full partition scans it:\n%s", plan)
	}

	acts, err := s.q.EndpointActivity(s.ctx, "acme", since)
	must(t, err)
	if len(acts) != 3 {
		t.Fatalf("activity of %d endpoints, want 3", len(acts))
	}
	for i, c := range []struct {
		ep                 *endpoint.Endpoint
		deliveries, failed int
		last               string
	}{{ep, 2, 0, ""}, {later, 1, 1, again.ID}, {idle, 0, 0, idleLast.ID}} { // today's two; the resend, failed; nothing
		truth := s.count(`SELECT count(*) FROM hookd_deliveries WHERE endpoint_id = $1 AND created_at >= $2`, c.ep.ID, ts(since))
		if a := acts[i]; a.EndpointID != c.ep.ID || a.Deliveries != c.deliveries || truth != c.deliveries || a.Failures != c.failed {
			t.Errorf("endpoint %d: %s %d deliveries, %d failures (the table: %d); want %s %d, %d", i, a.EndpointID, a.Deliveries, a.Failures, truth, c.ep.ID, c.deliveries, c.failed)
		}
		var want string
		must(t, s.db.Pool().QueryRow(s.ctx, `SELECT id FROM hookd_deliveries WHERE endpoint_id = $1 AND attempts > 0 ORDER BY id DESC LIMIT 1`, c.ep.ID).Scan(&want))
		if a := acts[i]; a.Last == nil || a.Last.ID != want || c.last != "" && want != c.last {
			t.Errorf("endpoint %d: last delivery %v, want %s (%s)", i, a.Last, want, c.last)
		}
	}
}
