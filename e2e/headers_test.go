package e2e_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/dbtest"
)

// TestCustomHeaders: an endpoint's headers arrive on every attempt, an
// update changes them for the next attempt, and every reserved name (and
// any control character) is refused with a 422 that names it.
func TestCustomHeaders(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		rc := newReceiver(t)
		rc.setRespond(func(_ *http.Request, n int) (int, http.Header) {
			if n == 1 {
				return 500, nil // the first attempt fails: the retry must carry the updated headers
			}
			return 200, nil
		})
		b.registerType("hdr.thing")
		var ep struct {
			endpointOut
			Headers map[string]string `json:"headers"`
		}
		b.must(201, "POST", "/api/admin/webhooks", map[string]any{"url": rc.URL, "event_types": []string{"hdr.thing"},
			"headers": map[string]string{"x-tenant": "acme", "Authorization": "Bearer abc"}}, &ep)
		if ep.Headers["X-Tenant"] != "acme" || ep.Headers["Authorization"] != "Bearer abc" {
			t.Fatalf("record shows headers %v, want canonical X-Tenant and Authorization", ep.Headers)
		}
		b.publish("hdr.thing", `{}`)
		first := rc.waitFor(t, 1, 30*time.Second)[0]
		if first.Header.Get("X-Tenant") != "acme" || first.Header.Get("Authorization") != "Bearer abc" {
			t.Fatalf("first attempt headers %v: want X-Tenant and Authorization", first.Header)
		}
		verify(t, ep.Secret, first) // the signature headers are hookd's own, untouched

		var upd struct {
			Headers map[string]string `json:"headers"`
		}
		b.must(200, "PATCH", "/api/admin/webhooks/"+ep.ID, map[string]any{"headers": map[string]string{"X-Tenant": "globex"}}, &upd)
		if len(upd.Headers) != 1 || upd.Headers["X-Tenant"] != "globex" {
			t.Fatalf("updated record shows %v, want only X-Tenant: globex", upd.Headers)
		}
		second := rc.waitFor(t, 2, 30*time.Second)[1] // the retry, 5 s later
		if second.Header.Get("X-Tenant") != "globex" || second.Header.Get("Authorization") != "" {
			t.Fatalf("retry headers %v: want X-Tenant globex and no Authorization", second.Header)
		}
		if second.Header.Get("webhook-id") != first.Header.Get("webhook-id") {
			t.Fatal("the retry is not the same delivery")
		}
		verify(t, ep.Secret, second)

		reserved := []string{"webhook-id", "Webhook-Signature", "webhook-anything", "X-Kwork-Signature", "x-kwork-event",
			"Content-Type", "content-length", "Host", "User-Agent", "Connection", "Keep-Alive", "Transfer-Encoding",
			"TE", "Trailer", "Upgrade", "Proxy-Authorization", "Proxy-Authenticate"}
		for _, name := range reserved {
			var e struct {
				Error struct{ Message string } `json:"error"`
			}
			body := map[string]any{"url": rc.URL, "event_types": []string{"hdr.thing"}, "headers": map[string]string{name: "x"}}
			if got := b.do("POST", "/api/admin/webhooks", body, &e); got != 422 {
				t.Errorf("create with header %q: status %d, want 422", name, got)
			}
			if !strings.Contains(strings.ToLower(e.Error.Message), strings.ToLower(name)) {
				t.Errorf("create with header %q: message %q does not name it", name, e.Error.Message)
			}
			if got := b.do("PATCH", "/api/admin/webhooks/"+ep.ID, map[string]any{"headers": map[string]string{name: "x"}}, nil); got != 422 {
				t.Errorf("update with header %q: status %d, want 422", name, got)
			}
		}
		bad := []map[string]string{
			{"X-Ok": "line\r\nInjected: yes"},
			{"X-Ok": "nul\x00"},
			{"X Bad": "x"},
			{"X-Bad\n": "x"},
		}
		for i := 0; i < 21; i++ {
			if i == 0 {
				bad = append(bad, map[string]string{})
			}
			bad[len(bad)-1]["X-H"+strings.Repeat("a", i)] = "v"
		}
		for _, h := range bad {
			if got := b.do("POST", "/api/admin/webhooks", map[string]any{"url": rc.URL, "event_types": []string{"hdr.thing"}, "headers": h}, nil); got != 422 {
				t.Errorf("create with headers %q: status %d, want 422", h, got)
			}
		}
		// Refusals changed nothing: the endpoint still has its one header,
		// and no other endpoint exists.
		var list struct {
			Data []struct {
				Headers map[string]string `json:"headers"`
			} `json:"data"`
		}
		b.must(200, "GET", "/api/admin/webhooks", nil, &list)
		if len(list.Data) != 1 || len(list.Data[0].Headers) != 1 || list.Data[0].Headers["X-Tenant"] != "globex" {
			t.Fatalf("after the refusals: %+v, want the one endpoint with X-Tenant: globex", list.Data)
		}
	})
}
