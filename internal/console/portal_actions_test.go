package console_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/dbtest"
)

var (
	secretField = regexp.MustCompile(`id="secret" type="text" readonly value="(whsec_[^"]+)"`)
	rowLink     = regexp.MustCompile(`href="(/portal/s/[^"]+/webhooks/[^/"]+/deliveries/[^"?]+)"`)
)

// TestPortalActions: what a customer does in the portal really happens.
// The delivery log filters by state, each delivery has its page, Redeliver
// failed sends the failed ones again, and Rotate secret shows a new
// secret once, which the endpoint's next delivery is signed with.
func TestPortalActions(t *testing.T) {
	for _, b := range dbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			s, _ := portalSite(t, b)
			rc := newSwitchable(t)
			var ep struct {
				ID     string `json:"id"`
				Secret string `json:"secret"`
			}
			if st := s.api(s.keys["acme"], http.MethodPost, "/api/admin/webhooks", map[string]any{"url": rc.URL, "event_types": []string{"invoice.*"}}, &ep); st != http.StatusCreated {
				t.Fatalf("create endpoint: %d", st)
			}
			s.publishN(2, "invoice://portal/")
			s.waitStates(ep.ID, 2, "failed")

			base := s.open(s.link(s.keys["acme"], map[string]any{"ttl": "1h"}))
			get := func(path string) answer {
				t.Helper()
				a := fetch(t, http.MethodGet, base+path, nil, "")
				if a.status != http.StatusOK {
					t.Fatalf("GET %s: %d", path, a.status)
				}
				return a
			}
			post := func(path string) answer { // a form of ep's page, posted
				t.Helper()
				m := csrfField.FindStringSubmatch(get("/webhooks/" + ep.ID).body)
				if m == nil {
					t.Fatal("the endpoint page has no CSRF field")
				}
				return fetch(t, http.MethodPost, base+path, url.Values{"csrf": {m[1]}}, s.srv.URL)
			}

			// The log's filters, and a delivery's own page.
			failed := get("/webhooks/" + ep.ID + "/deliveries?state=failed")
			rows := rowLink.FindAllStringSubmatch(failed.body, -1)
			if len(rows) != 2 {
				t.Fatalf("the log filtered to failed links %d deliveries, want 2", len(rows))
			}
			if delivered := get("/webhooks/" + ep.ID + "/deliveries?state=delivered"); rowLink.MatchString(delivered.body) {
				t.Error("the log filtered to delivered shows a delivery, though none was delivered")
			}
			one := fetch(t, http.MethodGet, s.srv.URL+rows[0][1], nil, "")
			if one.status != http.StatusOK || !strings.Contains(one.body, "invoice.paid") || !strings.Contains(one.body, "410") {
				t.Errorf("a delivery's page: %d, want the type and the receiver's 410", one.status)
			}

			// Redeliver failed: both delivered once the receiver is up.
			rc.up.Store(true)
			if a := post("/webhooks/" + ep.ID + "/redeliver"); a.status != http.StatusOK && a.status != http.StatusSeeOther {
				t.Fatalf("redeliver: %d", a.status)
			}
			s.waitStates(ep.ID, 2, "delivered")
			if n := rc.took.Load(); n != 2 {
				t.Errorf("the receiver took %d deliveries after Redeliver failed, want 2", n)
			}

			// Rotate secret, on an endpoint whose receiver verifies every
			// delivery: the page shows a new secret once, and a test sent
			// from the portal afterwards verifies with it.
			vr := newReceiver(t, false)
			var ep2 struct {
				ID     string `json:"id"`
				Secret string `json:"secret"`
			}
			if st := s.api(s.keys["acme"], http.MethodPost, "/api/admin/webhooks", map[string]any{"url": vr.URL + "/rotated", "event_types": []string{"order.shipped"}, "enabled": true}, &ep2); st != http.StatusCreated {
				t.Fatalf("create the second endpoint: %d", st)
			}
			postTo := func(path string) answer {
				t.Helper()
				m := csrfField.FindStringSubmatch(get("/webhooks/" + ep2.ID).body)
				if m == nil {
					t.Fatal("the endpoint page has no CSRF field")
				}
				return fetch(t, http.MethodPost, base+path, url.Values{"csrf": {m[1]}}, s.srv.URL)
			}
			rot := postTo("/webhooks/" + ep2.ID + "/rotate_secret")
			m := secretField.FindStringSubmatch(rot.body)
			if rot.status != http.StatusOK || m == nil {
				t.Fatalf("rotate secret: %d, no secret on the page", rot.status)
			}
			// The attribute is HTML-escaped (a + in the base64 reads &#43;).
			secret := html.UnescapeString(m[1])
			if secret == ep2.Secret {
				t.Fatal("the rotated secret is the old one")
			}
			if page := get("/webhooks/" + ep2.ID); strings.Contains(page.body, m[1]) || strings.Contains(page.body, secret) || strings.Contains(page.body, ep2.Secret) {
				t.Error("the endpoint page shows a secret after the one-time page")
			}
			vr.setSecret(secret)
			if a := postTo("/webhooks/" + ep2.ID + "/send_test"); a.status >= 400 {
				t.Fatalf("send test: %d", a.status)
			}
			vr.expect(t, "webhook.test")
		})
	}
}

// TestPortalErrorsInLanguage: a Chinese portal's refusals are Chinese,
// the op's own and the portal's: a bad URL in the endpoint form, a
// read-only session's refused change and a feature the link left out.
func TestPortalErrorsInLanguage(t *testing.T) {
	s, _ := portalSite(t, dbtest.Backends()[0])
	base := s.open(s.link(s.keys["acme"], map[string]any{"locale": "zh-Hans", "features": []string{"endpoints"}}))
	m := csrfField.FindStringSubmatch(fetch(t, http.MethodGet, base+"/webhooks/new", nil, "").body)
	if m == nil {
		t.Fatal("the form has no CSRF field")
	}
	bad := fetch(t, http.MethodPost, base+"/webhooks", url.Values{"csrf": {m[1]}, "url": {"ftp://x"}, "types": {"invoice.paid"}}, s.srv.URL)
	if bad.status != http.StatusUnprocessableEntity || !strings.Contains(bad.body, "不是有效的网址") || strings.Contains(bad.body, "is not a valid") {
		t.Errorf("a bad URL in a Chinese portal: %d, want 422 in Chinese", bad.status)
	}
	if a := fetch(t, http.MethodGet, base+"/event_types", nil, ""); a.status != http.StatusForbidden || !strings.Contains(a.body, "此门户链接不包含") {
		t.Errorf("a feature left out, in Chinese: %d", a.status)
	}
	ro := s.open(s.link(s.keys["acme"], map[string]any{"locale": "zh-Hans", "read_only": true}))
	if a := fetch(t, http.MethodPost, ro+"/webhooks", url.Values{"csrf": {readOnlyCSRF(ro)}, "url": {"https://example.com/x"}}, s.srv.URL); a.status != http.StatusForbidden || !strings.Contains(a.body, "此门户为只读") || !strings.Contains(a.body, "禁止访问") {
		t.Errorf("a read-only refusal in Chinese: %d", a.status)
	}
}
