package console_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/ops"
)

type portalLink struct {
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expires_at"`
	Error     struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// TestPortalLinkInput: portal.create_link's defaults, limits and refusals,
// on both engines: each bad input answers 422 or 404 with a message that
// says what to fix, and makes no link.
func TestPortalLinkInput(t *testing.T) {
	for _, b := range dbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			s := startSite(t, b)
			var ok portalLink
			before := time.Now()
			if st := s.api(s.keys["acme"], http.MethodPost, "/api/admin/portal/links", map[string]any{}, &ok); st != http.StatusCreated {
				t.Fatalf("create link: %d %s", st, ok.Error.Message)
			}
			token, found := strings.CutPrefix(ok.URL, s.srv.URL+"/portal/")
			if !found || len(token) < 43 {
				t.Fatalf("url %q is not %s/portal/<256-bit token>", ok.URL, s.srv.URL)
			}
			if d := ok.ExpiresAt.Sub(before); d < 59*time.Minute || d > 61*time.Minute {
				t.Errorf("default expiry %v from now, want 1 h", d)
			}
			// The database keeps the token's hash, never the token: the
			// link's row is found by HashPortalToken and by nothing else.
			if n := dbtest.Count(t, s.h.DB, `SELECT count(*) FROM hookd_portal_links WHERE hash = $1`, ops.HashPortalToken(token)); n != 1 {
				t.Errorf("%d links stored under the token's hash, want 1", n)
			}
			if n := dbtest.Count(t, s.h.DB, `SELECT count(*) FROM hookd_portal_links WHERE hash = $1 OR return_url LIKE $2 OR features LIKE $2`, []byte(token), "%"+token+"%"); n != 0 {
				t.Errorf("the token itself is stored (%d rows)", n)
			}
			opened := s.open(ok.URL)
			session := opened[strings.LastIndex(opened, "/")+1:]
			if n := dbtest.Count(t, s.h.DB, `SELECT count(*) FROM hookd_portal_sessions WHERE hash = $1`, []byte(session)); n != 0 {
				t.Errorf("the session token itself is stored (%d rows)", n)
			}
			if n := dbtest.Count(t, s.h.DB, `SELECT count(*) FROM hookd_portal_sessions`); n != 1 {
				t.Errorf("%d sessions after opening one link, want 1", n)
			}
			// A link without endpoints opens on the first page it shows,
			// not on a refusal.
			types := s.open(s.link(s.keys["acme"], map[string]any{"features": []string{"event_types"}}))
			if a := fetch(t, http.MethodGet, types+"/", nil, ""); a.status != http.StatusSeeOther || !strings.HasSuffix(a.where, "/event_types") {
				t.Errorf("an event_types-only portal's first page: %d to %q, want 303 to its event types", a.status, a.where)
			}
			if a := fetch(t, http.MethodGet, types+"/event_types", nil, ""); a.status != http.StatusOK || !strings.Contains(a.body, "invoice.paid") {
				t.Errorf("an event_types-only portal's event types: %d", a.status)
			}
			var week portalLink
			if st := s.api(s.keys["acme"], http.MethodPost, "/api/admin/portal/links", map[string]any{"ttl": "7d", "features": []string{"endpoints", "deliveries"}, "read_only": true, "locale": "zh-CN", "return_url": "https://app.example.com/settings"}, &week); st != http.StatusCreated {
				t.Fatalf("7-day link: %d %s", st, week.Error.Message)
			}
			if d := week.ExpiresAt.Sub(before); d < 7*24*time.Hour-time.Minute || d > 7*24*time.Hour+time.Minute {
				t.Errorf("7d expiry %v from now", d)
			}
			var op portalLink
			if st := s.api(s.keys["operator"], http.MethodPost, "/api/admin/portal/links?owner=bob", map[string]any{"ttl": "30m"}, &op); st != http.StatusCreated {
				t.Fatalf("operator's link for bob: %d %s", st, op.Error.Message)
			}

			bad := []struct {
				key, path string
				body      map[string]any
				status    int
				says      string
			}{
				{"acme", "", map[string]any{"ttl": "0"}, 422, "ttl \"0\" must be more than zero"},
				{"acme", "", map[string]any{"ttl": "8d"}, 422, "longer than 7 days: give at most 7d"},
				{"acme", "", map[string]any{"ttl": "169h"}, 422, "at most 7d"},
				{"acme", "", map[string]any{"ttl": "soon"}, 422, "write it like 30m, 12h or 7d"},
				{"acme", "", map[string]any{"features": []string{"endpoints", "billing"}}, 422, `"billing" is not a portal feature; choose from endpoints, event_types`},
				{"shop", "", map[string]any{"features": []string{"grants"}}, 422, `"grants" is not offered to a kwork owner`},
				{"acme", "", map[string]any{"features": []string{}}, 422, "features: the list is empty: name at least one of endpoints"},
				{"acme", "", map[string]any{"features": []string{"send_test"}}, 422, `"send_test" lives on the endpoint pages: add "endpoints"`},
				{"acme", "", map[string]any{"features": []string{"event_types", "deliveries"}}, 422, `"deliveries" lives on the endpoint pages: add "endpoints"`},
				{"acme", "", map[string]any{"locale": "fr"}, 422, "use en or zh-Hans"},
				{"acme", "", map[string]any{"return_url": "javascript:alert(1)"}, 422, "return_url"},
				{"acme", "", map[string]any{"return_url": "http://app.example.com/"}, 422, "must be https"},
				{"operator", "?owner=nobody", map[string]any{}, 404, `owner "nobody" not found`},
				{"acme", "?owner=bob", map[string]any{}, 404, `owner "bob" not found`},
				{"operator", "", map[string]any{}, 422, "must name the owner"},
				{"acme-publisher", "", map[string]any{}, 403, "needs a admin key"},
			}
			for _, c := range bad {
				var got portalLink
				st := s.api(s.keys[c.key], http.MethodPost, "/api/admin/portal/links"+c.path, c.body, &got)
				if st != c.status || !strings.Contains(got.Error.Message, c.says) {
					t.Errorf("%s %v%s: %d %q, want %d saying %q", c.key, c.body, c.path, st, got.Error.Message, c.status, c.says)
				}
			}
			var revoked struct{ Sessions, Links int64 }
			if st := s.api(s.keys["acme"], http.MethodPost, "/api/admin/portal/revoke_sessions", nil, &revoked); st != http.StatusOK || revoked.Links != 1 || revoked.Sessions != 2 {
				t.Errorf("revoke acme's portal: %d %+v, want 200 with its unused link spent and its 2 sessions ended", st, revoked)
			}
		})
	}
}
