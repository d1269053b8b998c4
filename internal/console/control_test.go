package console_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/webhook"
)

// TestReceiverControlShown: what a receiver asked with webhook-delivery is
// on the console: the disabled endpoint's page says the receiver asked to
// stop, and an aborted delivery's page names abort-message.
func TestReceiverControlShown(t *testing.T) {
	for _, b := range dbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			s := startSite(t, b)
			rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, "/stop") {
					webhook.AnswerDisable(w.Header())
					w.WriteHeader(http.StatusGone)
					return
				}
				webhook.AnswerAbortMessage(w.Header())
				w.WriteHeader(http.StatusInternalServerError)
			}))
			t.Cleanup(rc.Close)
			var stops, aborts struct{ ID string }
			for _, e := range []struct {
				path string
				out  *struct{ ID string }
			}{{"/stop", &stops}, {"/abort", &aborts}} {
				if st := s.api(s.keys["acme"], http.MethodPost, "/api/admin/webhooks", map[string]any{"url": rc.URL + e.path, "event_types": []string{"invoice.*"}}, e.out); st != http.StatusCreated {
					t.Fatalf("create endpoint: %d", st)
				}
			}
			s.publishN(1, "invoice://c/")
			s.waitStates(stops.ID, 1, "failed")
			s.waitStates(aborts.ID, 1, "failed")
			var list struct{ Data []struct{ ID string } }
			s.api(s.keys["acme"], http.MethodGet, "/api/admin/webhooks/"+aborts.ID+"/deliveries", nil, &list)

			p := &page{t: t, tab: browser(t), s: s}
			p.signIn(s.keys["acme"])
			p.open("/admin/webhooks/" + stops.ID)
			if got := p.text("main"); !strings.Contains(got, "the receiver asked to stop") {
				t.Errorf("the disabled endpoint's page does not say why: %q", got)
			}
			p.open("/admin/webhooks/" + aborts.ID + "/deliveries/" + list.Data[0].ID)
			if got := p.text("main"); !strings.Contains(got, "abort-message") {
				t.Errorf("the aborted delivery's page does not name abort-message: %q", got)
			}
		})
	}
}
