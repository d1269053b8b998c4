package e2e_test

// Kwork retries: the 6-send schedule, timeouts, parallel deliveries to one
// subscription, and a send-test to a failing subscription.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/hookd/hookd/internal/app"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/egress"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/profile"
)

// TestKworkRetrySchedule: a receiver that always answers 500 gets 6 sends,
// 30s, 2m, 10m, 1h, 6h apart, each with the same X-Kwork-Delivery and body
// and a fresh signature; then the delivery is failed and the job discarded.
func TestKworkRetrySchedule(t *testing.T) {
	t.Parallel()
	backoffs := []time.Duration{30 * time.Second, 2 * time.Minute, 10 * time.Minute, time.Hour, 6 * time.Hour}
	if got, want := profile.KworkRetry.Total(), 7*time.Hour+12*time.Minute+30*time.Second; got != want {
		t.Fatalf("kwork schedule totals %s, want %s", got, want)
	}
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		shop := b.kworkOwner("shop", shopApp)
		rc := newReceiver(t)
		rc.setRespond(status(500))
		shop.registerType("order.paid")
		ep := shop.subscribe(rc.URL, []string{"order.paid"}, nil)
		id := shop.publishFor("order.paid", "acme_corp", `{"order":"o_1"}`)

		var first receipt
		var prevT int64
		var schedule time.Duration
		for n := 1; n <= 6; n++ {
			r := rc.waitFor(t, n, wait)[n-1]
			sentAt := b.clock.At(r.At) // hookd's clock when the send arrived
			env := checkKwork(t, ep.Secret, r)
			if n == 1 {
				first = r
				if env.ID != id {
					t.Fatalf("envelope id %s, want %s", env.ID, id)
				}
			} else {
				if r.Header.Get("X-Kwork-Delivery") != first.Header.Get("X-Kwork-Delivery") || !bytes.Equal(r.Body, first.Body) {
					t.Fatalf("send %d changed X-Kwork-Delivery or the body", n)
				}
				// The clock moved 2 s since the last send: t must follow it.
				if ts := sigTime(t, r); ts < prevT+2 || r.Header.Get("X-Kwork-Signature") == first.Header.Get("X-Kwork-Signature") {
					t.Fatalf("send %d signed at t=%d after t=%d: signature not recomputed", n, ts, prevT)
				}
			}
			prevT = sigTime(t, r)

			d := shop.waitDelivery(ep.ID, id, wait, func(d deliveryOut) bool {
				return d.Attempts == n && (n < 6 || d.State == "failed")
			})
			if d.ID != first.Header.Get("X-Kwork-Delivery") || d.LastStatus != 500 {
				t.Fatalf("delivery record after send %d: %+v", n, d)
			}
			j := b.waitJob(d.JobID, func(j *rivertype.JobRow) bool { return waitingRetry(j) || j.FinalizedAt != nil })
			if j.MaxAttempts != 6 {
				t.Fatalf("job max attempts %d, want 6", j.MaxAttempts)
			}
			if n == 6 {
				if j.State != rivertype.JobStateDiscarded || !strings.Contains(d.LastError, "attempts exhausted") {
					t.Fatalf("after 6 sends: job %s, delivery %+v", j.State, d)
				}
				break
			}
			if j.FinalizedAt != nil || j.Attempt != n || d.State != "pending" {
				t.Fatalf("after send %d: job %s attempt %d, delivery %+v", n, j.State, j.Attempt, d)
			}
			// hookd settles the answer after the send arrived and before
			// the job is seen waiting; the backoff counts from then.
			settled := b.clock.Now()
			between(t, "retry "+strconv.Itoa(n)+" scheduled at", j.ScheduledAt, sentAt.Add(backoffs[n-1]), settled.Add(backoffs[n-1]))
			if d.NextAttemptAt == nil {
				t.Fatalf("pending delivery shows no next attempt: %+v", d)
			}
			between(t, "next_attempt_at", *d.NextAttemptAt, sentAt.Add(backoffs[n-1]), settled.Add(backoffs[n-1]))
			schedule += j.ScheduledAt.Sub(sentAt)
			b.clock.Advance(2 * time.Second)
			b.retryNow(d.JobID)
		}
		if got := len(rc.receipts()); got != 6 {
			t.Fatalf("%d sends, want 6", got)
		}
		if d := schedule - profile.KworkRetry.Total(); d < -10*time.Second || d > 10*time.Second {
			t.Fatalf("scheduled waits total %s, want %s", schedule, profile.KworkRetry.Total())
		}
	})
}

// TestKworkTimeoutRetries: no complete answer within the HTTP timeout (10 s;
// shortened here) is a failed send, retried after 30 s.
func TestKworkTimeoutRetries(t *testing.T) {
	t.Parallel()
	if egress.DefaultTimeout != 10*time.Second || delivery.DefaultJobTimeout != 15*time.Second {
		t.Fatalf("timeouts %s/%s, want 10s inside 15s", egress.DefaultTimeout, delivery.DefaultJobTimeout)
	}
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend, setupOpts{mutate: func(c *app.Config) { c.HTTPTimeout = shortTimeout }})
		shop := b.kworkOwner("shop", shopApp)
		rc := newReceiver(t)
		rc.setRespond(func(r *http.Request, _ int) (int, http.Header) {
			select { // hold until hookd gives up
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return 200, nil
		})
		shop.registerType("order.paid")
		ep := shop.subscribe(rc.URL, []string{"order.paid"}, nil)
		published := time.Now()
		id := shop.publishFor("order.paid", "acme_corp", `{}`)
		first := rc.waitFor(t, 1, wait)[0]
		d := shop.waitDelivery(ep.ID, id, wait, func(d deliveryOut) bool { return d.Attempts == 1 })
		if d.State != "pending" || !strings.Contains(d.LastError, "timeout") {
			t.Fatalf("after a timeout: %+v", d)
		}
		j := b.waitJob(d.JobID, waitingRetry)
		// hookd gives up shortTimeout after it sends (which is after the
		// publish) and only then schedules.
		between(t, "retry after timeout", j.ScheduledAt, published.Add(shortTimeout+30*time.Second), time.Now().Add(30*time.Second))
		rc.setRespond(status(200))
		b.retryNow(d.JobID)
		second := rc.waitFor(t, 2, wait)[1]
		if second.Header.Get("X-Kwork-Delivery") != first.Header.Get("X-Kwork-Delivery") || !bytes.Equal(second.Body, first.Body) {
			t.Fatal("the retry after a timeout changed X-Kwork-Delivery or the body")
		}
		checkKwork(t, ep.Secret, second)
		if d := shop.waitDelivery(ep.ID, id, wait, func(d deliveryOut) bool { return d.State == "delivered" }); d.Attempts != 2 {
			t.Fatalf("delivered %+v", d)
		}
	})
}

// TestKworkRetryBodyFixed: an operator changes the owner's app,
// environment and api_version while a delivery waits for its retry; the
// retry sends the first attempt's bytes (kwork: the body does not change
// on retry; apiVersion is the version that produced the event), and the
// delivery's record shows that envelope. An event published after the
// change carries the new attributes.
func TestKworkRetryBodyFixed(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		shop := b.kworkOwner("shop", shopApp)
		rc := newReceiver(t)
		rc.setRespond(status(500))
		shop.registerType("order.paid")
		ep := shop.subscribe(rc.URL, []string{"order.paid"}, nil)
		id := shop.publishFor("order.paid", "acme_corp", `{"order":"o_1"}`)
		first := rc.waitFor(t, 1, wait)[0]
		d := shop.waitDelivery(ep.ID, id, wait, func(d deliveryOut) bool { return d.Attempts == 1 })

		op, err := b.h.Ops.CreateKey(context.Background(), "", owner.Operator)
		if err != nil {
			t.Fatal(err)
		}
		operator := *b
		operator.key = op.Secret
		changed := map[string]string{"app": "shop-sync-v2", "environment": "test", "app_kind": "integration", "api_version": "2027-01-01"}
		operator.must(200, "PATCH", "/api/admin/owners/shop", map[string]any{"attributes": changed}, nil)

		rc.setRespond(status(200))
		b.waitJob(d.JobID, waitingRetry)
		b.retryNow(d.JobID)
		second := rc.waitFor(t, 2, wait)[1]
		shop.waitDelivery(ep.ID, id, wait, func(d deliveryOut) bool { return d.State == "delivered" })
		if !bytes.Equal(second.Body, first.Body) {
			t.Fatalf("the retry after the owner changed sent\n%s\nwhere the first attempt sent\n%s", second.Body, first.Body)
		}
		env := checkKwork(t, ep.Secret, second)
		if env.App != shopApp["app"] || env.Environment != shopApp["environment"] || env.APIVersion != shopApp["api_version"] {
			t.Fatalf("retry envelope %+v, want the attributes the event was published under", env)
		}
		var detail struct {
			Envelope json.RawMessage `json:"envelope"`
		}
		shop.must(200, "GET", "/api/admin/webhooks/"+ep.ID+"/deliveries/"+d.ID, nil, &detail)
		if !bytes.Equal(compactJSON(t, detail.Envelope), compactJSON(t, first.Body)) {
			t.Fatalf("the delivery's record shows\n%s\nwhere hookd sent\n%s", detail.Envelope, first.Body)
		}

		later := shop.publishFor("order.paid", "acme_corp", `{"order":"o_2"}`)
		env = checkKwork(t, ep.Secret, rc.waitFor(t, 3, wait)[2])
		if env.ID != later || env.App != changed["app"] || env.Environment != changed["environment"] || env.APIVersion != changed["api_version"] {
			t.Fatalf("an event published after the change: %+v, want the new attributes", env)
		}
	})
}

func compactJSON(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return out.Bytes()
}

// TestKworkParallelDeliveries: deliveries to one kwork subscription run in
// parallel, up to its max_in_flight (default 8) and never more.
func TestKworkParallelDeliveries(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		// The receiver holds requests while the test looks; on a loaded
		// machine that can outlast the 10 s HTTP timeout, so every timing
		// that nests around it is stretched in proportion.
		b := setup(t, backend, setupOpts{mutate: func(c *app.Config) {
			c.HTTPTimeout, c.JobTimeout, c.LeaseFor, c.RescueStuckJobsAfter = time.Minute, 70*time.Second, 80*time.Second, 2*time.Minute
		}})
		shop := b.kworkOwner("shop", shopApp)
		shop.registerType("load.a")
		shop.registerType("load.b")
		for _, c := range []struct {
			typ     string
			setting int // max_in_flight sent (0: default)
			limit   int
			publish int
		}{
			{"load.a", 0, profile.DefaultKworkInFlight, 12},
			{"load.b", 3, 3, 6},
		} {
			rc := newReceiver(t)
			release := gate(t, rc)
			var extra map[string]any
			if c.setting > 0 {
				extra = map[string]any{"max_in_flight": c.setting}
			}
			ep := shop.subscribe(rc.URL, []string{c.typ}, extra)
			var got struct {
				MaxInFlight int `json:"max_in_flight"`
			}
			shop.must(200, "GET", "/api/admin/webhooks/"+ep.ID, nil, &got)
			if got.MaxInFlight != c.limit {
				t.Fatalf("%s: max_in_flight %d, want %d", c.typ, got.MaxInFlight, c.limit)
			}
			ids := shop.publishMany(c.typ, c.publish)
			// limit requests are held at once …
			rc.waitFor(t, c.limit, wait)
			if !eventually(wait, func() bool { return rc.inFlight.Load() >= int32(c.limit) }) {
				t.Fatalf("%s: only %d in flight, want %d", c.typ, rc.inFlight.Load(), c.limit)
			}
			// … and the others were refused a slot while they were held:
			// each job snoozed twice (River counts the snoozes in the
			// job's metadata), or, fanned out while every slot was held,
			// was deferred by the fanout for the holders to send
			// (deferBusy: LeaseFor out, never run before that).
			held := map[string]bool{}
			for _, r := range rc.receipts() {
				held[r.Header.Get("X-Kwork-Delivery")] = true
			}
			var waiting []int64
			for _, id := range ids {
				d := shop.waitDelivery(ep.ID, id, wait, func(d deliveryOut) bool { return d.JobID != 0 })
				if !held[d.ID] {
					waiting = append(waiting, d.JobID)
				}
			}
			if len(waiting) != c.publish-c.limit {
				t.Fatalf("%s: %d deliveries waiting, want %d", c.typ, len(waiting), c.publish-c.limit)
			}
			for _, jobID := range waiting {
				b.waitJob(jobID, func(j *rivertype.JobRow) bool {
					var m struct {
						Snoozes int `json:"snoozes"`
					}
					_ = json.Unmarshal(j.Metadata, &m)
					deferred := j.State == rivertype.JobStateScheduled && j.Attempt == 0 && time.Until(j.ScheduledAt) > time.Minute
					return m.Snoozes >= 2 || deferred
				})
			}
			if m := rc.maxInFl.Load(); m != int32(c.limit) {
				t.Fatalf("%s: %d deliveries in flight at once, want %d", c.typ, m, c.limit)
			}
			release()
			rc.waitFor(t, c.publish, wait)
			for _, id := range ids {
				shop.waitDelivery(ep.ID, id, wait, func(d deliveryOut) bool { return d.State == "delivered" })
			}
			if m := rc.maxInFl.Load(); m > int32(c.limit) || m < 2 {
				t.Fatalf("%s: max concurrency %d, want 2..%d", c.typ, m, c.limit)
			}
			for _, r := range rc.receipts() {
				checkKwork(t, ep.Secret, r)
			}
		}
	})
}

// TestKworkSendTestOnFailingSubscription: send_test exists to check the
// address and the signature check (the kwork profile), which is what an owner does
// right after fixing a failing receiver. The test event must go out then,
// not after the 5-minute cooldown a failing endpoint puts on new events.
func TestKworkSendTestOnFailingSubscription(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		shop := b.kworkOwner("shop", shopApp)
		rc := newReceiver(t)
		rc.setRespond(status(500))
		shop.registerType("order.paid")
		ep := shop.subscribe(rc.URL, []string{"order.paid"}, nil)
		order := shop.publishFor("order.paid", "acme_corp", `{}`)
		shop.waitDelivery(ep.ID, order, wait, func(d deliveryOut) bool { return d.Attempts == 1 })
		if e := shop.getEndpoint(ep.ID); e.State != "failing" {
			t.Fatalf("endpoint %+v, want failing", e)
		}
		rc.setRespond(status(200)) // the owner fixed the receiver
		ping := shop.sendTest(ep.ID)
		d := shop.waitDelivery(ep.ID, ping, wait, func(d deliveryOut) bool { return d.JobID != 0 })
		if d.NextAttemptAt != nil && d.NextAttemptAt.After(b.clock.Now().Add(wait)) {
			t.Fatalf("open.ping to a failing subscription is held until %s (cooldown), not sent now", d.NextAttemptAt)
		}
		shop.waitDelivery(ep.ID, ping, wait, func(d deliveryOut) bool { return d.State == "delivered" })
	})
}
