package console_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/dbtest"
)

// TestWorkersPage: an operator sees which owners hold the delivery
// workers, by lane (a held lease slot is a delivery in flight), in both
// languages; an owner's admin does not reach the page.
func TestWorkersPage(t *testing.T) {
	for _, backend := range dbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			t.Parallel()
			s := startSite(t, backend)
			var ep struct {
				ID string `json:"id"`
			}
			if code := s.api(s.keys["acme"], "POST", "/api/admin/webhooks", map[string]any{"url": "http://127.0.0.1:9/hangs", "event_types": []string{"invoice.*"}}, &ep); code != 201 {
				t.Fatalf("create endpoint: %d", code)
			}
			// A delivery in flight is a held slot of the endpoint's lease.
			until := time.Now().Add(time.Hour).UnixMicro()
			if _, ok, err := s.h.DB.Q().TakeLease(context.Background(), ep.ID, 42, time.Now().UnixMicro(), until); err != nil || !ok {
				t.Fatalf("take the lease: %v %v", ok, err)
			}
			op := newFormClient(t, s)
			op.signIn(s.keys["operator"])
			resp, body := op.get("/admin/workers")
			if resp.StatusCode != 200 || !strings.Contains(body, `id="in-flight"`) || !strings.Contains(body, "<code>acme</code>") || !strings.Contains(body, "healthy") {
				t.Fatalf("operator's workers page: %d %.600s", resp.StatusCode, body)
			}
			admin := newFormClient(t, s)
			admin.signIn(s.keys["acme"])
			if resp, body := admin.get("/admin/workers"); resp.StatusCode != 403 {
				t.Fatalf("an admin's workers page answered %d, want 403: %.300s", resp.StatusCode, body)
			}
		})
	}
}
