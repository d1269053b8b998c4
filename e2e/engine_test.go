package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/hookd/hookd/internal/app"
	"github.com/hookd/hookd/internal/dbtest"
)

// wait bounds a test's wait for something hookd will do. It is longer
// than the lease (DefaultLeaseFor, 20 s), so that a delivery that waits a
// lease out (a holder that died) still arrives within it; the waits
// return as soon as their condition holds, so a passing run pays nothing.
const wait = 30 * time.Second

// shortTimeout stands in for the 10 s HTTP timeout in tests whose receiver
// holds its answer until hookd gives up. It still has to fit a receiver
// that answers at once, on a CI machine running every package under -race:
// 300 ms did not (a 200 after a retry timed out).
const shortTimeout = 2 * time.Second

func TestPublishDeliversSignedThinEnvelope(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		rc := newReceiver(t)
		b.registerType("invoice.paid")
		ep := b.endpoint(rc.URL+"/hook", "invoice.*")
		if !strings.HasPrefix(ep.Secret, "whsec_") {
			t.Fatalf("secret %q is not whsec_", ep.Secret)
		}
		start := time.Now()
		id := b.publish("invoice.paid", `{"amount": 42, "published": true}`)
		got := rc.waitFor(t, 1, wait)
		t.Logf("%s: publish→receipt %s", backend.Name, got[0].At.Sub(start))
		r := got[0]
		if r.Header.Get("webhook-id") != id {
			t.Fatalf("webhook-id %q, want event id %q", r.Header.Get("webhook-id"), id)
		}
		ev := verify(t, ep.Secret, r)
		if ev.ID != id || ev.Type != "invoice.paid" || ev.Subject != "test://x" {
			t.Fatalf("envelope %+v", ev)
		}
		var env map[string]json.RawMessage
		if err := json.Unmarshal(r.Body, &env); err != nil {
			t.Fatal(err)
		}
		keys := []string{}
		for k := range env {
			keys = append(keys, k)
		}
		if len(env) != 5 || env["occurred_at"] == nil || string(env["data"]) != `{"amount":42,"published":true}` {
			t.Fatalf("thin envelope has keys %v, body %s", keys, r.Body)
		}
		d := b.waitDelivery(ep.ID, id, wait, func(d deliveryOut) bool { return d.State == "delivered" })
		if d.Attempts != 1 || d.LastStatus != 204 || d.JobURL == "" {
			t.Fatalf("delivery record %+v", d)
		}
		// The job link answers for the owner.
		var task map[string]any
		b.must(200, "GET", d.JobURL, nil, &task)
		if task["kind"] != "webhook.deliver" {
			t.Fatalf("job page %v", task)
		}
	})
}

func TestGlobsExposureAndScope(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		rc := newReceiver(t)
		// invoice.paid is scoped (judged by the published slice), user.created
		// is not (it goes to every endpoint subscribed to it).
		b.must(200, "PUT", "/api/admin/event_types/invoice.paid", map[string]any{"exposure": "webhook", "scoped": true}, nil)
		b.registerType("user.created")
		b.must(200, "PUT", "/api/admin/event_types/audit.internal", map[string]string{"exposure": "internal"}, nil)
		inv := b.endpoint(rc.URL+"/invoices", "invoice.*")
		all := b.endpoint(rc.URL+"/all", "*")
		// An internal type never leaves; a raw:// subject never leaves;
		// unpublished data of a scoped type stays; a matching type reaches
		// both endpoints, user.created only the "*" one, whatever its data.
		var out map[string]any
		b.must(202, "POST", "/api/v1/events", map[string]any{"type": "audit.internal", "data": map[string]any{}}, &out)
		if out["exposure"] != "internal" {
			t.Fatalf("internal publish answered %v", out)
		}
		b.must(202, "POST", "/api/v1/events", map[string]any{"type": "invoice.paid", "subject": "raw://secret", "data": map[string]any{}}, nil)
		b.must(202, "POST", "/api/v1/events", map[string]any{"type": "invoice.paid", "data": map[string]any{"published": false, "was_published": false}}, nil)
		unpub := b.publish("invoice.paid", `{"published": false, "was_published": true}`)
		user := b.publish("user.created", `{"published": false}`)
		got := rc.waitFor(t, 3, wait)
		seen := map[string]string{}
		for _, r := range got {
			seen[r.Path+" "+r.Header.Get("webhook-id")] = r.Path
		}
		for _, want := range []string{"/invoices " + unpub, "/all " + unpub, "/all " + user} {
			if _, ok := seen[want]; !ok {
				t.Fatalf("missing delivery %s; got %v", want, seen)
			}
		}
		// Nothing else arrives: the last published event proves fanout
		// of earlier ones is done (fanout runs in order on one queue is not
		// guaranteed, so check the delivery logs instead).
		if n := len(b.deliveries(inv.ID)); n != 1 {
			t.Fatalf("invoices endpoint has %d deliveries, want 1", n)
		}
		if n := len(b.deliveries(all.ID)); n != 2 {
			t.Fatalf("* endpoint has %d deliveries, want 2", n)
		}
	})
}

func TestIdempotencyKeyDeliversOnce(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		rc := newReceiver(t)
		b.registerType("order.created")
		ep := b.endpoint(rc.URL, "order.created")
		id1 := b.publish("order.created", `{"n":1}`, "Idempotency-Key", "k-1")
		id2 := b.publish("order.created", `{"n":2}`, "Idempotency-Key", "k-1")
		if id1 != id2 {
			t.Fatalf("same key gave ids %s and %s", id1, id2)
		}
		id3 := b.publish("order.created", `{"n":3}`)
		rc.waitFor(t, 2, wait)
		b.waitDelivery(ep.ID, id3, wait, func(d deliveryOut) bool { return d.State == "delivered" })
		b.waitDelivery(ep.ID, id1, wait, func(d deliveryOut) bool { return d.State == "delivered" })
		if n := len(b.deliveries(ep.ID)); n != 2 {
			t.Fatalf("%d deliveries, want 2 (the repeated key delivers once)", n)
		}
	})
}

func TestBatchPublishIsOneTransaction(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		rc := newReceiver(t)
		b.registerType("bulk.item")
		ep := b.endpoint(rc.URL, "bulk.*")
		events := make([]map[string]any, 0, 1000)
		for i := range 1000 {
			events = append(events, map[string]any{"type": "bulk.item", "data": map[string]int{"i": i}})
		}
		// One bad event rejects the whole batch: nothing is written.
		bad := append(append([]map[string]any{}, events[:10]...), map[string]any{"type": "Bad Type"})
		var errOut map[string]map[string]string
		b.must(422, "POST", "/api/v1/events/batch", map[string]any{"events": bad}, &errOut)
		if !strings.Contains(errOut["error"]["message"], "events[10]") {
			t.Fatalf("error does not name the bad event: %v", errOut)
		}
		b.must(422, "POST", "/api/v1/events/batch", map[string]any{"events": append(events, events[0])}, nil)
		var out struct {
			Data []struct{ ID string } `json:"data"`
		}
		b.must(202, "POST", "/api/v1/events/batch", map[string]any{"events": events[:50]}, &out)
		if len(out.Data) != 50 {
			t.Fatalf("batch answered %d ids", len(out.Data))
		}
		rc.waitFor(t, 50, 90*time.Second) // generous: CI runs every package at once under -race
		if n := len(b.deliveries(ep.ID)); n != 50 {
			t.Fatalf("%d deliveries, want 50 (the rejected batches wrote nothing)", n)
		}
	})
}

func TestFanoutTwiceEnqueuesOnce(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		rc := newReceiver(t)
		b.registerType("twice.done")
		ep := b.endpoint(rc.URL, "twice.done")
		id := b.publish("twice.done", `{}`)
		b.waitDelivery(ep.ID, id, wait, func(d deliveryOut) bool { return d.State == "delivered" })
		// Run fanout for the same event again, as a retried fanout job would.
		if err := b.h.Delivery.Fanout(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		if n := len(b.deliveries(ep.ID)); n != 1 {
			t.Fatalf("%d deliveries after a second fanout, want 1", n)
		}
		if got := len(rc.receipts()); got != 1 {
			t.Fatalf("receiver got %d requests, want 1", got)
		}
	})
}

// TestFanoutTakesWaitingEventsAlong: a burst of one owner's events is
// fanned out by a few fanout jobs, each taking the owner's other waiting
// events along in its transaction and deleting their jobs; every event
// reaches every endpoint exactly once, and none is left waiting.
func TestFanoutTakesWaitingEventsAlong(t *testing.T) {
	t.Parallel()
	const events = 60
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		rc := newReceiver(t)
		b.registerType("burst.item")
		eps := []endpointOut{b.endpoint(rc.URL+"/a", "burst.*"), b.endpoint(rc.URL+"/b", "burst.item")}
		batch := make([]map[string]any, events)
		for i := range batch {
			batch[i] = map[string]any{"type": "burst.item", "data": map[string]int{"i": i}}
		}
		b.must(202, "POST", "/api/v1/events/batch", map[string]any{"events": batch}, nil)
		got := rc.waitFor(t, 2*events, 90*time.Second)
		seen := map[string]int{}
		for _, r := range got {
			seen[r.Path+" "+r.Header.Get("webhook-id")]++
		}
		if len(seen) != 2*events {
			t.Fatalf("%d distinct (endpoint, event) pairs received, want %d", len(seen), 2*events)
		}
		ctx := context.Background()
		for _, ep := range eps { // (a drain records its successes just after sending them)
			var n int
			ok := eventually(wait, func() bool {
				var err error
				n, err = b.h.DB.Count(ctx, `SELECT count(*) FROM hookd_deliveries WHERE endpoint_id = $1 AND state = 'delivered'`, ep.ID)
				if err != nil {
					t.Fatal(err)
				}
				return n == events
			})
			if !ok {
				t.Fatalf("endpoint %s has %d delivered deliveries, want %d", ep.ID, n, events)
			}
		}
		waiting, err := b.h.DB.Count(ctx, `SELECT count(*) FROM hookd_events WHERE fanout_job <> 0`)
		if err != nil {
			t.Fatal(err)
		}
		// At most a fanout queue's worth of jobs runs before the first
		// fanout commits; every other event's job was deleted unrun.
		jobs, err := b.h.DB.Count(ctx, `SELECT count(*) FROM river_job WHERE kind = 'webhook.fanout'`)
		if err != nil {
			t.Fatal(err)
		}
		if waiting != 0 || jobs >= events {
			t.Fatalf("%d events still waiting for fanout, %d fanout jobs of %d events left; want 0 waiting and jobs deleted", waiting, jobs, events)
		}
		if got := len(rc.receipts()); got != 2*events {
			t.Fatalf("receiver got %d requests, want %d (no pair twice)", got, 2*events)
		}
	})
}

func TestLeaseOneInFlightPerEndpoint(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		rc := newReceiver(t)
		// A slow receiver: while one delivery is in flight, others must wait.
		rc.setRespond(func(*http.Request, int) (int, http.Header) {
			time.Sleep(10 * time.Millisecond)
			return 200, nil
		})
		b.registerType("slow.thing")
		ep := b.endpoint(rc.URL, "slow.thing")
		events := make([]map[string]any, 50)
		for i := range events {
			events[i] = map[string]any{"type": "slow.thing", "data": map[string]int{"i": i}}
		}
		b.must(202, "POST", "/api/v1/events/batch", map[string]any{"events": events}, nil)
		got := rc.waitFor(t, 50, 90*time.Second)
		if m := rc.maxInFl.Load(); m != 1 {
			t.Fatalf("max concurrent requests to one endpoint = %d, want 1", m)
		}
		ids := map[string]bool{}
		for _, r := range got {
			ids[r.Header.Get("webhook-id")] = true
			verify(t, ep.Secret, r)
		}
		if len(ids) != 50 {
			t.Fatalf("%d distinct events delivered, want 50", len(ids))
		}
	})
}

// TestLeaseDrainHandsOverAndKeepsAccounts: the lease holder drains the
// endpoint's fresh deliveries one after another. A drained delivery that
// fails is not sent again by its own job: the job spends that attempt and
// River retries it on the schedule, so River's attempt count matches what
// the receiver saw.
func TestLeaseDrainHandsOverAndKeepsAccounts(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		rc := newReceiver(t)
		gate := make(chan struct{})
		rc.setRespond(func(_ *http.Request, n int) (int, http.Header) {
			switch n {
			case 1:
				<-gate // hold the lease until every delivery exists
			case 2:
				return 500, nil // the first drained delivery fails once
			}
			return 200, nil
		})
		b.registerType("hot.item")
		ep := b.endpoint(rc.URL, "hot.item")
		events := make([]map[string]any, 30)
		for i := range events {
			events[i] = map[string]any{"type": "hot.item", "data": map[string]int{"i": i}}
		}
		b.must(202, "POST", "/api/v1/events/batch", map[string]any{"events": events}, nil)
		b.waitDeliveries(ep.ID, 30)
		close(gate)
		got := rc.waitFor(t, 30, 90*time.Second)
		failedID := got[1].Header.Get("webhook-id")
		// (Under load the 5 s retry may already have happened by now.)
		d := b.waitDelivery(ep.ID, failedID, wait, func(d deliveryOut) bool { return d.Attempts >= 1 })
		j := b.waitJob(d.JobID, func(j *rivertype.JobRow) bool { return len(j.Errors) > 0 })
		if j.Errors[0].Attempt != 1 || !strings.Contains(j.Errors[0].Error, "500") {
			t.Fatalf("failed delivery's job: first error %+v; want the drained failed send as attempt 1", j.Errors[0])
		}
		if j.FinalizedAt == nil {
			b.retryNow(d.JobID)
		}
		d = b.waitDelivery(ep.ID, failedID, wait, func(d deliveryOut) bool { return d.State == "delivered" })
		if d.Attempts != 2 {
			t.Fatalf("attempts %d, want 2 (the failed send, then the retry)", d.Attempts)
		}
		all := rc.waitFor(t, 31, wait)
		seen := map[string]int{}
		for _, r := range all {
			seen[r.Header.Get("webhook-id")]++
		}
		for id, n := range seen {
			if want := map[bool]int{true: 2, false: 1}[id == failedID]; n != want {
				t.Fatalf("event %s sent %d times, want %d", id, n, want)
			}
		}
		if len(seen) != 30 || rc.maxInFl.Load() != 1 {
			t.Fatalf("%d events, max in flight %d", len(seen), rc.maxInFl.Load())
		}
		// Every job finishes. A drained success links to the job that sent
		// it (the lease holder's) and its own River job is deleted unrun,
		// or, if River had already fetched it (here: all 30 snoozed on the
		// held lease), completed without sending; the others complete their
		// own. So every delivery has a task, and a holder's is shared.
		byJob := map[int64]int{}
		for _, dl := range b.deliveries(ep.ID) {
			if dl.State != "delivered" {
				t.Fatalf("delivery %s is %s", dl.ID, dl.State)
			}
			if dl.JobID == 0 || dl.JobURL == "" {
				t.Fatalf("delivery %s has no task (job %d, url %q)", dl.ID, dl.JobID, dl.JobURL)
			}
			byJob[dl.JobID]++
		}
		drained := 0
		for job, n := range byJob {
			b.waitJob(job, func(j *rivertype.JobRow) bool { return j.State == rivertype.JobStateCompleted })
			if n > 1 {
				drained += n - 1 // the holder's own delivery, and n-1 it drained
				var task struct {
					ID    int64  `json:"id"`
					State string `json:"state"`
				}
				b.must(200, "GET", fmt.Sprintf("/admin/tasks?job=%d", job), nil, &task)
				if task.ID != job || task.State != "completed" {
					t.Fatalf("the drain's task page: %+v, want job %d completed", task, job)
				}
			}
		}
		if drained < 20 {
			t.Fatalf("%d of 30 deliveries drained; want most (the first holds the lease while all 30 exist)", drained)
		}
		var n, total int
		ok := eventually(wait, func() bool {
			var err error
			n, err = b.h.DB.Count(context.Background(), `SELECT count(*) FROM river_job WHERE kind = 'webhook.deliver' AND state <> 'completed'`)
			if err != nil {
				t.Fatal(err)
			}
			total, _ = b.h.DB.Count(context.Background(), `SELECT count(*) FROM river_job WHERE kind = 'webhook.deliver'`)
			return n == 0 && total >= len(byJob)
		})
		if !ok {
			t.Fatalf("%d deliver jobs of %d unfinished (%d sent deliveries); want all finished", n, total, len(byJob))
		}
	})
}

// TestBusyEndpointJobsDeferred: deliveries fanned out while every slot of
// their endpoint is held get jobs scheduled BusySnooze out (here an hour),
// since such a job would only meet the lease busy and snooze. They are
// delivered all the same, at once: the holder drains them, and a holder
// stopped by DrainMax (here 4) wakes the next delivery's job instead of
// leaving the backlog to wait out the deferral.
func TestBusyEndpointJobsDeferred(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend, setupOpts{mutate: func(c *app.Config) {
			c.BusySnooze = time.Hour
			c.DrainMax = 4
		}})
		rc := newReceiver(t)
		gate, release := releasedAtEnd(t)
		rc.setRespond(func(_ *http.Request, n int) (int, http.Header) {
			if n == 1 {
				<-gate // hold the lease while the rest are fanned out
			}
			return 200, nil
		})
		b.registerType("hot.item")
		ep := b.endpoint(rc.URL, "hot.item")
		b.must(202, "POST", "/api/v1/events", map[string]any{"type": "hot.item", "data": map[string]int{"i": 0}}, nil)
		rc.waitFor(t, 1, wait) // the first delivery's job holds the lease now
		events := make([]map[string]any, 20)
		for i := range events {
			events[i] = map[string]any{"type": "hot.item", "data": map[string]int{"i": i + 1}}
		}
		b.must(202, "POST", "/api/v1/events/batch", map[string]any{"events": events}, nil)
		ds := b.waitDeliveries(ep.ID, 21)
		deferred := 0
		for _, d := range ds {
			if d.State == "pending" && d.JobID != 0 && b.job(d.JobID).ScheduledAt.After(time.Now().Add(30*time.Minute)) {
				deferred++
			}
		}
		if deferred != 20 {
			t.Fatalf("%d of the 20 deliveries fanned out behind the held lease have deferred jobs, want 20", deferred)
		}
		release()
		got := rc.waitFor(t, 21, wait)
		seen := map[string]int{}
		for _, r := range got {
			seen[r.Header.Get("webhook-id")]++
			verify(t, ep.Secret, r)
		}
		if len(seen) != 21 || rc.maxInFl.Load() != 1 {
			t.Fatalf("%d distinct events of 21, max in flight %d (want 1)", len(seen), rc.maxInFl.Load())
		}
		for _, d := range ds {
			b.waitDelivery(ep.ID, d.EventID, wait, func(d deliveryOut) bool { return d.State == "delivered" })
		}
	})
}
