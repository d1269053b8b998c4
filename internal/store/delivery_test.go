package store_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/store"
)

// TestInsertDeliveries: unique per (endpoint, event); inserting again
// returns only the pairs that were new (fanout run twice enqueues once),
// across the statement's 200-row chunks too.
func TestInsertDeliveries(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		ep1 := s.endpoint("acme", 1)
		ep2 := s.endpoint("acme", 1)
		ev := s.event("acme")

		first := []*endpoint.Delivery{newDelivery("acme", ep1.ID, ev.ID, t0), newDelivery("acme", ep2.ID, ev.ID, t0)}
		got, err := s.q.InsertDeliveries(s.ctx, first)
		must(t, err)
		if ids := deliveryIDs(got); !sameSet(ids, deliveryIDs(first)) {
			t.Fatalf("first insert returned %v", ids)
		}

		// Again, with fresh delivery ids for the same pairs and one new pair.
		ev2 := s.event("acme")
		again := []*endpoint.Delivery{newDelivery("acme", ep1.ID, ev.ID, t0), newDelivery("acme", ep2.ID, ev.ID, t0), newDelivery("acme", ep1.ID, ev2.ID, t0)}
		got, err = s.q.InsertDeliveries(s.ctx, again)
		must(t, err)
		if ids := deliveryIDs(got); !slices.Equal(ids, []string{again[2].ID}) {
			t.Fatalf("second insert returned %v, want only the new pair %s", ids, again[2].ID)
		}
		d, err := s.q.FindDelivery(s.ctx, ep1.ID, ev.ID)
		must(t, err)
		if d.ID != first[0].ID {
			t.Fatalf("the pair's delivery is %s, want the first %s (ids are stable)", d.ID, first[0].ID)
		}

		// Many at once (several statements): 450 new + 3 known.
		var many []*endpoint.Delivery
		for i := range 450 {
			many = append(many, newDelivery("acme", ep2.ID, fmt.Sprintf("evt_%04d", i), t0))
		}
		many = append(many, again...)
		got, err = s.q.InsertDeliveries(s.ctx, many)
		must(t, err)
		if len(got) != 450 {
			t.Fatalf("inserted %d of 450 new pairs", len(got))
		}
		if n := s.count(`SELECT count(*) FROM hookd_deliveries`); n != 453 {
			t.Fatalf("%d delivery rows, want 453", n)
		}
		got, err = s.q.InsertDeliveries(s.ctx, many)
		must(t, err)
		if len(got) != 0 {
			t.Fatalf("re-inserting all: %d returned, want 0", len(got))
		}
	})
}

func deliveryIDs(ds []*endpoint.Delivery) []string {
	return pluck(ds, func(d *endpoint.Delivery) string { return d.ID })
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func TestDeliveryAttempts(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		ep := s.endpoint("acme", 1)
		ev := s.event("acme")
		d := newDelivery("acme", ep.ID, ev.ID, t0)
		d.JobID = 41 // fanout inserts the job first, then the delivery with its id
		s.deliveries(d)
		other := s.endpoint("acme", 1)
		s.deliveries(newDelivery("acme", other.ID, s.event("acme").ID, t0)) // another event's
		// The fanout names the owner's endpoints, in chunks of 1,000: the
		// one with a delivery comes last, in the second chunk.
		ids := []string{other.ID}
		for i := range 999 {
			ids = append(ids, fmt.Sprintf("ep_none_%d", i))
		}
		have, err := s.q.EndpointsWithDelivery(s.ctx, ev.ID, append(ids, ep.ID))
		must(t, err)
		if len(have) != 1 || !have[ep.ID] {
			t.Fatalf("EndpointsWithDelivery = %v, want only %s", have, ep.ID)
		}
		if have, err := s.q.EndpointsWithDelivery(s.ctx, ev.ID, ids); err != nil || len(have) != 0 {
			t.Fatalf("EndpointsWithDelivery of endpoints without a delivery of the event = %v, %v; want none", have, err)
		}

		got, err := s.q.FindDelivery(s.ctx, ep.ID, ev.ID)
		must(t, err)
		jsonEq(t, "FindDelivery", got, d)
		_, err = s.q.FindDelivery(s.ctx, ep.ID, "evt_missing")
		wantCode(t, err, apperr.NotFound)

		check := func(what string, attempts int, state endpoint.DeliveryState, job int64, status int, errText string, next, finished *time.Time) {
			t.Helper()
			got, err := s.q.FindDelivery(s.ctx, ep.ID, ev.ID)
			must(t, err)
			if got.Attempts != attempts || got.State != state || got.JobID != job || got.LastStatus != status || got.LastError != errText ||
				!timeEq(got.NextAttemptAt, next) || !timeEq(got.FinishedAt, finished) {
				t.Fatalf("%s: got attempts %d state %s job %d status %d error %q next %v finished %v;\nwant attempts %d state %s job %d status %d error %q next %v finished %v",
					what, got.Attempts, got.State, got.JobID, got.LastStatus, got.LastError, got.NextAttemptAt, got.FinishedAt,
					attempts, state, job, status, errText, next, finished)
			}
		}
		check("after insert", 0, endpoint.Pending, 41, 0, "", d.NextAttemptAt, nil)

		// A snooze (busy / Retry-After) is no attempt; JobID 0 keeps the job.
		at1 := t0.Add(time.Second)
		next1 := t0.Add(time.Minute)
		must(t, s.q.RecordAttempt(s.ctx, store.Attempt{DeliveryID: d.ID, Sent: false, Status: 429, Error: "retry after 60s", State: endpoint.Pending, NextAttemptAt: ptr(ts(next1)), Now: ts(at1)}))
		check("snooze", 0, endpoint.Pending, 41, 429, "retry after 60s", &next1, nil)

		// A failed send is an attempt.
		next2 := t0.Add(5 * time.Minute)
		must(t, s.q.RecordAttempt(s.ctx, store.Attempt{DeliveryID: d.ID, Sent: true, Status: 500, Error: "HTTP 500", State: endpoint.Pending, NextAttemptAt: ptr(ts(next2)), JobID: 41, Now: ts(at1)}))
		check("retry", 1, endpoint.Pending, 41, 500, "HTTP 500", &next2, nil)

		// Success finishes it, under a new job id (e.g. after redeliver).
		at3 := t0.Add(6 * time.Minute)
		must(t, s.q.RecordAttempt(s.ctx, store.Attempt{DeliveryID: d.ID, Sent: true, Status: 204, State: endpoint.Delivered, JobID: 42, Now: ts(at3)}))
		check("delivered", 2, endpoint.Delivered, 42, 204, "", nil, &at3)
		got, err = s.q.FindDelivery(s.ctx, ep.ID, ev.ID)
		must(t, err)
		if !got.UpdatedAt.Equal(at3) || !got.CreatedAt.Equal(t0) {
			t.Fatalf("times: created %v updated %v", got.CreatedAt, got.UpdatedAt)
		}
	})
}

func ptr[T any](v T) *T { return &v }

func timeEq(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}

// TestListDeliveries: newest first, paged with before; another owner sees
// nothing; FailedDeliveries oldest first; ResetDelivery brings back only
// failed ones; OwnsJob answers per owner.
func TestListDeliveries(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		s.owner("beta")
		ep := s.endpoint("acme", 1)
		other := s.endpoint("acme", 1)
		var ds []*endpoint.Delivery
		for i := range 5 {
			d := newDelivery("acme", ep.ID, fmt.Sprintf("evt_%d", i), t0.Add(time.Duration(i)*time.Millisecond))
			d.JobID = int64(100 + i)
			ds = append(ds, d)
		}
		s.deliveries(ds...)
		s.deliveries(newDelivery("acme", other.ID, "evt_0", t0))

		page1, err := s.q.ListDeliveries(s.ctx, "acme", ep.ID, 2, "")
		must(t, err)
		page2, err := s.q.ListDeliveries(s.ctx, "acme", ep.ID, 2, page1[len(page1)-1].ID)
		must(t, err)
		page3, err := s.q.ListDeliveries(s.ctx, "acme", ep.ID, 2, page2[len(page2)-1].ID)
		must(t, err)
		got := append(append(deliveryIDs(page1), deliveryIDs(page2)...), deliveryIDs(page3)...)
		want := deliveryIDs(ds)
		slices.Reverse(want)
		if !slices.Equal(got, want) {
			t.Fatalf("pages %v\nwant newest first %v", got, want)
		}
		if len(page3) != 1 {
			t.Fatalf("last page has %d, want 1", len(page3))
		}
		none, err := s.q.ListDeliveries(s.ctx, "beta", ep.ID, 10, "")
		must(t, err)
		if len(none) != 0 {
			t.Fatalf("another owner listed %d deliveries", len(none))
		}

		// Fail 0, 1 and 3; 4 is delivered.
		for _, i := range []int{3, 0, 1} {
			must(t, s.q.RecordAttempt(s.ctx, store.Attempt{DeliveryID: ds[i].ID, Sent: true, Status: 410, Error: "gone", State: endpoint.Failed, Now: ts(t0.Add(time.Hour))}))
		}
		must(t, s.q.RecordAttempt(s.ctx, store.Attempt{DeliveryID: ds[4].ID, Sent: true, Status: 200, State: endpoint.Delivered, Now: ts(t0.Add(time.Hour))}))
		failed, err := s.q.FailedDeliveries(s.ctx, ep.ID, 2)
		must(t, err)
		if ids := deliveryIDs(failed); !slices.Equal(ids, []string{ds[0].ID, ds[1].ID}) {
			t.Fatalf("FailedDeliveries(limit 2) = %v, want the oldest two failed [0 1]", ids)
		}
		failed, err = s.q.FailedDeliveries(s.ctx, other.ID, 10)
		must(t, err)
		if len(failed) != 0 {
			t.Fatalf("other endpoint: %d failed", len(failed))
		}

		now := ts(t0.Add(2 * time.Hour))
		must(t, s.q.ResetDelivery(s.ctx, ds[0].ID, 900, now))
		must(t, s.q.ResetDelivery(s.ctx, ds[4].ID, 901, now)) // delivered: untouched
		d0, err := s.q.FindDelivery(s.ctx, ep.ID, ds[0].EventID)
		must(t, err)
		if d0.State != endpoint.Pending || d0.JobID != 900 || d0.FinishedAt != nil || d0.NextAttemptAt == nil || ts(*d0.NextAttemptAt) != now || ts(d0.UpdatedAt) != now {
			t.Fatalf("after reset: %+v", d0)
		}
		if d0.Attempts != 0 {
			t.Fatalf("reset left attempts at %d; a redelivery starts a fresh budget (attempts counts the new job's)", d0.Attempts)
		}
		d4, err := s.q.FindDelivery(s.ctx, ep.ID, ds[4].EventID)
		must(t, err)
		if d4.State != endpoint.Delivered || d4.JobID != 104 {
			t.Fatalf("reset touched a delivered delivery: %+v", d4)
		}
		failed, err = s.q.FailedDeliveries(s.ctx, ep.ID, 10)
		must(t, err)
		if ids := deliveryIDs(failed); !slices.Equal(ids, []string{ds[1].ID, ds[3].ID}) {
			t.Fatalf("after reset FailedDeliveries = %v", ids)
		}

		for _, c := range []struct {
			owner string
			job   int64
			d     *endpoint.Delivery // whose (endpoint, event) the job's args name
			want  bool
		}{
			{"acme", 900, ds[0], true},
			{"acme", 102, ds[2], true},
			{"beta", 900, ds[0], false},   // another owner's
			{"acme", 100, ds[0], false},   // ds[0]'s job before its reset
			{"acme", 102, ds[3], false},   // args naming another delivery
			{"acme", 12345, ds[1], false}, // no such job
		} {
			got, err := s.q.OwnsJob(s.ctx, c.owner, c.job, c.d.EndpointID, c.d.EventID)
			must(t, err)
			if got != c.want {
				t.Errorf("OwnsJob(%s, %d, %s) = %v, want %v", c.owner, c.job, c.d.EventID, got, c.want)
			}
		}
	})
}

// TestPruneDeliveries: only deliveries finished before the cutoff go,
// in batches; pending ones (never finished) stay whatever their age.
func TestPruneDeliveries(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		ep := s.endpoint("acme", 1)
		cutoff := t0.Add(30 * day)
		finish := func(eventID string, state endpoint.DeliveryState, at time.Time) *endpoint.Delivery {
			d := newDelivery("acme", ep.ID, eventID, t0)
			s.deliveries(d)
			if state != endpoint.Pending {
				must(t, s.q.RecordAttempt(s.ctx, store.Attempt{DeliveryID: d.ID, Sent: true, State: state, Now: ts(at)}))
			}
			return d
		}
		for i := range 3 {
			finish(fmt.Sprintf("evt_old_ok_%d", i), endpoint.Delivered, t0.Add(time.Duration(i)*time.Hour))
		}
		finish("evt_old_failed", endpoint.Failed, t0)
		keep := []*endpoint.Delivery{
			finish("evt_pending", endpoint.Pending, t0),
			finish("evt_at_cutoff", endpoint.Delivered, cutoff),
			finish("evt_new", endpoint.Failed, cutoff.Add(time.Hour)),
		}
		var batches []int64
		for {
			n, err := s.q.PruneDeliveries(s.ctx, ts(cutoff), store.IDRange{}, 3)
			must(t, err)
			if n == 0 {
				break
			}
			batches = append(batches, n)
		}
		if !slices.Equal(batches, []int64{3, 1}) {
			t.Fatalf("prune batches %v, want [3 1]", batches)
		}
		for _, d := range keep {
			if _, err := s.q.FindDelivery(s.ctx, ep.ID, d.EventID); err != nil {
				t.Errorf("%s was pruned: %v", d.EventID, err)
			}
		}
	})
}

// TestEndpointActivity: every endpoint of the owner, in the list's order,
// with its deliveries and failures (failed, or pending after an attempt)
// created since the cut-off, and its latest attempted delivery; an
// endpoint without deliveries has zeros and no Last.
func TestEndpointActivity(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		s.owner("beta")
		busy := s.endpoint("acme", 1)
		idle := s.endpoint("acme", 1)
		foreign := s.endpoint("beta", 1)
		since := t0.Add(time.Hour)
		var ds []*endpoint.Delivery
		for i := range 7 {
			ds = append(ds, newDelivery("acme", busy.ID, fmt.Sprintf("evt_%d", i), since.Add(time.Duration(i-1)*time.Minute)))
		}
		s.deliveries(ds...) // ds[0] is before the cut-off
		s.deliveries(newDelivery("beta", foreign.ID, "evt_0", since))
		at := ts(since.Add(time.Hour))
		attempt := func(i int, status int, state endpoint.DeliveryState) {
			must(t, s.q.RecordAttempt(s.ctx, store.Attempt{DeliveryID: ds[i].ID, Sent: true, Status: status, State: state, Now: at}))
		}
		attempt(0, 500, endpoint.Failed) // before the cut-off: not counted
		attempt(1, 200, endpoint.Delivered)
		attempt(2, 200, endpoint.Delivered)
		attempt(3, 410, endpoint.Failed)
		attempt(4, 500, endpoint.Pending) // retrying: a failure
		// ds[5], ds[6]: pending, never attempted; counted, not failures.

		act, err := s.q.EndpointActivity(s.ctx, "acme", since)
		must(t, err)
		if len(act) != 2 || act[0].EndpointID != busy.ID || act[1].EndpointID != idle.ID {
			t.Fatalf("activity of %d endpoints %v, want busy then idle", len(act), act)
		}
		if a := act[0]; a.Deliveries != 6 || a.Failures != 2 || a.Last == nil || a.Last.ID != ds[4].ID {
			t.Fatalf("busy: %d deliveries, %d failures, last %v; want 6, 2, %s", a.Deliveries, a.Failures, a.Last, ds[4].ID)
		}
		if a := act[1]; a.Deliveries != 0 || a.Failures != 0 || a.Last != nil {
			t.Fatalf("idle: %+v, want nothing", a)
		}
	})
}
