package e2e_test

// Kwork's six sends, exactly: a Retry-After never adds a send, and an
// answer not finished within the timeout is a failed send.

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/hookd/hookd/internal/app"
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

// TestBodyStall: a receiver answers 200 and then does not finish its body
// within the HTTP timeout. Under kwork it "has not finished answering
// within 10 s": a failed send, retried after 30 s. Under the standard
// profile the status decides: delivered.
func TestBodyStall(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		profile   string
		delivered bool
	}{{"kwork", false}, {"standard", true}} {
		t.Run(c.profile, func(t *testing.T) {
			t.Parallel()
			forBackend(t, func(t *testing.T, backend dbtest.Backend) {
				b := setup(t, backend, setupOpts{mutate: func(c *app.Config) { c.HTTPTimeout = shortTimeout }})
				var stall atomic.Bool
				stall.Store(true)
				var got atomic.Int32
				rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					got.Add(1)
					_, _ = io.ReadAll(r.Body)
					w.WriteHeader(http.StatusOK)
					_, _ = io.WriteString(w, `{"ok":`)
					w.(http.Flusher).Flush()
					if stall.Load() {
						select { // hold the rest until hookd gives up
						case <-r.Context().Done():
						case <-time.After(5 * time.Second):
						}
					}
					_, _ = io.WriteString(w, `true}`)
				}))
				t.Cleanup(rc.Close)
				o := b
				if c.profile == "kwork" {
					o = b.kworkOwner("shop", shopApp)
				}
				o.registerType("order.paid")
				ep := o.subscribe(rc.URL, []string{"order.paid"}, nil)
				id := o.publishFor("order.paid", "acme_corp", `{}`)
				d := o.waitDelivery(ep.ID, id, wait, func(d deliveryOut) bool { return d.State != "pending" || d.Attempts > 0 })
				if c.delivered {
					if d.State != "delivered" || d.Attempts != 1 || d.LastStatus != 200 {
						t.Fatalf("standard: a 2xx whose body stalled: %+v, want delivered", d)
					}
					return
				}
				if d.State != "pending" || d.Attempts != 1 || !strings.Contains(d.LastError, "timeout") {
					t.Fatalf("kwork: a 2xx whose body stalled: %+v, want a failed send (timeout)", d)
				}
				b.waitJob(d.JobID, waitingRetry)
				stall.Store(false)
				b.retryNow(d.JobID)
				d = o.waitDelivery(ep.ID, id, wait, func(d deliveryOut) bool { return d.State == "delivered" })
				if d.Attempts != 2 || got.Load() != 2 {
					t.Fatalf("delivered %+v after %d sends, want 2", d, got.Load())
				}
			})
		})
	}
}
