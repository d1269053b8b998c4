package console_test

import (
	"net/http"
	"net/url"
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

// TestPollingEndpointForm: the console's form makes a polling endpoint
// (kind poll, no URL) and shows its poll token once, on the page after
// saving; its edit form has no URL field, and saving it keeps it a
// polling endpoint.
func TestPollingEndpointForm(t *testing.T) {
	s := startSite(t, dbtest.Backends()[0])
	c := newFormClient(t, s)
	c.signIn(s.keys["acme"])
	_, form := c.get("/admin/webhooks/new")
	if !strings.Contains(form, `name="kind" value="poll"`) {
		t.Fatalf("the new-endpoint form has no polling choice: %.1500s", form)
	}
	resp, page := c.post("/admin/webhooks", s.srv.URL, url.Values{"csrf": {c.csrf()}, "kind": {"poll"}, "types": {"invoice.paid"}, "enabled": {"on"}})
	if resp.StatusCode != 201 {
		t.Fatalf("creating a polling endpoint from the form: %d %.1500s", resp.StatusCode, page)
	}
	_, rest, ok := strings.Cut(page, `id="poll-token" type="text" readonly value="`)
	token, _, _ := strings.Cut(rest, `"`)
	if !ok || !strings.HasPrefix(token, "hkp_") {
		t.Fatalf("the page after saving shows no poll token: %.2000s", page)
	}
	_, after, _ := strings.Cut(page, `data-replace-url="/admin/webhooks/`)
	id, _, _ := strings.Cut(after, `"`)
	var got struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if code := s.api(token, "GET", "/api/v1/poll/"+id, nil, &got); code != 200 {
		t.Fatalf("polling %s with the token the page showed answered %d", id, code)
	}
	_, edit := c.get("/admin/webhooks/" + id + "/edit")
	if strings.Contains(edit, `id="url"`) || !strings.Contains(edit, `id="polled-note"`) {
		t.Fatalf("a polling endpoint's edit form shows a URL field, or no note: %.2000s", edit)
	}
	resp, page = c.post("/admin/webhooks/"+id, s.srv.URL, url.Values{"csrf": {c.csrf()}, "kind": {"poll"}, "description": {"batch job"}, "types": {"invoice.paid"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("saving the polling endpoint's edit: %d %.1500s", resp.StatusCode, page)
	}
	_, view := c.get("/admin/webhooks/" + id)
	if !strings.Contains(view, "batch job") || !strings.Contains(view, "Polling endpoint (no URL)") || strings.Contains(view, token) {
		t.Fatalf("after the edit: %.2000s", view)
	}
}
