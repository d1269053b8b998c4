package hookd_test

// Kwork's six sends, exactly: a Retry-After never adds a send.

import (
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/profile"
)

// TestKworkRetryAfterCountsEverySend: a kwork receiver that answers every
// send 429 with Retry-After gets 6 sends, each counted in the log's
// attempts; the Retry-After (capped at 1 h) only pushes the next send
// later than the backoff (30 s, 2 m, 10 m, 1 h; the 6 h one stays). Before,
// each such answer snoozed without spending an attempt, so the receiver
// got more than 6 sends and the log counted none.
func TestKworkRetryAfterCountsEverySend(t *testing.T) {
	t.Parallel()
	waits := []time.Duration{time.Hour, time.Hour, time.Hour, time.Hour, 6 * time.Hour}
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		shop := b.kworkOwner("shop", shopApp)
		rc := newReceiver(t)
		rc.setRespond(status(429, "Retry-After", "7200"))
		shop.registerType("order.paid")
		ep := shop.subscribe(rc.URL, []string{"order.paid"}, nil)
		id := shop.publishFor("order.paid", "acme_corp", `{}`)
		sends := profile.KworkRetry.MaxAttempts
		for n := 1; n <= sends; n++ {
			r := rc.waitFor(t, n, wait)[n-1]
			sentAt := b.clock.At(r.At)
			d := shop.waitDelivery(ep.ID, id, wait, func(d deliveryOut) bool {
				return d.Attempts == n && (n < sends || d.State == "failed")
			})
			if d.LastStatus != 429 {
				t.Fatalf("after send %d: %+v", n, d)
			}
			if n == sends {
				j := b.waitJob(d.JobID, func(j *rivertype.JobRow) bool { return j.FinalizedAt != nil })
				if j.State != rivertype.JobStateDiscarded || !strings.Contains(d.LastError, "attempts exhausted") {
					t.Fatalf("after %d sends: job %s, delivery %+v", n, j.State, d)
				}
				break
			}
			j := b.waitJob(d.JobID, waitingRetry)
			if j.Attempt != n || d.State != "pending" || d.NextAttemptAt == nil {
				t.Fatalf("after send %d: job attempt %d, delivery %+v", n, j.Attempt, d)
			}
			between(t, "next send", *d.NextAttemptAt, sentAt.Add(waits[n-1]), b.clock.Now().Add(waits[n-1]))
			b.clock.Advance(d.NextAttemptAt.Sub(b.clock.Now()) + time.Second)
			b.retryNow(d.JobID)
		}
		// Nothing more comes: the job is finished, and the delivery failed.
		if got := len(rc.receipts()); got != sends {
			t.Fatalf("%d sends, want exactly %d", got, sends)
		}
	})
}
