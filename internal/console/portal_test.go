package console_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/app"
	"github.com/hookd/hookd/internal/dbtest"
)

// clock is hookd's clock in a test: the wall clock moved by an offset.
type clock struct{ off atomic.Int64 }

func (c *clock) now() time.Time          { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *clock) advance(d time.Duration) { c.off.Add(int64(d)) }

// portalSite is a site whose portal may be framed by hostOrigin, with a
// clock the test moves.
func portalSite(t *testing.T, b dbtest.Backend, hostOrigins ...string) (*site, *clock) {
	t.Helper()
	clk := &clock{}
	s := startSiteWith(t, b, "", func(c *app.Config) {
		c.Now = clk.now
		c.PortalFrameOrigins = hostOrigins
	})
	return s, clk
}

// link makes a portal link for owner with key and body.
func (s *site) link(key string, body map[string]any) string {
	s.t.Helper()
	var l portalLink
	if st := s.api(key, http.MethodPost, "/api/admin/portal/links", body, &l); st != http.StatusCreated {
		s.t.Fatalf("create portal link: %d %s", st, l.Error.Message)
	}
	return l.URL
}

// browserless is an HTTP client that does not follow redirects.
var browserless = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

type answer struct {
	status int
	body   string
	header http.Header
	where  string // Location
}

func fetch(t *testing.T, method, u string, form url.Values, origin string) answer {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, u, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := browserless.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, string(b), resp.Header, resp.Header.Get("Location")}
}

// open spends a link and returns its session's base URL.
func (s *site) open(link string) string {
	s.t.Helper()
	a := fetch(s.t, http.MethodGet, link, nil, "")
	if a.status != http.StatusSeeOther || !strings.Contains(a.where, "/portal/s/") {
		s.t.Fatalf("opening %s: %d to %q, want 303 to a session", link, a.status, a.where)
	}
	return s.srv.URL + strings.TrimSuffix(a.where, "/")
}

// readOnlyCSRF is the CSRF token of the portal session at base, as
// hookd derives it from the session's token (internal/console/session.go).
func readOnlyCSRF(base string) string {
	token := base[strings.LastIndex(base, "/")+1:]
	m := hmac.New(sha256.New, []byte("portal:"+token))
	m.Write([]byte("hookd console csrf"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// TestPortalLink: a link opens once; a second opening, an expired link
// and an unknown one each get a page that says so and names nobody; a
// session ends at the link's expiry and with portal.revoke_sessions.
func TestPortalLink(t *testing.T) {
	for _, b := range dbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			s, clk := portalSite(t, b)
			link := s.link(s.keys["acme"], map[string]any{"ttl": "1h"})
			base := s.open(link)
			if a := fetch(t, http.MethodGet, base+"/webhooks", nil, ""); a.status != http.StatusOK || !strings.Contains(a.body, "No endpoints yet") {
				t.Fatalf("session's endpoint list: %d", a.status)
			}
			again := fetch(t, http.MethodGet, link, nil, "")
			if again.status != http.StatusGone || !strings.Contains(again.body, "This link was already used") || !strings.Contains(again.body, "Ask the app that brought you here for a new link") {
				t.Errorf("second opening: %d %s", again.status, again.body)
			}
			token := strings.TrimPrefix(link, s.srv.URL+"/portal/")
			for _, leak := range []string{"acme", token, "/portal/s/", `<a href=`, `class="brand" href`} {
				if strings.Contains(again.body, leak) {
					t.Errorf("the used-link page shows %q", leak)
				}
			}
			if a := fetch(t, http.MethodGet, s.srv.URL+"/portal/"+strings.Repeat("A", 43), nil, ""); a.status != http.StatusGone || !strings.Contains(a.body, "This link is not valid") {
				t.Errorf("unknown link: %d", a.status)
			}
			zh := s.link(s.keys["acme"], map[string]any{"ttl": "30m", "locale": "zh-Hans"})
			clk.advance(31 * time.Minute)
			if a := fetch(t, http.MethodGet, zh, nil, ""); a.status != http.StatusGone || !strings.Contains(a.body, "此链接已过期") {
				t.Errorf("expired link: %d %s", a.status, a.body)
			}
			if a := fetch(t, http.MethodGet, base+"/webhooks", nil, ""); a.status != http.StatusOK {
				t.Errorf("the 1 h session ended after 31 min: %d", a.status)
			}
			clk.advance(30 * time.Minute)
			if a := fetch(t, http.MethodGet, base+"/webhooks", nil, ""); a.status != http.StatusGone || !strings.Contains(a.body, "This session has ended") {
				t.Errorf("session past its link's expiry: %d", a.status)
			}
			base = s.open(s.link(s.keys["acme"], nil))
			if st := s.api(s.keys["acme"], http.MethodPost, "/api/admin/portal/revoke_sessions", nil, nil); st != http.StatusOK {
				t.Fatalf("revoke: %d", st)
			}
			if a := fetch(t, http.MethodGet, base+"/webhooks", nil, ""); a.status != http.StatusGone {
				t.Errorf("a revoked session still answers: %d", a.status)
			}
		})
	}
}

// TestPortalLimits: a read-only session shows no button and refuses every
// change (403, nothing changed); a session without a feature neither shows
// nor serves its pages; no operator page, River UI, owner switcher or
// sign-out; owner A's session never reaches owner B's data.
func TestPortalLimits(t *testing.T) {
	for _, b := range dbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			s, _ := portalSite(t, b)
			rc := newReceiver(t, false)
			var mine, bobs struct {
				ID     string `json:"id"`
				URL    string `json:"url"`
				Secret string `json:"secret"`
			}
			if st := s.api(s.keys["acme"], http.MethodPost, "/api/admin/webhooks", map[string]any{"url": rc.URL + "/acme", "event_types": []string{"invoice.paid"}, "enabled": true}, &mine); st != http.StatusCreated {
				t.Fatalf("acme endpoint: %d", st)
			}
			if st := s.api(s.keys["bob"], http.MethodPost, "/api/admin/webhooks", map[string]any{"url": rc.URL + "/bob-only", "event_types": []string{"invoice.paid"}, "enabled": true}, &bobs); st != http.StatusCreated {
				t.Fatalf("bob endpoint: %d", st)
			}
			snapshot := func() string {
				var a, b map[string]any
				s.api(s.keys["acme"], http.MethodGet, "/api/admin/webhooks/"+mine.ID, nil, &a)
				s.api(s.keys["bob"], http.MethodGet, "/api/admin/webhooks/"+bobs.ID, nil, &b)
				return strings.Join([]string{a["state"].(string), a["url"].(string), b["state"].(string), b["url"].(string)}, " ")
			}
			before := snapshot()

			ro := s.open(s.link(s.keys["acme"], map[string]any{"read_only": true}))
			page := fetch(t, http.MethodGet, ro+"/webhooks/"+mine.ID, nil, "")
			if page.status != http.StatusOK || !strings.Contains(page.body, mine.URL) {
				t.Fatalf("read-only endpoint page: %d", page.status)
			}
			for _, p := range []string{"/webhooks", "/webhooks/" + mine.ID, "/webhooks/" + mine.ID + "/deliveries", "/event_types", "/grants"} {
				a := fetch(t, http.MethodGet, ro+p, nil, "")
				if a.status != http.StatusOK {
					t.Errorf("read-only %s: %d", p, a.status)
				}
				if strings.Contains(a.body, `class="button`) || strings.Contains(a.body, `method="post"`) {
					t.Errorf("read-only %s has a button or a form that posts", p)
				}
				for _, no := range []string{"/admin/tasks", "owner-select", "Sign out", "/admin/"} {
					if strings.Contains(a.body, no) {
						t.Errorf("portal page %s shows %q", p, no)
					}
				}
			}
			// A forged POST carrying the read-only session's own valid CSRF
			// token (computed as hookd does: the page shows none) is still
			// refused, whatever the route: read-only is not the CSRF check.
			csrf := []string{"", readOnlyCSRF(ro)}
			for _, p := range []string{"/webhooks/" + mine.ID + "/enabled", "/webhooks/" + mine.ID + "/delete", "/webhooks/" + mine.ID + "/rotate_secret", "/webhooks", "/webhooks/" + mine.ID + "/send_test"} {
				a := fetch(t, http.MethodPost, ro+p, url.Values{"csrf": {csrf[1]}, "enabled": {"false"}, "confirm": {"yes"}, "url": {"https://example.com/x"}}, s.srv.URL)
				// Refused as read-only, not for a bad CSRF token: else this
				// would pass however read-only behaved.
				if a.status != http.StatusForbidden || !strings.Contains(a.body, "This portal is read-only") {
					t.Errorf("read-only POST %s: %d, want 403 saying the portal is read-only", p, a.status)
				}
			}
			if got := fetch(t, http.MethodGet, ro+"/webhooks/new", nil, ""); got.status != http.StatusForbidden {
				t.Errorf("read-only new-endpoint form: %d, want 403", got.status)
			}

			// Features: only endpoints.
			only := s.open(s.link(s.keys["acme"], map[string]any{"features": []string{"endpoints"}}))
			list := fetch(t, http.MethodGet, only+"/webhooks/"+mine.ID, nil, "")
			for _, no := range []string{"Send test event", "Rotate secret", "Redeliver failed", "Retry pending now", "/deliveries", "/event_types", "/grants"} {
				if strings.Contains(list.body, no) {
					t.Errorf("an endpoints-only portal shows %q", no)
				}
			}
			if !strings.Contains(list.body, "Disable") {
				t.Error("an endpoints-only writable portal cannot disable its endpoint")
			}
			w := csrfField.FindStringSubmatch(list.body)[1]
			for _, c := range []struct{ method, path string }{
				{http.MethodGet, "/webhooks/" + mine.ID + "/deliveries"}, {http.MethodGet, "/event_types"}, {http.MethodGet, "/grants"},
				{http.MethodPost, "/webhooks/" + mine.ID + "/send_test"}, {http.MethodPost, "/webhooks/" + mine.ID + "/rotate_secret"},
			} {
				var form url.Values
				if c.method == http.MethodPost {
					form = url.Values{"csrf": {w}}
				}
				if a := fetch(t, c.method, only+c.path, form, s.srv.URL); a.status != http.StatusForbidden {
					t.Errorf("%s %s without its feature: %d, want 403", c.method, c.path, a.status)
				}
			}
			for _, p := range []string{"/admin/tasks/", "/owner", "/signout", "/tasks"} {
				if a := fetch(t, http.MethodGet, only+p, nil, ""); a.status != http.StatusNotFound {
					t.Errorf("portal %s: %d, want 404", p, a.status)
				}
			}

			// Isolation: acme's session aimed at bob's endpoint, by URL and
			// by form, is answered as for nothing.
			full := s.open(s.link(s.keys["acme"], nil))
			fw := csrfField.FindStringSubmatch(fetch(t, http.MethodGet, full+"/webhooks/"+mine.ID, nil, "").body)
			if fw == nil {
				t.Fatal("no CSRF field on the list")
			}
			for _, c := range []struct {
				method, path string
				form         url.Values
			}{
				{http.MethodGet, "/webhooks/" + bobs.ID, nil},
				{http.MethodGet, "/webhooks/" + bobs.ID + "/deliveries", nil},
				{http.MethodGet, "/webhooks/" + bobs.ID + "/edit", nil},
				{http.MethodPost, "/webhooks/" + bobs.ID + "/enabled", url.Values{"csrf": {fw[1]}, "enabled": {"false"}}},
				{http.MethodPost, "/webhooks/" + bobs.ID + "/delete", url.Values{"csrf": {fw[1]}, "confirm": {"yes"}}},
				{http.MethodPost, "/webhooks/" + bobs.ID, url.Values{"csrf": {fw[1]}, "url": {"https://evil.example/"}, "types": {"*"}}},
				{http.MethodPost, "/webhooks/" + bobs.ID + "/rotate_secret", url.Values{"csrf": {fw[1]}}},
			} {
				a := fetch(t, c.method, full+c.path, c.form, s.srv.URL)
				if a.status != http.StatusNotFound {
					t.Errorf("acme's portal %s %s (bob's): %d, want 404", c.method, c.path, a.status)
				}
				if strings.Contains(a.body, "bob-only") {
					t.Errorf("acme's portal %s %s shows bob's URL", c.method, c.path)
				}
			}
			if l := fetch(t, http.MethodGet, full+"/webhooks", nil, ""); strings.Contains(l.body, "bob-only") || !strings.Contains(l.body, mine.URL) {
				t.Error("acme's portal list is not exactly acme's")
			}
			// A forged POST without the CSRF token, or from another site.
			if a := fetch(t, http.MethodPost, full+"/webhooks/"+mine.ID+"/enabled", url.Values{"enabled": {"false"}}, s.srv.URL); a.status != http.StatusForbidden {
				t.Errorf("POST without CSRF: %d", a.status)
			}
			if a := fetch(t, http.MethodPost, full+"/webhooks/"+mine.ID+"/enabled", url.Values{"enabled": {"false"}, "csrf": {fw[1]}}, "https://evil.example"); a.status != http.StatusForbidden {
				t.Errorf("cross-site POST: %d", a.status)
			}
			if after := snapshot(); after != before {
				t.Errorf("refused requests changed something: %q → %q", before, after)
			}
		})
	}
}

// TestPortalFraming: with no origin configured the portal cannot be
// framed; the operator's origins and the owner's own are the CSP
// frame-ancestors; the console itself is never frameable.
func TestPortalFraming(t *testing.T) {
	b := dbtest.Backends()[0]
	none, _ := portalSite(t, b)
	a := fetch(t, http.MethodGet, none.open(none.link(none.keys["acme"], nil))+"/webhooks", nil, "")
	if csp := a.header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || a.header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("no origins: CSP %q, X-Frame-Options %q", csp, a.header.Get("X-Frame-Options"))
	}
	// The console's CSP stays in the portal: scripts and styles from hookd
	// only, nothing inline, forms posted to hookd only.
	csp := a.header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self';", "style-src 'self';", "form-action 'self'", "base-uri 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("the portal's CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-") {
		t.Errorf("the portal's CSP allows something unsafe: %q", csp)
	}
	s, _ := portalSite(t, b, "http://127.0.0.1:9")
	if st := s.api(s.keys["operator"], http.MethodPatch, "/api/admin/owners/acme", map[string]any{"attributes": map[string]string{"portal_frame_origins": "https://app.acme.example, https://beta.acme.example"}}, nil); st != http.StatusOK {
		t.Fatalf("set acme's frame origins: %d", st)
	}
	var bad struct {
		Error struct{ Message string } `json:"error"`
	}
	if st := s.api(s.keys["operator"], http.MethodPatch, "/api/admin/owners/bob", map[string]any{"attributes": map[string]string{"portal_frame_origins": "https://x.example/path 'unsafe-inline'"}}, &bad); st != http.StatusUnprocessableEntity || !strings.Contains(bad.Error.Message, "give a scheme and host only") {
		t.Errorf("bad frame origin: %d %q", st, bad.Error.Message)
	}
	acme := fetch(t, http.MethodGet, s.open(s.link(s.keys["acme"], nil))+"/webhooks", nil, "")
	if csp := acme.header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors http://127.0.0.1:9 https://app.acme.example https://beta.acme.example;") || acme.header.Get("X-Frame-Options") != "" {
		t.Errorf("acme's portal: CSP %q, X-Frame-Options %q", csp, acme.header.Get("X-Frame-Options"))
	}
	bob := fetch(t, http.MethodGet, s.open(s.link(s.keys["bob"], nil))+"/webhooks", nil, "")
	if csp := bob.header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors http://127.0.0.1:9;") {
		t.Errorf("bob's portal (no origins of its own): CSP %q", csp)
	}
	if c := fetch(t, http.MethodGet, s.srv.URL+"/admin/signin", nil, ""); !strings.Contains(c.header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Error("the console became frameable")
	}
}

// TestPortalBranding: the owner's title, logo and accent colour are the
// portal's; a colour or logo that is not one is refused, naming the fix.
func TestPortalBranding(t *testing.T) {
	s, _ := portalSite(t, dbtest.Backends()[0])
	attrs := map[string]string{"portal_title": "Acme Webhooks", "portal_accent": "#0a7d53", "portal_logo_url": "https://cdn.acme.example/logo.png", "locale": "zh-CN"}
	if st := s.api(s.keys["operator"], http.MethodPatch, "/api/admin/owners/acme", map[string]any{"attributes": attrs}, nil); st != http.StatusOK {
		t.Fatalf("brand acme: %d", st)
	}
	base := s.open(s.link(s.keys["acme"], nil))
	page := fetch(t, http.MethodGet, base+"/webhooks", nil, "")
	for _, want := range []string{`<span class="brand">Acme Webhooks</span>`, `<img class="logo" src="https://cdn.acme.example/logo.png"`, `/brand.css">`, `lang="zh-Hans"`, "还没有端点"} {
		if !strings.Contains(page.body, want) {
			t.Errorf("branded portal lacks %q", want)
		}
	}
	if css := fetch(t, http.MethodGet, base+"/brand.css", nil, ""); !strings.Contains(css.body, "--accent: #0a7d53;") || css.header.Get("Content-Type") != "text/css; charset=utf-8" {
		t.Errorf("brand.css: %q", css.body)
	}
	if en := fetch(t, http.MethodGet, s.open(s.link(s.keys["acme"], map[string]any{"locale": "en"}))+"/webhooks", nil, ""); !strings.Contains(en.body, "No endpoints yet") {
		t.Error("the link's locale does not win over the owner's")
	}
	if js := fetch(t, http.MethodGet, s.srv.URL+"/portal.js", nil, ""); js.status != http.StatusOK || !strings.Contains(js.body, `customElements.define("hookd-portal"`) {
		t.Errorf("/portal.js: %d", js.status)
	}
	for attr, v := range map[string]string{"portal_accent": "red; background: url(x)", "portal_logo_url": "http://cdn.acme.example/logo.png", "locale": "fr", "portal_title": strings.Repeat("x", 81)} {
		var bad struct {
			Error struct{ Message string } `json:"error"`
		}
		st := s.api(s.keys["operator"], http.MethodPatch, "/api/admin/owners/bob", map[string]any{"attributes": map[string]string{attr: v}}, &bad)
		if st != http.StatusUnprocessableEntity || !strings.Contains(bad.Error.Message, attr) {
			t.Errorf("%s=%q: %d %q, want 422 naming it", attr, v, st, bad.Error.Message)
		}
	}
}

// TestPortalKwork: a kwork owner's portal says subscriptions and sends in
// both languages, and offers no grants.
func TestPortalKwork(t *testing.T) {
	s, _ := portalSite(t, dbtest.Backends()[0])
	for lang, want := range map[string][]string{"en": {"Event subscriptions", "No subscriptions yet"}, "zh-Hans": {"事件订阅", "还没有订阅"}} {
		page := fetch(t, http.MethodGet, s.open(s.link(s.keys["shop"], map[string]any{"locale": lang}))+"/webhooks", nil, "")
		for _, w := range want {
			if !strings.Contains(page.body, w) {
				t.Errorf("shop's %s portal lacks %q", lang, w)
			}
		}
		for _, no := range []string{"/grants", "endpoint", "端点"} {
			if strings.Contains(strings.ReplaceAll(page.body, `data-page="endpoints"`, ""), no) {
				t.Errorf("shop's %s portal says %q", lang, no)
			}
		}
	}
}
