package console_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/ops"
	"github.com/hookd/hookd/internal/owner"
)

// formClient is a plain HTTP client with a cookie jar: it signs in as a
// browser would, so the tests can send what a browser never would.
type formClient struct {
	t    *testing.T
	s    *site
	http *http.Client
}

func newFormClient(t *testing.T, s *site) *formClient {
	jar, _ := cookiejar.New(nil)
	return &formClient{t: t, s: s, http: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (c *formClient) post(path, origin string, form url.Values) (*http.Response, string) {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.s.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func (c *formClient) get(path string) (*http.Response, string) {
	c.t.Helper()
	resp, err := c.http.Get(c.s.srv.URL + path)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func (c *formClient) signIn(key string) *http.Response {
	c.t.Helper()
	resp, _ := c.post("/admin/signin", c.s.srv.URL, url.Values{"key": {key}})
	return resp
}

// csrf reads the CSRF token off a signed-in page.
func (c *formClient) csrf() string {
	c.t.Helper()
	_, body := c.get("/admin/webhooks")
	_, rest, ok := strings.Cut(body, `name="csrf" value="`)
	if !ok {
		c.t.Fatalf("no CSRF token on the page: %.300s", body)
	}
	tok, _, _ := strings.Cut(rest, `"`)
	return tok
}

func TestSessions(t *testing.T) {
	t.Parallel()
	for _, backend := range dbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			s := startSite(t, backend)
			c := newFormClient(t, s)

			// A publisher key is refused, saying which role is needed.
			resp, body := c.post("/admin/signin", s.srv.URL, url.Values{"key": {s.keys["acme-publisher"]}})
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "needs an admin key") {
				t.Fatalf("publisher sign-in: %d %q", resp.StatusCode, body)
			}
			if resp, _ := c.post("/admin/signin", s.srv.URL, url.Values{"key": {"hkd_nope"}}); resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("unknown key: %d", resp.StatusCode)
			}
			// A sign-in from another site is refused.
			if resp, _ := c.post("/admin/signin", "https://evil.example", url.Values{"key": {s.keys["acme"]}}); resp.StatusCode != http.StatusForbidden {
				t.Errorf("cross-site sign-in: %d", resp.StatusCode)
			}

			resp = c.signIn(s.keys["acme"])
			if resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("sign-in: %d", resp.StatusCode)
			}
			var ck *http.Cookie
			for _, x := range resp.Cookies() {
				if x.Name == "hookd_session" {
					ck = x
				}
			}
			if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Secure {
				t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Strict, not Secure over plain HTTP", ck)
			}
			// Only the token's hash is stored.
			n, err := s.h.DB.Count(t.Context(), `SELECT count(*) FROM hookd_console_sessions WHERE hash = $1`, []byte(ck.Value))
			if err != nil || n != 0 {
				t.Errorf("the raw token is stored (%d, %v)", n, err)
			}
			resp, body = c.get("/admin/webhooks")
			if resp.StatusCode != http.StatusOK || !strings.Contains(body, "No endpoints yet") {
				t.Fatalf("signed-in list: %d", resp.StatusCode)
			}
			for name, want := range map[string]string{"Content-Security-Policy": "script-src 'self'", "X-Frame-Options": "DENY"} {
				if got := resp.Header.Get(name); !strings.Contains(got, want) {
					t.Errorf("%s = %q", name, got)
				}
			}
			if csp := resp.Header.Get("Content-Security-Policy"); strings.Contains(csp, "unsafe-inline") {
				t.Errorf("CSP allows inline: %q", csp)
			}

			// Behind TLS (a proxy saying so) the cookie is Secure.
			req, _ := http.NewRequest(http.MethodPost, s.srv.URL+"/admin/signin", strings.NewReader(url.Values{"key": {s.keys["acme"]}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", s.srv.URL)
			req.Header.Set("X-Forwarded-Proto", "https")
			tlsResp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			tlsResp.Body.Close()
			if cs := tlsResp.Cookies(); len(cs) != 1 || !cs[0].Secure {
				t.Errorf("behind TLS the cookie is %+v, want Secure", cs)
			}

			// Revoking the key ends the session at its next request.
			keys, err := s.h.DB.Q().ListAPIKeys(t.Context(), "acme")
			if err != nil {
				t.Fatal(err)
			}
			var adminID string
			for _, k := range keys {
				if k.Role == owner.Admin {
					adminID = k.ID
				}
			}
			if _, err := s.h.Ops.Op("api_keys.revoke").Call(t.Context(), ops.Principal{Role: owner.Admin, OwnerID: "acme"}, &ops.APIKeyRef{ID: adminID}); err != nil {
				t.Fatal(err)
			}
			if resp, _ := c.get("/admin/webhooks"); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/admin/signin") {
				t.Fatalf("after revoke: %d %s, want back to sign-in", resp.StatusCode, resp.Header.Get("Location"))
			}
			if n, _ := s.h.DB.Count(t.Context(), `SELECT count(*) FROM hookd_console_sessions WHERE key_id = $1`, adminID); n != 0 {
				t.Errorf("%d sessions of the revoked key remain", n)
			}

			// Sign-out ends a session: its cookie no longer works.
			c2 := newFormClient(t, s)
			c2.signIn(s.keys["bob"])
			tok := c2.csrf()
			if resp, _ := c2.post("/admin/signout", s.srv.URL, url.Values{"csrf": {tok}}); resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("sign-out: %d", resp.StatusCode)
			}
			c3 := newFormClient(t, s)
			u, _ := url.Parse(s.srv.URL)
			c3.http.Jar.SetCookies(u, c2.http.Jar.Cookies(u)) // whatever the browser kept
			c3.http.Jar.SetCookies(u, []*http.Cookie{ck})     // and the revoked key's old cookie
			if resp, _ := c3.get("/admin/webhooks"); resp.StatusCode != http.StatusSeeOther {
				t.Errorf("an ended session still opens the list: %d", resp.StatusCode)
			}

			// The session cookie is scoped to the console (/admin). A cookie
			// an older hookd set at / is ended by sign-out too.
			c4 := newFormClient(t, s)
			if cs := c4.signIn(s.keys["bob"]).Cookies(); len(cs) != 1 || cs[0].Path != "/admin" {
				t.Fatalf("session cookie %+v, want path /admin", cs)
			}
			legacy := newFormClient(t, s).signIn(s.keys["bob"]).Cookies()[0]
			legacy.Path = "/"
			c4.http.Jar.SetCookies(u, []*http.Cookie{legacy})
			if resp, _ := c4.post("/admin/signout", s.srv.URL, url.Values{"csrf": {c4.csrf()}}); resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("sign-out with two cookies: %d", resp.StatusCode)
			}
			c5 := newFormClient(t, s)
			c5.http.Jar.SetCookies(u, []*http.Cookie{legacy})
			if resp, _ := c5.get("/admin/webhooks"); resp.StatusCode != http.StatusSeeOther {
				t.Errorf("a cookie at / still opens the list after sign-out: %d", resp.StatusCode)
			}
		})
	}
}

// TestCSRF: a state change without the token, or from another origin, is
// refused and changes nothing.
func TestCSRF(t *testing.T) {
	t.Parallel()
	for _, backend := range dbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			s := startSite(t, backend)
			ep := createEndpoint(t, s, "acme", "keep me")
			c := newFormClient(t, s)
			c.signIn(s.keys["acme"])
			tok := c.csrf()
			path := "/admin/webhooks/" + ep + "/delete"
			for name, try := range map[string]struct {
				origin string
				form   url.Values
			}{
				"no token":    {s.srv.URL, url.Values{"confirm": {"yes"}}},
				"wrong token": {s.srv.URL, url.Values{"confirm": {"yes"}, "csrf": {"x" + tok}}},
				"cross-site":  {"https://evil.example", url.Values{"confirm": {"yes"}, "csrf": {tok}}},
				"no origin":   {"", url.Values{"confirm": {"yes"}, "csrf": {tok}}},
				"null origin": {"null", url.Values{"confirm": {"yes"}, "csrf": {tok}}},
			} {
				resp, body := c.post(path, try.origin, try.form)
				if resp.StatusCode != http.StatusForbidden {
					t.Errorf("%s: %d, want 403", name, resp.StatusCode)
				}
				if !strings.Contains(body, "refused") && !strings.Contains(body, "CSRF") {
					t.Errorf("%s: the page does not say why: %.200s", name, body)
				}
				if _, err := s.h.DB.Q().GetEndpoint(t.Context(), "acme", ep); err != nil {
					t.Fatalf("%s deleted the endpoint", name)
				}
			}
			// The same request with the token and origin does delete it.
			if resp, _ := c.post(path, s.srv.URL, url.Values{"confirm": {"yes"}, "csrf": {tok}}); resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("a proper delete: %d", resp.StatusCode)
			}
			if _, err := s.h.DB.Q().GetEndpoint(t.Context(), "acme", ep); err == nil {
				t.Fatal("a proper delete did not delete")
			}

			// In the browser: a script's POST without the token is refused.
			ep2 := createEndpoint(t, s, "acme", "keep me too")
			p := &page{t: t, tab: browser(t), s: s}
			p.signIn(s.keys["acme"])
			status := run(p, chromedp.Evaluate[int](`fetch('/admin/webhooks/`+ep2+`/delete', {method: 'POST', body: new URLSearchParams({confirm: 'yes'})}).then(r => r.status)`, chromedp.EvalAwaitPromise))
			if status != http.StatusForbidden {
				t.Errorf("browser POST without token: %d", status)
			}
			if _, err := s.h.DB.Q().GetEndpoint(context.Background(), "acme", ep2); err != nil {
				t.Fatal("the browser POST without token deleted the endpoint")
			}
		})
	}
}

// createEndpoint makes an endpoint of ownerID through the op, as its admin.
func createEndpoint(t *testing.T, s *site, ownerID, description string) string {
	t.Helper()
	out, err := s.h.Ops.Op("webhooks.create").Call(t.Context(), ops.Principal{Role: owner.Admin, OwnerID: ownerID},
		&ops.CreateEndpointIn{URL: "http://127.0.0.1:9/" + ownerID, Description: description, EventTypes: []string{"invoice.paid"}})
	if err != nil {
		t.Fatal(err)
	}
	return out.(*ops.EndpointView).ID
}

// TestEscaping: a description with markup is shown as text, never run.
func TestEscaping(t *testing.T) {
	t.Parallel()
	s := startSite(t, dbtest.Backends()[0])
	const evil = `<script>alert(1)</script>`
	ep := createEndpoint(t, s, "acme", evil)
	p := &page{t: t, tab: browser(t), s: s}
	p.signIn(s.keys["acme"])
	for _, path := range []string{"/admin/webhooks", "/admin/webhooks/" + ep, "/admin/webhooks/" + ep + "/edit"} {
		p.open(path)
		if n := run(p, chromedp.Evaluate[int](`document.querySelectorAll('script:not([src])').length`)); n != 0 {
			t.Errorf("%s: %d inline scripts in the DOM", path, n)
		}
	}
	p.open("/admin/webhooks")
	if got := p.text("table.endpoints .desc"); got != evil {
		t.Errorf("list shows the description as %q, want the literal text", got)
	}
	p.open("/admin/webhooks/" + ep)
	if got := p.text("main .desc"); got != evil {
		t.Errorf("endpoint page shows the description as %q", got)
	}
	p.open("/admin/webhooks/" + ep + "/edit")
	if got := run(p, chromedp.Value(chromedp.ID("description"))); got != evil {
		t.Errorf("edit form holds %q", got)
	}
}
