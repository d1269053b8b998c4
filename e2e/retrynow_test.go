package e2e_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/dbtest"
)

// TestRetryNow: after the owner fixes the receiver, retry_now makes every
// pending delivery due at once — one waiting out its 5-minute retry
// backoff, one waiting out the failing endpoint's 5-minute cooldown — and
// says how many; with nothing waiting it answers 0 and says what it covers,
// and so does redeliver.
func TestRetryNow(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		rc := newReceiver(t)
		rc.setRespond(status(500))
		b.registerType("invoice.paid")
		ep := b.endpoint(rc.URL, "invoice.*")

		first := b.publish("invoice.paid", `{"n":1}`)
		d := b.waitDelivery(ep.ID, first, wait, func(d deliveryOut) bool { return d.Attempts == 1 })
		b.waitJob(d.JobID, waitingRetry)
		b.retryNow(d.JobID) // the second attempt fails too: the next waits 5 minutes
		d = b.waitDelivery(ep.ID, first, wait, func(d deliveryOut) bool { return d.Attempts == 2 && d.NextAttemptAt != nil })
		if until := time.Until(*d.NextAttemptAt); until < 4*time.Minute {
			t.Fatalf("after 2 failures the next attempt is in %s, want ~5m", until)
		}
		// River records the job's failure after hookd records the attempt:
		// a job still running is one retry_now leaves alone.
		b.waitJob(d.JobID, waitingRetry)
		if st := b.getEndpoint(ep.ID).State; st != "failing" {
			t.Fatalf("endpoint %s after failures, want failing", st)
		}
		second := b.publish("invoice.paid", `{"n":2}`)
		d2 := b.waitDelivery(ep.ID, second, wait, func(d deliveryOut) bool { return d.NextAttemptAt != nil })
		if until := time.Until(*d2.NextAttemptAt); until < 4*time.Minute {
			t.Fatalf("a new delivery to a failing endpoint is due in %s, want the ~5m cooldown", until)
		}

		rc.setRespond(status(200))
		var got struct {
			RetriedNow int    `json:"retried_now"`
			Note       string `json:"note"`
		}
		b.must(202, "POST", "/api/admin/webhooks/"+ep.ID+"/retry_now", nil, &got)
		if got.RetriedNow != 2 || got.Note != "" {
			t.Fatalf("retry_now = %+v, want 2 and no note", got)
		}
		// Both go well before their 5 minutes.
		b.waitDelivery(ep.ID, first, wait, func(d deliveryOut) bool { return d.State == "delivered" })
		b.waitDelivery(ep.ID, second, wait, func(d deliveryOut) bool { return d.State == "delivered" })
		if st := b.getEndpoint(ep.ID).State; st != "enabled" {
			t.Errorf("endpoint %s after the deliveries succeeded, want enabled", st)
		}

		b.must(202, "POST", "/api/admin/webhooks/"+ep.ID+"/retry_now", nil, &got)
		if got.RetriedNow != 0 || !strings.Contains(got.Note, "redeliver") {
			t.Errorf("retry_now with nothing pending = %+v, want 0 and a note naming redeliver", got)
		}
		var red struct {
			Redelivered int    `json:"redelivered"`
			Note        string `json:"note"`
		}
		b.must(202, "POST", "/api/admin/webhooks/"+ep.ID+"/redeliver", nil, &red)
		if red.Redelivered != 0 || !strings.Contains(red.Note, "failed") || !strings.Contains(red.Note, "retry_now") {
			t.Errorf("redeliver with nothing failed = %+v, want 0 and a note on what it covers", red)
		}

		b.must(200, "PATCH", "/api/admin/webhooks/"+ep.ID, map[string]any{"enabled": false}, nil)
		if code := b.do("POST", "/api/admin/webhooks/"+ep.ID+"/retry_now", nil, nil); code != 409 {
			t.Errorf("retry_now on a disabled endpoint: %d, want 409", code)
		}
		if code := b.do("POST", "/api/admin/webhooks/ep_nope/retry_now", nil, nil); code != 404 {
			t.Errorf("retry_now on an unknown endpoint: %d, want 404", code)
		}
	})
}
