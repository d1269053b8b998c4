package e2e_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/webhook"
)

// TestEndpointStateMachine walks the standard profile's endpoint diagram: enabled →
// failing (any non-success) → disabled after 5 days of continuous failure →
// enabled again by the owner, which clears the failure.
func TestEndpointStateMachine(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		rc := newReceiver(t)
		rc.setRespond(status(500))
		healthy := newReceiver(t)
		b.registerType("state.test")
		ep := b.endpoint(rc.URL, "state.test")
		other := b.endpoint(healthy.URL, "state.test")
		first := b.publish("state.test", `{}`)
		d := b.waitDelivery(ep.ID, first, wait, func(d deliveryOut) bool { return d.Attempts == 1 })
		e := b.getEndpoint(ep.ID)
		if e.State != "failing" || e.FailingSince == nil {
			t.Fatalf("after a failure: %+v", e)
		}
		since := *e.FailingSince

		// Cooldown: while failing, a new delivery is scheduled 5 minutes out.
		cooled := b.publish("state.test", `{}`)
		cd := b.waitDelivery(ep.ID, cooled, wait, func(d deliveryOut) bool { return d.JobID != 0 })
		near(t, "cooldown delivery", *cd.NextAttemptAt, b.clock.Now().Add(5*time.Minute), 5*time.Second)
		near(t, "cooldown job", b.job(cd.JobID).ScheduledAt, time.Now().Add(5*time.Minute), 5*time.Second)
		if n := len(rc.receipts()); n != 1 {
			t.Fatalf("failing endpoint hit %d times, want 1 (cooldown)", n)
		}

		// Just under 5 days of failure: still failing, not disabled.
		b.waitJob(d.JobID, waitingRetry)
		b.clock.Advance(5*24*time.Hour - time.Minute)
		b.retryNow(d.JobID)
		b.waitDelivery(ep.ID, first, wait, func(d deliveryOut) bool { return d.Attempts == 2 })
		if e := b.getEndpoint(ep.ID); e.State != "failing" || !e.FailingSince.Equal(since) {
			t.Fatalf("before 5 days: %+v (failing_since must not move)", e)
		}
		// Past 5 days: the next failure disables it, with a reason. That
		// failure is first's retry or the cooled delivery's, whichever runs
		// first: the cooled one is due on the advanced clock too, and its
		// own job retries on River's (real) clock. If the cooled one's
		// failure disabled the endpoint, first's retry ends it failed
		// without sending.
		b.waitJob(d.JobID, waitingRetry)
		b.clock.Advance(2 * time.Minute)
		b.retryNow(d.JobID)
		b.waitDelivery(ep.ID, first, wait, func(d deliveryOut) bool {
			return d.Attempts == 3 || d.State == "failed" && d.LastError == "endpoint disabled"
		})
		e = b.getEndpoint(ep.ID)
		if e.State != "disabled" || e.Enabled || !strings.Contains(e.DisabledReason, "continuous failure") {
			t.Fatalf("after 5 days: %+v", e)
		}

		// A disabled endpoint gets no new deliveries (the other one does).
		late := b.publish("state.test", `{}`)
		b.waitDelivery(other.ID, late, wait, func(d deliveryOut) bool { return d.State == "delivered" })
		for _, dl := range b.deliveries(ep.ID) {
			if dl.EventID == late {
				t.Fatal("a disabled endpoint got a new delivery")
			}
		}

		// The owner turns it back on: the failure is cleared.
		var re endpointOut
		b.must(200, "PATCH", "/api/admin/webhooks/"+ep.ID, map[string]any{"enabled": true}, &re)
		if re.State != "enabled" || re.FailingSince != nil || re.DisabledReason != "" {
			t.Fatalf("re-enabled: %+v", re)
		}
		rc.setRespond(status(200))
		again := b.publish("state.test", `{}`)
		b.waitDelivery(ep.ID, again, wait, func(d deliveryOut) bool { return d.State == "delivered" })
	})
}

func TestSendTestAndRotateSecret(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		rc := newReceiver(t)
		other := newReceiver(t)
		b.registerType("x.y")
		ep := b.endpoint(rc.URL, "x.y")
		b.endpoint(other.URL, "*")
		var sent struct {
			EventID string `json:"event_id"`
			Type    string `json:"type"`
		}
		b.must(202, "POST", "/api/admin/webhooks/"+ep.ID+"/send_test", nil, &sent)
		if sent.Type != "webhook.test" {
			t.Fatalf("test event type %q", sent.Type)
		}
		r := rc.waitFor(t, 1, wait)[0]
		if ev := verify(t, ep.Secret, r); ev.Type != "webhook.test" || ev.ID != sent.EventID {
			t.Fatalf("test event %+v", ev)
		}
		// Only that endpoint: the "*" endpoint must not get it.
		b.waitDelivery(ep.ID, sent.EventID, wait, func(d deliveryOut) bool { return d.State == "delivered" })
		if n := len(other.receipts()); n != 0 {
			t.Fatalf("send_test reached another endpoint (%d requests)", n)
		}

		// Rotation without overlap: a new secret, shown once; old
		// signatures no longer verify (rotation_test.go: with overlap).
		var rot endpointOut
		b.must(200, "POST", "/api/admin/webhooks/"+ep.ID+"/rotate_secret", map[string]string{"overlap": "0"}, &rot)
		if rot.Secret == "" || rot.Secret == ep.Secret {
			t.Fatalf("rotate gave %q", rot.Secret)
		}
		if got := b.getEndpoint(ep.ID); got.Secret != "" {
			t.Fatal("get shows the secret")
		}
		b.must(202, "POST", "/api/admin/webhooks/"+ep.ID+"/send_test", nil, nil)
		r2 := rc.waitFor(t, 2, wait)[1]
		verify(t, rot.Secret, r2)
		old, _ := webhook.NewVerifier(ep.Secret)
		if _, err := old.Verify(r2.Header, r2.Body); err == nil {
			t.Fatal("the old secret still verifies after rotation")
		}
	})
}

// TestSecretsSealedAtRest: the endpoint secret is not stored in the clear.
func TestSecretsSealedAtRest(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.Backends()[0])
	rc := newReceiver(t)
	b.registerType("s.t")
	ep := b.endpoint(rc.URL, "s.t")
	key := strings.TrimPrefix(ep.Secret, "whsec_")
	ctx := context.Background()
	e, err := b.h.DB.Q().GetEndpoint(ctx, "acme", ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(e.SecretSealed, []byte(key)) || bytes.Contains(e.SecretSealed, []byte(ep.Secret)) {
		t.Fatal("secret stored in the clear")
	}
	var raw []byte
	if err := b.h.DB.SQLDB().QueryRowContext(ctx, `SELECT hash FROM hookd_api_keys LIMIT 1`).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("hkd_")) || len(raw) != 32 {
		t.Fatalf("API key not stored as a 32-byte hash: %q", raw)
	}
}
