package store_test

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/store"
)

// TestClaimFresh: a drain claims the endpoint's oldest fresh deliveries —
// pending, never attempted, due, unclaimed — up to a limit; a claim expires;
// released claims are claimable again at once.
func TestClaimFresh(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		ep := s.endpoint("acme", 1)
		other := s.endpoint("acme", 1)
		var fresh []string
		for i := range 5 {
			d := newDelivery("acme", ep.ID, s.event("acme").ID, t0.Add(time.Duration(i)*time.Millisecond))
			s.deliveries(d)
			fresh = append(fresh, d.ID)
		}
		later := newDelivery("acme", ep.ID, s.event("acme").ID, t0)
		*later.NextAttemptAt = t0.Add(time.Hour) // not due
		tried := newDelivery("acme", ep.ID, s.event("acme").ID, t0)
		elsewhere := newDelivery("acme", other.ID, s.event("acme").ID, t0)
		s.deliveries(later, tried, elsewhere)
		must(t, s.q.RecordAttempt(s.ctx, store.Attempt{DeliveryID: tried.ID, Sent: true, Status: 500, State: endpoint.Pending, Now: ts(t0)}))

		now, until := ts(t0.Add(time.Second)), ts(t0.Add(21*time.Second))
		freshDue := func(endpointID string, at int64) bool {
			t.Helper()
			due, err := s.q.FreshDue(s.ctx, endpointID, at)
			must(t, err)
			return due
		}
		if !freshDue(ep.ID, now) || !freshDue(other.ID, now) {
			t.Fatal("FreshDue = false with fresh deliveries due")
		}
		got, err := s.q.ClaimFresh(s.ctx, ep.ID, "", 3, now, until)
		must(t, err)
		slices.Sort(got)
		if !slices.Equal(got, fresh[:3]) {
			t.Fatalf("first claim %v, want the 3 oldest fresh %v", got, fresh[:3])
		}
		got, err = s.q.ClaimFresh(s.ctx, ep.ID, "", 10, now, until)
		must(t, err)
		if !sameSet(got, fresh[3:]) {
			t.Fatalf("second claim %v, want the other fresh ones %v (not the claimed, the attempted, the not-yet-due, another endpoint's)", got, fresh[3:])
		}
		// A drain's cursor: reads start past the last id it read.
		// (At until the claims have expired; the later one is not due.)
		batch, err := s.q.FreshAttempts(s.ctx, ep.ID, fresh[2], 10, until)
		must(t, err)
		var ids []string
		for _, a := range batch {
			ids = append(ids, a.Delivery.ID)
		}
		if !slices.Equal(ids, fresh[3:]) {
			t.Fatalf("FreshAttempts past %s = %v, want %v", fresh[2], ids, fresh[3:])
		}
		if got, err = s.q.ClaimFresh(s.ctx, ep.ID, "", 10, now, until); err != nil || len(got) != 0 {
			t.Fatalf("third claim %v %v, want nothing left", got, err)
		}
		// FreshDue sees what a claim would: nothing while all are claimed
		// (the attempted and the not-yet-due do not count) ...
		if freshDue(ep.ID, now) {
			t.Fatal("FreshDue = true with every fresh delivery claimed")
		}
		// ... and the not-yet-due one once it is due and the claims expired.
		if !freshDue(ep.ID, ts(t0.Add(2*time.Hour))) {
			t.Fatal("FreshDue = false once claims expired and the later delivery is due")
		}
		must(t, s.q.ReleaseClaims(s.ctx, fresh[:2]))
		if got, err = s.q.ClaimFresh(s.ctx, ep.ID, fresh[0], 10, now, until); err != nil || !slices.Equal(got, fresh[1:2]) {
			t.Fatalf("claim past %s: %v (err %v), want only %s", fresh[0], got, err, fresh[1])
		}
		must(t, s.q.ReleaseClaims(s.ctx, fresh[1:2]))
		if !freshDue(ep.ID, now) {
			t.Fatal("FreshDue = false after claims were released")
		}
		if got, err = s.q.ClaimFresh(s.ctx, ep.ID, "", 10, now, until); err != nil || !sameSet(got, fresh[:2]) {
			t.Fatalf("after release: claimed %v (err %v), want %v", got, err, fresh[:2])
		}
		// Claims expire: a drain that died holds nothing after `until`.
		if got, err = s.q.ClaimFresh(s.ctx, ep.ID, "", 10, until, until+1); err != nil || !sameSet(got, fresh) {
			t.Fatalf("after expiry: claimed %v (err %v), want all fresh %v", got, err, fresh)
		}
	})
}

// TestClaimFreshConcurrent: drains of one endpoint's slots claiming at once
// get disjoint sets that together hold every fresh delivery.
func TestClaimFreshConcurrent(t *testing.T) {
	t.Parallel()
	const claimers, deliveries = 6, 60
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		ep := s.endpoint("acme", claimers)
		var ds []*endpoint.Delivery
		for i := range deliveries {
			ds = append(ds, newDelivery("acme", ep.ID, s.event("acme").ID, t0.Add(time.Duration(i)*time.Millisecond)))
		}
		s.deliveries(ds...)
		now := ts(t0.Add(time.Second))
		var mu sync.Mutex
		seen := map[string]int{}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range claimers {
			wg.Go(func() {
				<-start
				for {
					ids, err := s.q.ClaimFresh(s.ctx, ep.ID, "", 4, now, now+20e6)
					if err != nil {
						t.Errorf("ClaimFresh: %v", err)
						return
					}
					if len(ids) == 0 {
						return
					}
					mu.Lock()
					for _, id := range ids {
						seen[id]++
					}
					mu.Unlock()
				}
			})
		}
		close(start)
		wg.Wait()
		if len(seen) != deliveries {
			t.Fatalf("%d of %d deliveries claimed", len(seen), deliveries)
		}
		for id, n := range seen {
			if n != 1 {
				t.Fatalf("delivery %s claimed %d times", id, n)
			}
		}
	})
}

// TestLoadAttempts: one query loads a batch with endpoint, owner and event,
// oldest first; ids that no longer exist are skipped.
func TestLoadAttempts(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		ep := s.endpoint("acme", 1)
		var ids []string
		for i := range 3 {
			d := newDelivery("acme", ep.ID, s.event("acme").ID, t0.Add(time.Duration(i)*time.Millisecond))
			s.deliveries(d)
			ids = append(ids, d.ID)
		}
		got, err := s.q.LoadAttempts(s.ctx, []string{ids[2], "dlv_gone", ids[0], ids[1]})
		must(t, err)
		if len(got) != 3 {
			t.Fatalf("loaded %d, want 3", len(got))
		}
		for i, a := range got {
			if a.Delivery.ID != ids[i] || a.Endpoint.ID != ep.ID || a.Endpoint.URL != ep.URL || a.Owner.ID != "acme" || a.Event == nil || a.Event.ID != a.Delivery.EventID {
				t.Fatalf("attempt %d: delivery %s endpoint %+v owner %s event %+v", i, a.Delivery.ID, a.Endpoint, a.Owner.ID, a.Event)
			}
		}
		if got, err := s.q.LoadAttempts(s.ctx, nil); err != nil || got != nil {
			t.Fatalf("no ids: %v %v", got, err)
		}
	})
}

// TestLoadAttemptsSharesDecodes: one read's rows of an endpoint share its
// decoded endpoint, and rows of one owner share the owner while the
// attributes its events captured are the same; rows of endpoints and
// captures in between keep their own (interleaved, so a reused decode
// would show as another row's event types, headers or attributes).
func TestLoadAttemptsSharesDecodes(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		mk := func(types []string, headers map[string]string, secret []byte) *endpoint.Endpoint {
			e := newEndpoint("acme", 1)
			e.EventTypes, e.Headers, e.SecretSealed = types, headers, secret
			must(t, s.db.InTx(s.ctx, store.TxOptions{}, func(tx *store.Q) error { return tx.CreateEndpoint(s.ctx, e) }))
			return e
		}
		a := mk([]string{"invoice.*", "order.paid"}, map[string]string{"X-A": "a"}, []byte{1, 1, 1, 1})
		b := mk([]string{"user.created"}, map[string]string{"X-B": "b", "X-C": "c"}, []byte{2, 2})
		captured := s.event("acme")
		s.exec(`UPDATE hookd_events SET owner_attributes = $1 WHERE id = $2`, `{"app":"then"}`, captured.ID)
		type want struct {
			ep    *endpoint.Endpoint
			attrs string
		}
		var ids []string
		wants := map[string]want{}
		for i, w := range []want{{a, "acme"}, {a, "acme"}, {b, "acme"}, {a, "then"}, {a, "acme"}, {b, "then"}} {
			ev := s.event("acme")
			if w.attrs == "then" {
				ev = captured
			}
			d := newDelivery("acme", w.ep.ID, ev.ID, t0.Add(time.Duration(i)*time.Millisecond))
			s.deliveries(d)
			ids = append(ids, d.ID)
			wants[d.ID] = w
		}
		got, err := s.q.LoadAttempts(s.ctx, ids)
		must(t, err)
		if len(got) != len(ids) {
			t.Fatalf("loaded %d, want %d", len(got), len(ids))
		}
		for i, at := range got {
			w := wants[at.Delivery.ID]
			if at.Endpoint.ID != w.ep.ID || !slices.Equal(at.Endpoint.EventTypes, w.ep.EventTypes) || !maps.Equal(at.Endpoint.Headers, w.ep.Headers) ||
				!bytes.Equal(at.Endpoint.SecretSealed, w.ep.SecretSealed) {
				t.Errorf("row %d: endpoint %s types %v headers %v secret %v, want %s %v %v %v", i, at.Endpoint.ID, at.Endpoint.EventTypes, at.Endpoint.Headers,
					at.Endpoint.SecretSealed, w.ep.ID, w.ep.EventTypes, w.ep.Headers, w.ep.SecretSealed)
			}
			if at.Owner.ID != "acme" || at.Owner.Attributes["app"] != w.attrs || at.Owner.Profile != "standard" {
				t.Errorf("row %d: owner %+v, want acme with app=%s", i, at.Owner, w.attrs)
			}
		}
		// Rows 0 and 1 (same endpoint, same attributes) share both decodes;
		// row 2 (another endpoint) has its own endpoint.
		if got[0].Endpoint != got[1].Endpoint || got[0].Owner != got[1].Owner {
			t.Error("consecutive rows of one endpoint and capture did not share their decodes")
		}
		if got[1].Endpoint == got[2].Endpoint {
			t.Error("rows of two endpoints share one endpoint")
		}
	})
}

// TestRecordDrained: a drain's successes are recorded and their River jobs
// deleted together; a delivery settled meanwhile (not pending) is left as
// it is.
func TestRecordDrained(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		ep := s.endpoint("acme", 1)
		a, b, c := newDelivery("acme", ep.ID, s.event("acme").ID, t0), newDelivery("acme", ep.ID, s.event("acme").ID, t0), newDelivery("acme", ep.ID, s.event("acme").ID, t0)
		a.JobID, b.JobID, c.JobID = 11, 12, 13
		s.deliveries(a, b, c)
		must(t, s.q.RecordAttempt(s.ctx, store.Attempt{DeliveryID: c.ID, Error: "endpoint disabled", State: endpoint.Failed, Now: ts(t0)}))
		now := t0.Add(time.Second)
		jobs := s.jobs(3)
		const holder = 42 // the lease holder's job, which sent them
		must(t, s.db.RecordDrained(s.ctx, []store.Delivered{{DeliveryID: a.ID, Status: 200, SentBy: holder}, {DeliveryID: b.ID, Status: 204, SentBy: holder}, {DeliveryID: c.ID, Status: 200, SentBy: holder}}, jobs[:2], ts(now)))
		if n := s.count(`SELECT count(*) FROM river_job WHERE kind = $1`, outboxArgs{}.Kind()); n != 1 {
			t.Fatalf("%d jobs left, want 1 (the two named deleted)", n)
		}
		for _, want := range []struct {
			d      *endpoint.Delivery
			state  endpoint.DeliveryState
			status int
			tries  int
			job    int64
		}{{a, endpoint.Delivered, 200, 1, holder}, {b, endpoint.Delivered, 204, 1, holder}, {c, endpoint.Failed, 0, 0, 13}} {
			got, err := s.q.FindDelivery(s.ctx, ep.ID, want.d.EventID)
			must(t, err)
			if got.State != want.state || got.LastStatus != want.status || got.Attempts != want.tries || got.JobID != want.job {
				t.Fatalf("%s: state %s status %d attempts %d job %d; want %s %d %d %d", got.ID, got.State, got.LastStatus, got.Attempts, got.JobID, want.state, want.status, want.tries, want.job)
			}
			if want.state == endpoint.Delivered && (got.FinishedAt == nil || !got.FinishedAt.Equal(now) || got.NextAttemptAt != nil) {
				t.Fatalf("%s: finished %v next %v", got.ID, got.FinishedAt, got.NextAttemptAt)
			}
		}
		must(t, s.db.RecordDrained(s.ctx, nil, nil, ts(now)))
	})
}

// TestDeliveryPending: the short read a busy job makes — pending for its
// own job, settled, another job's, gone.
func TestDeliveryPending(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		ep := s.endpoint("acme", 1)
		d := newDelivery("acme", ep.ID, s.event("acme").ID, t0)
		d.JobID = 7
		s.deliveries(d)
		for _, c := range []struct {
			job  int64
			want bool
		}{{7, true}, {8, false}} {
			got, err := s.q.DeliveryPending(s.ctx, ep.ID, d.EventID, c.job)
			must(t, err)
			if got != c.want {
				t.Fatalf("job %d: pending %v, want %v", c.job, got, c.want)
			}
		}
		must(t, s.db.RecordDrained(s.ctx, []store.Delivered{{DeliveryID: d.ID, Status: 200}}, nil, ts(t0)))
		if got, err := s.q.DeliveryPending(s.ctx, ep.ID, d.EventID, 7); err != nil || got {
			t.Fatalf("after delivery: pending %v err %v, want false", got, err)
		}
		_, err := s.q.DeliveryPending(s.ctx, ep.ID, "evt_gone", 7)
		wantCode(t, err, apperr.NotFound)
	})
}

// TestWakeDeferred: a holder that lets go without draining wakes the job
// of the endpoint's oldest fresh delivery whose job has never run (one a
// fanout deferred), once each, and none while another holder has a slot;
// a job that has run (met the slot busy and snoozed) is left to come back
// by itself.
func TestWakeDeferred(t *testing.T) {
	setup(t, func(t *testing.T, s *bundle) {
		workers := river.NewWorkers()
		river.AddWorker(workers, river.WorkFunc(func(context.Context, *river.Job[outboxArgs]) error { return nil }))
		client, err := s.db.NewRiver(&river.Config{Workers: workers}) // not started: nothing is worked
		must(t, err)
		s.owner("acme")
		ep := s.endpoint("acme", 1)
		later := time.Now().Add(time.Hour)
		var ds []*endpoint.Delivery
		for i, name := range []string{"ran", "deferred", "newer"} {
			d := newDelivery("acme", ep.ID, s.event("acme").ID, t0.Add(time.Duration(i)*time.Millisecond))
			must(t, s.db.InTx(s.ctx, store.TxOptions{}, func(q *store.Q) error {
				res, err := q.InsertJobs(s.ctx, []river.InsertManyParams{{Args: outboxArgs{EventID: name}, InsertOpts: &river.InsertOpts{ScheduledAt: later}}})
				if err == nil {
					d.JobID = res[0].Job.ID
				}
				return err
			}))
			s.deliveries(d)
			ds = append(ds, d)
		}
		// The oldest one's job ran once and snoozed.
		if _, err := s.q.Exec(s.ctx, `UPDATE river_job SET attempted_at = created_at, attempt = 1 WHERE id = $1`, ds[0].JobID); err != nil {
			t.Fatal(err)
		}
		states := func() []string {
			var got []string
			for _, d := range ds {
				j, err := client.JobGet(s.ctx, d.JobID)
				must(t, err)
				got = append(got, string(j.State))
			}
			return got
		}
		now := ts(t0.Add(time.Second))
		// While another holder has the slot, nothing: its release looks.
		slot, ok, err := s.q.TakeLease(s.ctx, ep.ID, 99, now, now+time.Minute.Microseconds())
		must(t, err)
		if !ok {
			t.Fatal("the lease was not free")
		}
		must(t, s.db.WakeDeferred(s.ctx, ep.ID, now))
		if got, want := states(), []string{"scheduled", "scheduled", "scheduled"}; !slices.Equal(got, want) {
			t.Fatalf("with the slot held the jobs (ran, deferred, newer) are %v, want %v", got, want)
		}
		must(t, s.q.ReleaseLease(s.ctx, ep.ID, slot, 99))
		for i, want := range [][]string{
			{"scheduled", "available", "scheduled"},
			{"scheduled", "available", "available"},
			{"scheduled", "available", "available"}, // nothing left to wake
		} {
			must(t, s.db.WakeDeferred(s.ctx, ep.ID, now))
			if got := states(); !slices.Equal(got, want) {
				t.Fatalf("after wake %d the jobs (ran, deferred, newer) are %v, want %v", i+1, got, want)
			}
		}
	})
}
