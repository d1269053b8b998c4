package e2e_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/hookd/hookd/internal/app"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/store"
)

func (b *bundle) job(id int64) *rivertype.JobRow {
	b.t.Helper()
	j, err := b.h.Jobs.JobGet(context.Background(), id)
	if err != nil {
		b.t.Fatalf("job %d: %v", id, err)
	}
	return j
}

// waitJob polls a River job until cond holds.
func (b *bundle) waitJob(id int64, cond func(*rivertype.JobRow) bool) *rivertype.JobRow {
	b.t.Helper()
	var j *rivertype.JobRow
	if !eventually(wait, func() bool { j = b.job(id); return cond(j) }) {
		b.t.Fatalf("job %d stuck in %s (attempt %d)", id, j.State, j.Attempt)
	}
	return j
}

// retryNow makes a waiting job available at once instead of waiting out
// its backoff (the schedule itself is asserted from scheduled_at).
func (b *bundle) retryNow(id int64) {
	b.t.Helper()
	if _, err := b.h.Jobs.JobRetry(context.Background(), id); err != nil {
		b.t.Fatalf("retry job %d: %v", id, err)
	}
}

// waitingRetry: the job failed and waits for its backoff. River marks a
// retry due within a few seconds "available" with a future scheduled_at,
// a later one "retryable".
func waitingRetry(j *rivertype.JobRow) bool {
	return (j.State == rivertype.JobStateRetryable || j.State == rivertype.JobStateAvailable) && j.ScheduledAt.After(time.Now()) && len(j.Errors) > 0
}

func status(code int, header ...string) func(*http.Request, int) (int, http.Header) {
	h := http.Header{}
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	return func(*http.Request, int) (int, http.Header) { return code, h }
}

func near(t *testing.T, what string, got, want time.Time, tol time.Duration) {
	t.Helper()
	if d := got.Sub(want); d < -tol || d > tol {
		t.Fatalf("%s = %s, want %s (±%s); off by %s", what, got, want, tol, d)
	}
}

// between checks lo <= got <= hi, with a millisecond of slack for the
// database's timestamp precision. A time hookd computes from its own clock
// is bracketed by two the test reads, so a slow machine cannot fail it.
func between(t *testing.T, what string, got, lo, hi time.Time) {
	t.Helper()
	if got.Before(lo.Add(-time.Millisecond)) || got.After(hi.Add(time.Millisecond)) {
		t.Fatalf("%s = %s, want between %s and %s", what, got, lo, hi)
	}
}

// profileCase is one profile's side of an end-to-end table: the bundle
// acting as an owner of that profile, its first backoff, and how a
// receipt is verified and identified (the id that stays across retries).
type profileCase struct {
	name       string
	owner      func(b *bundle) *bundle
	firstRetry time.Duration
	verify     func(t *testing.T, secret string, r receipt)
	idHeader   string
}

var outcomeProfiles = []profileCase{
	{"standard", func(b *bundle) *bundle { return b }, 5 * time.Second,
		func(t *testing.T, secret string, r receipt) { verify(t, secret, r) }, "webhook-id"},
	{"kwork", func(b *bundle) *bundle { return b.kworkOwner("shop", shopApp) }, 30 * time.Second,
		func(t *testing.T, secret string, r receipt) { checkKwork(t, secret, r) }, "X-Kwork-Delivery"},
}

// TestOutcomeTable walks every row of the standard profile's delivery outcomes, with a
// column per profile: kwork (the kwork profile) retries every non-2xx, 4xx included.
func TestOutcomeTable(t *testing.T) {
	t.Parallel()
	type row struct {
		name    string
		respond func(*http.Request, int) (int, http.Header)
		// retry | snooze (no attempt spent) | spend (an attempt spent, the
		// next send pushed to the receiver's wait) | discard
		standard string
		kwork    string
		snooze   time.Duration
	}
	rows := []row{
		{"500", status(500), "retry", "retry", 0},
		{"502", status(502), "retry", "retry", 0},
		{"503 without Retry-After", status(503), "retry", "retry", 0},
		{"408", status(408), "retry", "retry", 0},
		{"429 without Retry-After", status(429), "retry", "retry", 0},
		// kwork: every send counts; a Retry-After longer than the backoff
		// (30 s) pushes the next send later, a shorter one changes nothing.
		{"429 with Retry-After", status(429, "Retry-After", "120"), "snooze", "spend", 120 * time.Second},
		{"503 with Retry-After", status(503, "Retry-After", "30"), "snooze", "retry", 30 * time.Second},
		{"429 with Retry-After over the 1 h cap", status(429, "Retry-After", "7200"), "snooze", "spend", time.Hour},
		// No wait asked for: the floor, the first backoff step (5 s).
		{"429 with Retry-After 0", status(429, "Retry-After", "0"), "snooze", "retry", 5 * time.Second},
		{"503 with Retry-After a past date", status(503, "Retry-After", time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)), "snooze", "retry", 5 * time.Second},
		// Not a Retry-After: the status's own rule.
		{"429 with a negative Retry-After", status(429, "Retry-After", "-5"), "retry", "retry", 0},
		{"503 with a garbage Retry-After", status(503, "Retry-After", "soon"), "retry", "retry", 0},
		{"400", status(400), "discard", "retry", 0},
		{"401", status(401), "discard", "retry", 0},
		{"403", status(403), "discard", "retry", 0},
		{"404", status(404), "discard", "retry", 0},
		{"409", status(409), "discard", "retry", 0},
		{"410", status(410), "discard", "retry", 0},
		{"422", status(422), "discard", "retry", 0},
		{"timeout", func(r *http.Request, _ int) (int, http.Header) {
			select { // hold until hookd gives up
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return 200, nil
		}, "retry", "retry", 0},
	}
	for _, rw := range rows {
		for _, pc := range outcomeProfiles {
			verdict := map[string]string{"standard": rw.standard, "kwork": rw.kwork}[pc.name]
			t.Run(rw.name+"/"+pc.name, func(t *testing.T) {
				t.Parallel()
				forBackend(t, func(t *testing.T, backend dbtest.Backend) {
					checkOutcomeRow(t, backend, pc, rw.respond, verdict, rw.snooze)
				})
			})
		}
	}
}

func checkOutcomeRow(t *testing.T, backend dbtest.Backend, pc profileCase, respond func(*http.Request, int) (int, http.Header), verdict string, snooze time.Duration) {
	b := pc.owner(setup(t, backend, setupOpts{mutate: func(c *app.Config) { c.HTTPTimeout = shortTimeout }}))
	rc := newReceiver(t)
	rc.setRespond(respond)
	b.registerType("row.test")
	ep := b.endpoint(rc.URL, "row.test")
	published := time.Now()
	id := b.publish("row.test", `{}`)
	first := rc.waitFor(t, 1, wait)[0]
	d := b.waitDelivery(ep.ID, id, wait, func(d deliveryOut) bool { return d.LastError != "" })
	// Any non-success sets failing_since (410 and 429 too).
	if e := b.getEndpoint(ep.ID); e.FailingSince == nil || e.State != "failing" {
		t.Fatalf("endpoint after the answer: %+v", e)
	}
	switch verdict {
	case "retry":
		j := b.waitJob(d.JobID, waitingRetry)
		// The schedule counts from when hookd settled the answer: after
		// the publish, before the job was seen waiting.
		between(t, "retry at", j.ScheduledAt, published.Add(pc.firstRetry), time.Now().Add(pc.firstRetry))
		if j.Attempt != 1 || d.Attempts != 1 || d.State != "pending" {
			t.Fatalf("retry: job attempt %d, delivery %+v", j.Attempt, d)
		}
		// The retry carries the same id and body; signature fresh.
		rc.setRespond(status(200))
		b.retryNow(d.JobID)
		second := rc.waitFor(t, 2, wait)[1]
		if second.Header.Get(pc.idHeader) != first.Header.Get(pc.idHeader) || string(second.Body) != string(first.Body) {
			t.Fatalf("retry changed the %s or the body", pc.idHeader)
		}
		pc.verify(t, ep.Secret, second)
		d = b.waitDelivery(ep.ID, id, wait, func(d deliveryOut) bool { return d.State == "delivered" })
		if d.Attempts != 2 {
			t.Fatalf("delivered after %d attempts, want 2", d.Attempts)
		}
		// A success clears failing_since.
		if e := b.getEndpoint(ep.ID); e.FailingSince != nil || e.State != "enabled" {
			t.Fatalf("endpoint after success: %+v", e)
		}
	case "snooze":
		if d.State != "pending" || d.NextAttemptAt == nil || d.Attempts != 0 {
			t.Fatalf("snoozed delivery %+v", d)
		}
		j, again := snoozed(b, rc, d.JobID, first)
		if again != nil { // a short snooze, looked at only after it ended
			if gap := again.At.Sub(first.At); gap < snooze {
				t.Fatalf("sent again %s after the first send, want at least %s", gap, snooze)
			}
			return
		}
		between(t, "snoozed until", j.ScheduledAt, published.Add(snooze), time.Now().Add(snooze))
		if j.Attempt != 0 {
			t.Fatalf("snooze spent an attempt: job attempt %d", j.Attempt)
		}
	case "spend":
		// The answer spent the attempt: River retries at the backoff …
		j := b.waitJob(d.JobID, waitingRetry)
		between(t, "retry at", j.ScheduledAt, published.Add(pc.firstRetry), time.Now().Add(pc.firstRetry))
		if j.Attempt != 1 || d.Attempts != 1 || d.State != "pending" || d.NextAttemptAt == nil {
			t.Fatalf("spent: job attempt %d, delivery %+v", j.Attempt, d)
		}
		// … but the next send waits for the receiver's time: a job run
		// before it sends nothing, and spends nothing.
		between(t, "next attempt at", *d.NextAttemptAt, published.Add(snooze), time.Now().Add(snooze))
		b.retryNow(d.JobID)
		j = b.waitJob(d.JobID, func(j *rivertype.JobRow) bool { return j.State == rivertype.JobStateScheduled })
		near(t, "held until", j.ScheduledAt, *d.NextAttemptAt, 2*time.Second)
		if j.Attempt != 1 || len(rc.receipts()) != 1 {
			t.Fatalf("a job run early: attempt %d, %d sends", j.Attempt, len(rc.receipts()))
		}
		rc.setRespond(status(200))
		b.clock.Advance(snooze)
		b.retryNow(d.JobID)
		rc.waitFor(t, 2, wait)
		if d = b.waitDelivery(ep.ID, id, wait, func(d deliveryOut) bool { return d.State == "delivered" }); d.Attempts != 2 {
			t.Fatalf("delivered after %d attempts, want 2", d.Attempts)
		}
	case "discard":
		j := b.waitJob(d.JobID, func(j *rivertype.JobRow) bool { return j.FinalizedAt != nil })
		if j.State != rivertype.JobStateCancelled || d.State != "failed" {
			t.Fatalf("discard: job %s, delivery %+v", j.State, d)
		}
	default:
		t.Fatalf("unknown verdict %q", verdict)
	}
}

// snoozed waits until the job, whose first send the receiver got at
// first, is seen snoozed (River marks a snooze due within its scheduler's
// 5 s interval "available" with a future scheduled_at, a later one
// "scheduled"), or the receiver got the delivery again: again is then
// that second send (a machine slow enough looked after a short snooze
// ended).
func snoozed(b *bundle, rc *receiver, jobID int64, first receipt) (j *rivertype.JobRow, again *receipt) {
	b.t.Helper()
	ok := eventually(wait, func() bool {
		if got := rc.receipts(); len(got) > 1 {
			again = &got[1]
			return true
		}
		j = b.job(jobID)
		return (j.State == rivertype.JobStateScheduled || j.State == rivertype.JobStateAvailable) && j.ScheduledAt.After(first.At)
	})
	if !ok {
		b.t.Fatalf("job %d never seen snoozed: %s until %s", jobID, j.State, j.ScheduledAt)
	}
	return j, again
}

func TestConnectionFailureRetries(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close() // nothing listens there now
		b.registerType("conn.fail")
		ep := b.endpoint("http://"+addr+"/hook", "conn.fail")
		id := b.publish("conn.fail", `{}`)
		d := b.waitDelivery(ep.ID, id, wait, func(d deliveryOut) bool { return d.Attempts == 1 })
		if !strings.Contains(d.LastError, "connection") || d.State != "pending" {
			t.Fatalf("delivery %+v", d)
		}
		b.waitJob(d.JobID, waitingRetry)
	})
}

// TestDiscardedBeforeSending covers the outcomes decided without a
// successful request: egress blocked, endpoint disabled or deleted, event
// pruned. Each starts from a delivery waiting for its retry.
func TestDiscardedBeforeSending(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		act    func(b *bundle, epID, eventID string)
		reason string // "" : the delivery is gone with its endpoint
	}{
		{"egress blocked", func(b *bundle, epID, _ string) {
			// Point the endpoint at an address the guard refuses.
			err := b.h.DB.InTx(context.Background(), store.TxOptions{}, func(q *store.Q) error {
				e, err := q.GetEndpoint(context.Background(), "", epID)
				if err != nil {
					return err
				}
				e.URL = "http://127.0.0.2:9/hook"
				return q.UpdateEndpoint(context.Background(), e)
			})
			if err != nil {
				b.t.Fatal(err)
			}
		}, "egress blocked"},
		{"endpoint disabled", func(b *bundle, epID, _ string) {
			b.must(200, "PATCH", "/api/admin/webhooks/"+epID, map[string]any{"enabled": false}, nil)
		}, "endpoint disabled"},
		{"event pruned", func(b *bundle, _, _ string) {
			b.clock.Advance(31 * 24 * time.Hour)
			if _, _, err := b.h.Delivery.Prune(context.Background()); err != nil {
				b.t.Fatal(err)
			}
		}, "event pruned"},
		{"endpoint deleted", func(b *bundle, epID, _ string) {
			b.must(204, "DELETE", "/api/admin/webhooks/"+epID, nil, nil)
		}, ""},
	}
	for _, c := range cases {
		for _, pc := range outcomeProfiles { // kwork retries every non-2xx, yet these still end at once
			t.Run(c.name+"/"+pc.name, func(t *testing.T) {
				t.Parallel()
				forBackend(t, func(t *testing.T, backend dbtest.Backend) {
					b := pc.owner(setup(t, backend))
					rc := newReceiver(t)
					rc.setRespond(status(500))
					b.registerType("later.fail")
					ep := b.endpoint(rc.URL, "later.fail")
					id := b.publish("later.fail", `{}`)
					d := b.waitDelivery(ep.ID, id, wait, func(d deliveryOut) bool { return d.LastError != "" })
					b.waitJob(d.JobID, waitingRetry)
					c.act(b, ep.ID, id)
					rc.setRespond(status(200))
					b.retryNow(d.JobID)
					j := b.waitJob(d.JobID, func(j *rivertype.JobRow) bool { return j.FinalizedAt != nil })
					if j.State != rivertype.JobStateCancelled {
						t.Fatalf("job ended %s, want cancelled (discarded at once)", j.State)
					}
					if n := len(rc.receipts()); n != 1 {
						t.Fatalf("receiver got %d requests, want only the first", n)
					}
					if c.reason == "" {
						return
					}
					got := b.waitDelivery(ep.ID, id, wait, func(d deliveryOut) bool { return d.State == "failed" })
					if !strings.Contains(got.LastError, c.reason) {
						t.Fatalf("last_error %q, want it to say %q", got.LastError, c.reason)
					}
				})
			})
		}
	}
}

func TestAttemptsExhausted(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		rc := newReceiver(t)
		rc.setRespond(status(500))
		b.registerType("always.fails")
		ep := b.endpoint(rc.URL, "always.fails")
		id := b.publish("always.fails", `{}`)
		for n := 1; n <= 18; n++ {
			d := b.waitDelivery(ep.ID, id, wait, func(d deliveryOut) bool { return d.Attempts == n })
			j := b.waitJob(d.JobID, func(j *rivertype.JobRow) bool { return waitingRetry(j) || j.FinalizedAt != nil })
			if n < 18 {
				if j.FinalizedAt != nil {
					t.Fatalf("after attempt %d job is %s", n, j.State)
				}
				b.retryNow(d.JobID)
				continue
			}
			if j.State != rivertype.JobStateDiscarded || d.State != "failed" || !strings.Contains(d.LastError, "attempts exhausted") {
				t.Fatalf("after 18 attempts: job %s, delivery %+v", j.State, d)
			}
		}
		got := rc.receipts()
		if len(got) != 18 {
			t.Fatalf("%d requests, want 18", len(got))
		}
		for _, r := range got {
			if r.Header.Get("webhook-id") != id {
				t.Fatal("webhook-id changed across retries")
			}
		}
		// Redeliver brings the discarded delivery back with a fresh budget.
		rc.setRespond(status(200))
		var red struct{ Redelivered int }
		b.must(202, "POST", "/api/admin/webhooks/"+ep.ID+"/redeliver", nil, &red)
		if red.Redelivered != 1 {
			t.Fatalf("redelivered %d, want 1", red.Redelivered)
		}
		rc.waitFor(t, 19, wait)
		b.waitDelivery(ep.ID, id, wait, func(d deliveryOut) bool { return d.State == "delivered" })
	})
}
