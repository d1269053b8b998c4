package console_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hookd/hookd/internal/dbtest"
)

// TestExportDialog: the endpoint page's Export… dialog downloads the
// deliveries of the window and state picked as NDJSON, each with its
// envelope; a bad window is refused in the page's language, the dialog
// left open, nothing downloaded; another owner's endpoint is not found.
func TestExportDialog(t *testing.T) {
	for _, b := range dbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			s := startSite(t, b)
			rc := newSwitchable(t)
			var ep struct{ ID string }
			if st := s.api(s.keys["acme"], http.MethodPost, "/api/admin/webhooks", map[string]any{"url": rc.URL, "event_types": []string{"invoice.*"}}, &ep); st != http.StatusCreated {
				t.Fatalf("create endpoint: %d", st)
			}
			start := time.Now().UTC().Add(-time.Minute).Format("2006-01-02T15:04")
			ids := s.publishN(2, "invoice://a/")
			s.waitStates(ep.ID, 2, "failed")

			p := &page{t: t, tab: browser(t), s: s}
			p.signIn(s.keys["acme"])
			p.open("/admin/webhooks/" + ep.ID)
			p.do(chromedp.Click(chromedp.CSS("#export summary")), chromedp.WaitVisible(chromedp.ID("export-since")))
			p.setValue("#export-since", start)
			p.shoot("export-dialog")
			// What submitting the form downloads, read with the page's session.
			got := run(p, chromedp.Evaluate[string](`(async () => {
				const f = document.querySelector('#export form');
				const r = await fetch(f.action + '?' + new URLSearchParams(new FormData(f)));
				return r.status + ' ' + r.headers.get('content-type') + '\n' + await r.text();
			})()`, chromedp.EvalAwaitPromise))
			head, body, _ := strings.Cut(got, "\n")
			if head != "200 application/x-ndjson" {
				t.Fatalf("the export answered %q, want 200 application/x-ndjson", head)
			}
			lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
			if len(lines) != 2 {
				t.Fatalf("the export has %d lines, want the 2 failed deliveries: %q", len(lines), body)
			}
			var seen []string
			for _, l := range lines {
				var line struct {
					EventID  string          `json:"event_id"`
					State    string          `json:"state"`
					Envelope json.RawMessage `json:"envelope"`
				}
				if err := json.Unmarshal([]byte(l), &line); err != nil || line.State != "failed" || line.EventID == "" || !strings.Contains(string(line.Envelope), line.EventID) {
					t.Errorf("line %s: %v, want a failed delivery with its envelope", l, err)
				}
				seen = append(seen, line.EventID)
			}
			if strings.Join(seen, ",") != strings.Join(ids, ",") && strings.Join(seen, ",") != ids[1]+","+ids[0] {
				t.Errorf("the export has events %v, want %v", seen, ids)
			}

			// A window ending before it starts: refused in the dialog.
			p.setValue("#export-until", time.Now().UTC().Add(-2*time.Hour).Format("2006-01-02T15:04"))
			if st := p.click("#export button[type=submit]"); st != http.StatusUnprocessableEntity {
				t.Fatalf("a window ending before it starts: %d, want 422", st)
			}
			if got := p.text("#export-error"); !strings.Contains(got, "must be before") && !strings.Contains(got, "早于") {
				t.Errorf("the refusal says %q", got)
			}
			if open := run(p, chromedp.Evaluate[bool](`document.getElementById('export').open`)); !open {
				t.Error("the refused dialog is closed")
			}

			// Another owner's endpoint: not found, no line of it.
			var theirs struct{ ID string }
			if st := s.api(s.keys["bob"], http.MethodPost, "/api/admin/webhooks", map[string]any{"url": rc.URL + "/g", "event_types": []string{"*"}}, &theirs); st != http.StatusCreated {
				t.Fatalf("create bob's endpoint: %d", st)
			}
			if st := p.open("/admin/webhooks/" + theirs.ID + "/deliveries/export?state=all"); st != http.StatusNotFound {
				t.Errorf("acme's export of bob's endpoint: %d, want 404", st)
			}
		})
	}
}
