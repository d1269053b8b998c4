package e2e_test

// Retry-After from a hostile or confused receiver: the floor under a
// snooze, and the budget that makes a delivery told to wait again and again
// spend attempts, so it ends.

import (
	"net/http"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/profile"
)

// TestRetryAfterFloor: a receiver answering 429 or 503 with a Retry-After
// that asks for no wait at all (0, or a date already past) gets the
// delivery again no sooner than the profile's first backoff step
// (standard: 5 s), and the wait spends no attempt. Before the floor it got
// the same delivery again at once: a dozen sends in 3 s, for as long as
// five days.
func TestRetryAfterFloor(t *testing.T) {
	t.Parallel()
	floor := profile.StandardRetry.Floor()
	for _, c := range []struct {
		name    string
		respond func(*http.Request, int) (int, http.Header)
	}{
		{"429 Retry-After 0", status(429, "Retry-After", "0")},
		{"503 Retry-After a past date", status(503, "Retry-After", time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat))},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			forBackend(t, func(t *testing.T, backend dbtest.Backend) {
				b := setup(t, backend)
				rc := newReceiver(t)
				rc.setRespond(c.respond)
				b.registerType("busy.receiver")
				ep := b.endpoint(rc.URL, "busy.receiver")
				id := b.publish("busy.receiver", `{}`)
				got := rc.waitFor(t, 2, wait)
				if gap := got[1].At.Sub(got[0].At); gap < floor {
					t.Fatalf("sent again %s after the first send, want at least %s (%d sends by then)", gap, floor, len(rc.receipts()))
				}
				d := b.waitDelivery(ep.ID, id, wait, func(d deliveryOut) bool { return d.LastStatus != 0 })
				if d.Attempts != 0 || d.State != "pending" {
					t.Fatalf("a snooze within the budget spent an attempt: %+v", d)
				}
			})
		})
	}
}

// TestRetryAfterBudget: a standard receiver that answers every send 429
// with Retry-After gets 10 snoozes that spend no attempt (each counted on
// the job); the 11th such answer spends an attempt, and so does every one
// after it (the budget does not refill): the delivery ends, after at most
// 10 + 18 sends. Before, every such answer was free, for five days.
func TestRetryAfterBudget(t *testing.T) {
	t.Parallel()
	r := profile.StandardRetry
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		rc := newReceiver(t)
		// 60 s: longer than any look here, so River never runs the job
		// by itself; the test clock is moved past each wait instead.
		rc.setRespond(status(429, "Retry-After", "60"))
		b.registerType("busy.receiver")
		ep := b.endpoint(rc.URL, "busy.receiver")
		id := b.publish("busy.receiver", `{}`)
		var jobID int64
		for n := 1; n <= r.FreeSnoozes+2; n++ {
			rc.waitFor(t, n, wait)
			spent := max(0, n-r.FreeSnoozes)
			d := b.waitDelivery(ep.ID, id, wait, func(d deliveryOut) bool { return d.Attempts == spent && d.NextAttemptAt != nil })
			jobID = d.JobID
			j := b.waitJob(jobID, func(j *rivertype.JobRow) bool {
				var m struct {
					Snoozes int `json:"hookd_retry_after_snoozes"`
				}
				_ = jsonUnmarshal(j.Metadata, &m)
				if spent == 0 {
					return j.State == rivertype.JobStateScheduled && m.Snoozes == n && j.Attempt == 0
				}
				return waitingRetry(j) && m.Snoozes == r.FreeSnoozes
			})
			if j.Attempt != spent || d.State != "pending" {
				t.Fatalf("after send %d: job attempt %d, want %d; delivery %+v", n, j.Attempt, spent, d)
			}
			b.clock.Advance(61 * time.Second)
			b.retryNow(jobID)
		}
		rc.waitFor(t, r.FreeSnoozes+3, wait)
	})
}

// TestSnoozedNotDrained: a delivery its receiver told to wait is sent again
// only by its own job, which counts the snooze; a lease holder's drain,
// which sends the endpoint's fresh deliveries after a success, leaves it
// alone even once it is due. Drained, it would be sent beside the budget.
func TestSnoozedNotDrained(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		rc := newReceiver(t)
		rc.setRespond(func(_ *http.Request, n int) (int, http.Header) {
			if n == 1 { // the first send: wait 60 s (the job's snooze outlasts the test)
				return 429, http.Header{"Retry-After": {"60"}}
			}
			return 204, nil
		})
		b.registerType("busy.receiver")
		ep := b.endpoint(rc.URL, "busy.receiver")
		held := b.publish("busy.receiver", `{}`)
		first := b.waitDelivery(ep.ID, held, wait, func(d deliveryOut) bool { return d.LastStatus == 429 })
		// The first job's work is over (its snooze recorded, the lease let
		// go) before the clock moves: the row shows the 429 a moment
		// earlier, and what the job writes after it, read at a clock
		// already moved on, would hold the endpoint a minute more.
		b.waitJob(first.JobID, func(j *rivertype.JobRow) bool { return j.State == rivertype.JobStateScheduled })
		// Due now by hookd's clock; clear the failure's cooldown so the
		// next event goes at once, and its job drains after its success.
		b.clock.Advance(61 * time.Second)
		b.must(200, "PATCH", "/api/admin/webhooks/"+ep.ID, map[string]any{"enabled": true}, nil)
		next := b.publish("busy.receiver", `{}`)
		b.waitDelivery(ep.ID, next, wait, func(d deliveryOut) bool { return d.State == "delivered" })
		b.waitSlotsFree(ep.ID) // the holder's drain is over
		n := 0
		for _, r := range rc.receipts() {
			if r.Header.Get("webhook-id") == held {
				n++
			}
		}
		if d := b.waitDelivery(ep.ID, held, wait, func(deliveryOut) bool { return true }); n != 1 || d.State != "pending" || d.Attempts != 0 {
			t.Fatalf("the snoozed delivery was sent %d times (want 1, its job's next send is its own): %+v", n, d)
		}
	})
}
