package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/dbtest"
)

// TestRecoverWindow: an owner whose receiver refused every delivery for a
// while gets back exactly the failed deliveries of the window it names,
// and nothing before or after it; delivered ones only when it asks.
func TestRecoverWindow(t *testing.T) {
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		b.registerType("order.created")
		var down atomic.Bool
		down.Store(true)
		rc := newReceiver(t)
		rc.setRespond(func(*http.Request, int) (int, http.Header) {
			if down.Load() {
				return http.StatusGone, nil // the standard profile discards at once: failed
			}
			return http.StatusNoContent, nil
		})
		ep := b.endpoint(rc.URL, "order.*")
		publishFailed := func(n int) []string { return publishRefused(b, ep.ID, n) }
		before := publishFailed(2)
		b.clock.Advance(2 * time.Hour)
		windowStart := b.clock.Now()
		inside := publishFailed(3)
		down.Store(false)
		delivered := b.publish("order.created", `{"delivered":true}`)
		settleNudged(b, ep.ID, delivered, "delivered")
		b.clock.Advance(2 * time.Hour)
		windowEnd := b.clock.Now()
		down.Store(true)
		after := publishFailed(1)
		down.Store(false)
		requests := len(rc.receipts())

		var got struct {
			Recovered, Total int
			TaskID           int64 `json:"task_id"`
		}
		b.must(202, "POST", "/api/admin/webhooks/"+ep.ID+"/recover", map[string]any{
			"since": windowStart.Format(time.RFC3339Nano), "until": windowEnd.Format(time.RFC3339Nano)}, &got)
		if got.Recovered != 3 || got.Total != 3 || got.TaskID != 0 {
			t.Fatalf("recover = %+v, want the window's 3 failed deliveries re-enqueued in the request", got)
		}
		for _, id := range inside {
			b.waitDelivery(ep.ID, id, 20*time.Second, func(d deliveryOut) bool { return d.State == "delivered" })
		}
		rc.waitFor(t, requests+3, 20*time.Second)
		for _, id := range append(before, after...) {
			for _, d := range b.deliveries(ep.ID) {
				if d.EventID == id && d.State != "failed" {
					t.Fatalf("delivery of %s outside the window was recovered: %+v", id, d)
				}
			}
		}
		if n := len(rc.receipts()); n != requests+3 {
			t.Fatalf("the receiver got %d requests after the recovery, want exactly the window's 3", n-requests)
		}

		// delivered ones too, when asked: the one delivered in the
		// window, and the three just recovered.
		b.must(202, "POST", "/api/admin/webhooks/"+ep.ID+"/recover", map[string]any{
			"since": windowStart.Format(time.RFC3339Nano), "until": windowEnd.Format(time.RFC3339Nano), "states": []string{"delivered"}}, &got)
		if got.Recovered != 4 {
			t.Fatalf("recover of delivered = %+v, want 4", got)
		}
		rc.waitFor(t, requests+3+4, 20*time.Second)
	})
}

// TestRecoverInBackground: a window larger than the request's bound runs
// as a task, whose progress the owner reads until it has re-enqueued
// every delivery.
func TestRecoverInBackground(t *testing.T) {
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		b.h.Ops.SetRecoverInline(2)
		b.registerType("order.created")
		var down atomic.Bool
		down.Store(true)
		rc := newReceiver(t)
		rc.setRespond(func(*http.Request, int) (int, http.Header) {
			if down.Load() {
				return http.StatusGone, nil
			}
			return http.StatusNoContent, nil
		})
		ep := b.endpoint(rc.URL, "order.*")
		start := b.clock.Now().Add(-time.Minute)
		ids := publishRefused(b, ep.ID, 5)
		down.Store(false)
		var got struct {
			Recovered, Total int
			TaskID           int64 `json:"task_id"`
		}
		b.must(202, "POST", "/api/admin/webhooks/"+ep.ID+"/recover", map[string]any{"since": start.Format(time.RFC3339Nano)}, &got)
		if got.TaskID == 0 || got.Total != 5 || got.Recovered != 0 {
			t.Fatalf("recover of 5 with an inline bound of 2 = %+v, want a task for 5", got)
		}
		var prog struct {
			State     string
			Recovered int
			Total     int
		}
		ok := eventually(30*time.Second, func() bool {
			b.must(200, "GET", fmt.Sprintf("/api/admin/webhooks/%s/recoveries/%d", ep.ID, got.TaskID), nil, &prog)
			return prog.State == "completed"
		})
		if !ok || prog.Recovered != 5 || prog.Total != 5 {
			t.Fatalf("recovery task = %+v, want completed with 5 of 5", prog)
		}
		for _, id := range ids {
			b.waitDelivery(ep.ID, id, 20*time.Second, func(d deliveryOut) bool { return d.State == "delivered" })
		}
		// Another endpoint's path, or a job that is no recovery, is not found.
		other := b.endpoint(rc.URL+"/other", "order.*")
		if code := b.do("GET", fmt.Sprintf("/api/admin/webhooks/%s/recoveries/%d", other.ID, got.TaskID), nil, nil); code != 404 {
			t.Fatalf("another endpoint's view of the task answered %d, want 404", code)
		}
	})
}

// TestRecoverBadWindow: a window that cannot be recovered answers 422
// saying what to fix, and re-enqueues nothing.
func TestRecoverBadWindow(t *testing.T) {
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		b.registerType("order.created")
		rc := newReceiver(t)
		ep := b.endpoint(rc.URL, "order.*")
		now := b.clock.Now()
		for _, c := range []struct {
			name string
			in   map[string]any
			want string
		}{
			{"no since", map[string]any{}, "since is required"},
			{"until before since", map[string]any{"since": now.Add(-time.Hour).Format(time.RFC3339), "until": now.Add(-2 * time.Hour).Format(time.RFC3339)}, "must be before until"},
			{"beyond retention", map[string]any{"since": now.Add(-31 * 24 * time.Hour).Format(time.RFC3339)}, "beyond the retention window"},
			{"pending", map[string]any{"since": now.Add(-time.Hour).Format(time.RFC3339), "states": []string{"pending"}}, `states[0] "pending"`},
			{"garbage time", map[string]any{"since": "yesterday"}, "not an RFC 3339 time"},
		} {
			var e struct {
				Error struct{ Message string } `json:"error"`
			}
			if code := b.do("POST", "/api/admin/webhooks/"+ep.ID+"/recover", c.in, &e); code != 422 || !strings.Contains(e.Error.Message, c.want) {
				t.Errorf("%s: %d %q, want 422 with %q", c.name, code, e.Error.Message, c.want)
			}
		}
		bob := ownerBundle(b, "bob")
		if code := bob.do("POST", "/api/admin/webhooks/"+ep.ID+"/recover", map[string]any{"since": now.Add(-time.Hour).Format(time.RFC3339)}, nil); code != 404 {
			t.Fatalf("another owner's recover of acme's endpoint answered %d, want 404", code)
		}
	})
}

// publishRefused publishes n order.created events to an endpoint whose
// receiver refuses them (410: failed at once) and waits until each is
// failed. The endpoint is failing after the first, so each later delivery
// waits out the 5-minute cooldown: its job is brought forward.
func publishRefused(b *bundle, epID string, n int) []string {
	b.t.Helper()
	var ids []string
	for i := range n {
		id := b.publish("order.created", fmt.Sprintf(`{"n":%d}`, i))
		settleNudged(b, epID, id, "failed")
		ids = append(ids, id)
	}
	return ids
}

// settleNudged waits until the endpoint's delivery of eventID is in
// state, bringing its job forward while it waits out the failing
// endpoint's cooldown.
func settleNudged(b *bundle, epID, eventID, state string) {
	b.t.Helper()
	b.waitDelivery(epID, eventID, 20*time.Second, func(d deliveryOut) bool {
		if d.State == "pending" && d.Attempts == 0 && d.JobID != 0 {
			_, _ = b.h.Jobs.JobRetry(context.Background(), d.JobID) // the cooldown: not what is tested
		}
		return d.State == state
	})
}
