package console_test

import (
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/dbtest"
)

// TestPollingEndpointPages: a polling endpoint (no URL) is named as such
// in the list, where it is a link, and on its page; its poll token is
// never shown.
func TestPollingEndpointPages(t *testing.T) {
	s := startSite(t, dbtest.Backends()[0])
	var ep struct {
		ID        string `json:"id"`
		PollToken string `json:"poll_token"`
	}
	if code := s.api(s.keys["acme"], "POST", "/api/admin/webhooks", map[string]any{"kind": "poll", "event_types": []string{"invoice.*"}}, &ep); code != 201 || ep.PollToken == "" {
		t.Fatalf("create a polling endpoint: %d %+v", code, ep)
	}
	c := newFormClient(t, s)
	c.signIn(s.keys["acme"])
	_, list := c.get("/admin/webhooks")
	if !strings.Contains(list, `/webhooks/`+ep.ID+`" class="url">Polling endpoint (no URL)</a>`) {
		t.Errorf("the list does not name the polling endpoint: %.2000s", list)
	}
	resp, page := c.get("/admin/webhooks/" + ep.ID)
	if resp.StatusCode != 200 || !strings.Contains(page, `<h1 class="url">Polling endpoint (no URL)</h1>`) {
		t.Errorf("its page: %d %.1500s", resp.StatusCode, page)
	}
	for _, body := range []string{list, page} {
		if strings.Contains(body, ep.PollToken) || strings.Contains(body, "hkp_") {
			t.Error("a page shows the poll token")
		}
	}
}
