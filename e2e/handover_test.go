package e2e_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/hookd/hookd/internal/app"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/delivery/hookstest"
	"github.com/hookd/hookd/internal/store"
)

// The two hand-over windows of docs/design.md ("Handing over"), forced with
// the engine's hooks. BusySnooze is an hour in both: a delivery whose job
// met the slot busy arrives within the test's wait only if the hand-over
// finds it.

// A delivery committed after the holder's drain found nothing, and before
// the holder let go of the slot: its job was deferred (the slot was held),
// and the holder's look after its release sends it.
func TestHandOverLooksAfterRelease(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b, rc, ep := hotEndpoint(t, backend, func(c *app.Config) { c.BusySnooze = time.Hour })
		reached, goOn := holdBeforeRelease(t, b, ep.ID)
		b.publish("hot.item", `{"i":0}`)
		waitClosed(t, reached, "the first delivery's drain to end")
		// The holder found nothing more to send and still holds the slot.
		second := b.publish("hot.item", `{"i":1}`)
		d := waitDeferred(b, ep.ID, second)
		// Its fanout found the slot still held after its commit too (and
		// woke nothing): wait for the fanout job's end, so that check
		// cannot run after the release below and send it instead.
		waitFanoutsDone(b)
		goOn()
		got := rc.waitFor(t, 2, wait)
		if got[1].Header.Get("webhook-id") != second {
			t.Fatalf("second request is %s, want %s", got[1].Header.Get("webhook-id"), second)
		}
		verify(t, ep.Secret, got[1])
		b.waitDelivery(ep.ID, second, wait, func(dl deliveryOut) bool { return dl.State == "delivered" })
		// The holder sent it: its own job, deferred an hour, was deleted
		// unrun when the drain's success was recorded (a woken job would
		// have run and completed).
		if j, err := b.h.Jobs.JobGet(context.Background(), d.JobID); !errors.Is(err, river.ErrNotFound) {
			t.Fatalf("the second delivery's job: %v, %v; want it deleted unrun", jobState(j), err)
		}
	})
}

// A fanout that deferred a delivery because its endpoint's slot was held,
// while the holder let go and looked (finding nothing: the fanout had not
// committed), wakes the delivery's job after its commit. On SQLite the
// window cannot open: a fanout's transaction holds the only connection, so
// no holder lets go while it is open.
func TestFanoutWakesWhenHolderLeftBeforeCommit(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		if backend.Name == "sqlite" {
			t.Skip("one connection: a holder cannot let go while a fanout's transaction is open")
		}
		b, rc, ep := hotEndpoint(t, backend, func(c *app.Config) { c.BusySnooze = time.Hour })
		releaseGate := holdFirst(t, rc, http.StatusOK) // the first delivery's job holds the slot meanwhile
		reached := make(chan struct{})
		proceed, goOn := releasedAtEnd(t)
		var once sync.Once
		hookstest.Set(t, b.h.Delivery, &delivery.Hooks{BeforeFanoutCommit: func(deferred []string) {
			if slices.Contains(deferred, ep.ID) {
				once.Do(func() { close(reached); <-proceed })
			}
		}})
		first := b.publish("hot.item", `{"i":0}`)
		rc.waitFor(t, 1, wait)
		second := b.publish("hot.item", `{"i":1}`)
		waitClosed(t, reached, "the second event's fanout to defer its delivery")
		// Let the holder finish, find nothing (the fanout is uncommitted),
		// let go and complete its job.
		releaseGate()
		d := b.waitDelivery(ep.ID, first, wait, func(dl deliveryOut) bool { return dl.State == "delivered" })
		b.waitJob(d.JobID, func(j *rivertype.JobRow) bool { return j.State == rivertype.JobStateCompleted })
		goOn()
		got := rc.waitFor(t, 2, wait)
		if got[1].Header.Get("webhook-id") != second {
			t.Fatalf("second request is %s, want %s", got[1].Header.Get("webhook-id"), second)
		}
		b.waitDelivery(ep.ID, second, wait, func(dl deliveryOut) bool { return dl.State == "delivered" })
	})
}

func waitFanoutsDone(b *bundle) {
	b.t.Helper()
	var n int
	ok := eventually(wait, func() bool {
		var err error
		n, err = b.h.DB.Count(context.Background(), `SELECT count(*) FROM river_job WHERE kind = 'webhook.fanout' AND state <> 'completed'`)
		if err != nil {
			b.t.Fatal(err)
		}
		return n == 0
	})
	if !ok {
		b.t.Fatalf("%d fanout jobs unfinished after %s", n, wait)
	}
}

// waitDeliveries waits for n deliveries to epID to exist and returns them.
func (b *bundle) waitDeliveries(epID string, n int) []deliveryOut {
	b.t.Helper()
	var ds []deliveryOut
	if !eventually(wait, func() bool { ds = b.deliveries(epID); return len(ds) >= n }) {
		b.t.Fatalf("%d of %d deliveries to %s exist after %s", len(ds), n, epID, wait)
	}
	return ds
}

// releasedAtEnd returns a channel and its close, which also runs when the
// test ends: a receiver handler or an engine hook blocked on it would
// otherwise hold the test's cleanup (the server's Close, hookd's Stop)
// forever after a failure.
func releasedAtEnd(t *testing.T) (<-chan struct{}, func()) {
	c := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(c) }) }
	t.Cleanup(release)
	return c, release
}

func waitClosed(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(wait):
		t.Fatalf("waited %s for %s", wait, what)
	}
}

// waitDeferred waits for eventID's delivery to epID to exist with its job
// scheduled at least half an hour out, and returns it.
func waitDeferred(b *bundle, epID, eventID string) deliveryOut {
	b.t.Helper()
	return b.waitDelivery(epID, eventID, wait, func(d deliveryOut) bool {
		if d.JobID == 0 {
			return false
		}
		j := b.job(d.JobID)
		return j.State == rivertype.JobStateScheduled && j.ScheduledAt.After(time.Now().Add(30*time.Minute))
	})
}

func jobState(j *rivertype.JobRow) rivertype.JobState {
	if j == nil {
		return ""
	}
	return j.State
}

// A holder stopped by DrainMax wakes the next delivery's job (River's
// JobRetry), and on PostgreSQL tells River's producers as an insert would:
// with River's poll an hour apart, the backlog still goes out at once.
// (SQLite has no notifications; there the poll is all there is.)
func TestWokenJobNeedsNoPoll(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		if backend.Name == "sqlite" {
			t.Skip("no LISTEN/NOTIFY: River finds woken jobs by polling")
		}
		b := setup(t, backend, setupOpts{mutate: func(c *app.Config) {
			c.BusySnooze, c.FetchPollInterval = time.Hour, time.Hour
			c.DrainMax = 4
		}})
		rc := newReceiver(t)
		release := holdFirst(t, rc, http.StatusOK) // hold the slot while the rest are fanned out (and deferred)
		b.registerType("hot.item")
		ep := b.endpoint(rc.URL, "hot.item")
		b.publish("hot.item", `{"i":0}`)
		rc.waitFor(t, 1, wait)
		events := make([]map[string]any, 20)
		for i := range events {
			events[i] = map[string]any{"type": "hot.item", "data": map[string]int{"i": i + 1}}
		}
		b.must(202, "POST", "/api/v1/events/batch", map[string]any{"events": events}, nil)
		// Every job is now deferred an hour (River notifies no insert of a
		// job scheduled for later): only a wake's notification moves one.
		b.waitDeliveries(ep.ID, 21)
		release()
		// 21 deliveries, at most 5 per holder (its own and DrainMax): at
		// least four wakes, each answered by a notification.
		got := rc.waitFor(t, 21, wait)
		seen := map[string]bool{}
		for _, r := range got {
			seen[r.Header.Get("webhook-id")] = true
		}
		if len(seen) != 21 {
			t.Fatalf("%d distinct events of 21", len(seen))
		}
	})
}

// A job deferred behind a held slot is a safety net only (the holder
// drains its delivery, or wakes it): it is deferred as long as a dead
// holder's slot takes to free itself (LeaseFor), not the 100 ms busy
// snooze, so a long backlog does not come due all at once beside the
// drain. Its delivery still goes out as soon as the slot is let go.
func TestDeferredJobWaitsOutTheLease(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b, rc, ep := hotEndpoint(t, backend, func(c *app.Config) { c.LeaseFor = time.Hour })
		release := holdFirst(t, rc, http.StatusOK)
		b.publish("hot.item", `{"i":0}`)
		rc.waitFor(t, 1, wait)
		second := b.publish("hot.item", `{"i":1}`)
		waitDeferred(b, ep.ID, second) // BusySnooze is 100 ms here: deferred by LeaseFor
		release()
		got := rc.waitFor(t, 2, wait)
		if got[1].Header.Get("webhook-id") != second {
			t.Fatalf("second request is %s, want %s", got[1].Header.Get("webhook-id"), second)
		}
	})
}

// A holder whose attempt failed lets go of the slot without draining (the
// endpoint is failing; its deliveries keep their own jobs' schedules), but
// a delivery committed while it held the slot had its job deferred behind
// the held slot, and no other holder is left to send it. The holder looks
// after its release, as a drain does, and wakes that delivery's job:
// without the look it waited out the deferral (LeaseFor, here an hour).
func TestFailedHolderWakesDeferred(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b, rc, ep := hotEndpoint(t, backend, func(c *app.Config) { c.BusySnooze = time.Hour })
		releaseGate := holdFirst(t, rc, http.StatusInternalServerError) // the first delivery's job holds the slot meanwhile
		b.publish("hot.item", `{"i":0}`)
		rc.waitFor(t, 1, wait)
		second := b.publish("hot.item", `{"i":1}`)
		waitDeferred(b, ep.ID, second)
		// Its fanout found the slot held after its commit too, and woke
		// nothing.
		waitFanoutsDone(b)
		releaseGate() // the first attempt fails; its retry is seconds out
		got := rc.waitFor(t, 2, wait)
		if got[1].Header.Get("webhook-id") != second {
			t.Fatalf("second request is %s, want %s (the deferred delivery)", got[1].Header.Get("webhook-id"), second)
		}
		b.waitDelivery(ep.ID, second, wait, func(dl deliveryOut) bool { return dl.State == "delivered" })
	})
}

// A drain stopped by a failure leaves the rest to the deliveries' own
// jobs, but those were deferred behind the held slot, and no holder is
// left to send them. The holder looks after its release and wakes the
// oldest deferred job: without the look it waited out the deferral
// (here an hour).
func TestStoppedDrainWakesDeferred(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b, rc, ep := hotEndpoint(t, backend, func(c *app.Config) { c.BusySnooze = time.Hour })
		releaseGate := holdThenFailSecond(t, rc)
		b.publish("hot.item", `{"i":0}`)
		rc.waitFor(t, 1, wait)
		pair := []string{b.publish("hot.item", `{"i":1}`), b.publish("hot.item", `{"i":2}`)}
		for _, id := range pair {
			waitDeferred(b, ep.ID, id)
		}
		waitFanoutsDone(b) // their fanouts found the slot held after commit too
		// The first delivery succeeds; the drain after it sends one of the
		// pair (fanned out together, their order is the deliveries' ids'),
		// which fails, and stops.
		releaseGate()
		failed := rc.waitFor(t, 2, wait)[1].Header.Get("webhook-id")
		i := slices.Index(pair, failed)
		if i < 0 {
			t.Fatalf("second request is %s, want one of %v", failed, pair)
		}
		other := pair[1-i]
		verify(t, ep.Secret, rc.waitForEvent(t, other, wait))
		b.waitDelivery(ep.ID, other, wait, func(dl deliveryOut) bool { return dl.State == "delivered" })
		if d := b.waitDelivery(ep.ID, failed, wait, func(dl deliveryOut) bool { return dl.Attempts == 1 }); d.State != "pending" || d.LastStatus != http.StatusInternalServerError {
			t.Fatalf("the failed delivery: %+v, want pending after one 500", d)
		}
	})
}

// A job that takes the slot and ends without sending lets go with no
// drain after it: here the job of a delivery that a drain recorded sent
// after the job was fetched (so the record could not delete it). A
// delivery committed while it held the slot had its job deferred behind
// it: the job wakes it after its release.
func TestHolderThatSendsNothingWakesDeferred(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b, rc, ep := hotEndpoint(t, backend, func(c *app.Config) { c.BusySnooze = time.Hour })
		releaseGate := holdFirst(t, rc, http.StatusOK)
		first := b.publish("hot.item", `{"i":0}`)
		rc.waitFor(t, 1, wait)
		second := b.publish("hot.item", `{"i":1}`)
		d2 := waitDeferred(b, ep.ID, second)
		waitFanoutsDone(b)
		d1 := b.waitDelivery(ep.ID, first, wait, func(dl deliveryOut) bool { return dl.JobID != 0 })
		// The holder's drain records the second sent, its own job left.
		ctx := context.Background()
		if err := b.h.DB.RecordDrained(ctx, []store.Delivered{{DeliveryID: d2.ID, Status: http.StatusOK, SentBy: d1.JobID}}, nil, b.clock.Now().UnixMicro()); err != nil {
			t.Fatal(err)
		}
		releaseGate()
		b.waitJob(d1.JobID, func(j *rivertype.JobRow) bool { return j.State == rivertype.JobStateCompleted })

		// The second delivery's job runs and holds the slot, with nothing
		// to send; a third event is published meanwhile.
		reached, goOn := holdBeforeRelease(t, b, ep.ID)
		b.retryNow(d2.JobID)
		waitClosed(t, reached, "the second delivery's job to end holding the slot")
		third := b.publish("hot.item", `{"i":2}`)
		waitDeferred(b, ep.ID, third)
		waitFanoutsDone(b) // its fanout found the slot held after commit too
		goOn()
		verify(t, ep.Secret, rc.waitForEvent(t, third, wait))
		b.waitDelivery(ep.ID, third, wait, func(dl deliveryOut) bool { return dl.State == "delivered" })
		b.waitJob(d2.JobID, func(j *rivertype.JobRow) bool { return j.State == rivertype.JobStateCompleted })
		if got := rc.receipts(); len(got) != 2 {
			t.Fatalf("receiver got %d requests, want 2: the second delivery's job sends nothing", len(got))
		}
	})
}

// holdThenFailSecond makes rc hold its first request until release (or the
// test's end) and answer it 200, answer the second 500 and every later one
// 200.
func holdThenFailSecond(t *testing.T, rc *receiver) (release func()) {
	gate, release := releasedAtEnd(t)
	rc.setRespond(func(_ *http.Request, n int) (int, http.Header) {
		switch n {
		case 1:
			<-gate
		case 2:
			return http.StatusInternalServerError, nil
		}
		return http.StatusOK, nil
	})
	return release
}

// hotEndpoint is a running hookd (mutate changes its config), a receiver
// and an endpoint on it for "hot.item".
func hotEndpoint(t *testing.T, backend dbtest.Backend, mutate func(*app.Config)) (*bundle, *receiver, endpointOut) {
	t.Helper()
	b := setup(t, backend, setupOpts{mutate: mutate})
	rc := newReceiver(t)
	b.registerType("hot.item")
	return b, rc, b.endpoint(rc.URL, "hot.item")
}

// holdBeforeRelease stops the first lease holder of the endpoint that
// lets go of its slot, before it does: reached closes then, and goOn (also
// run at the test's end) lets it go on.
func holdBeforeRelease(t *testing.T, b *bundle, epID string) (reached <-chan struct{}, goOn func()) {
	at := make(chan struct{})
	proceed, goOn := releasedAtEnd(t)
	var once sync.Once
	hookstest.Set(t, b.h.Delivery, &delivery.Hooks{BeforeRelease: func(id string) {
		if id == epID {
			once.Do(func() { close(at); <-proceed })
		}
	}})
	return at, goOn
}

// holdFirst makes rc hold its first request until release (or the test's
// end) and answer it with first; it answers every later request 200.
func holdFirst(t *testing.T, rc *receiver, first int) (release func()) {
	gate, release := releasedAtEnd(t)
	rc.setRespond(func(_ *http.Request, n int) (int, http.Header) {
		if n == 1 {
			<-gate
			return first, nil
		}
		return http.StatusOK, nil
	})
	return release
}
