package console_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/oauth2-proxy/mockoidc"

	"github.com/hookd/hookd/internal/app"
	"github.com/hookd/hookd/internal/audit"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/store"
)

// identityProvider is a real OpenID Connect provider in process
// (oauth2-proxy/mockoidc: discovery, JWKS, authorization code with PKCE,
// signed ID tokens carrying the nonce). Each sign-in takes the next queued
// user. tamper, when set, names what an attacker in the middle changes:
// "state" (the state the provider sends back), "nonce" (the nonce the
// provider puts in the ID token) or "code_challenge" (the PKCE challenge
// the provider holds the code to).
type identityProvider struct {
	*mockoidc.MockOIDC
	tamper atomic.Value // string
}

func (p *identityProvider) tampering() string {
	v, _ := p.tamper.Load().(string)
	return v
}

func startProvider(t *testing.T) *identityProvider {
	t.Helper()
	m, err := mockoidc.NewServer(nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &identityProvider{MockOIDC: m}
	// The provider answers /authorize with a redirect to hookd's callback;
	// a tampering one changes the state in it.
	if err := m.AddMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mode := p.tampering()
			if mode == "" || !strings.HasSuffix(r.URL.Path, "/authorize") {
				next.ServeHTTP(w, r)
				return
			}
			if mode != "state" { // the request's nonce or challenge, changed on its way in
				q := r.URL.Query()
				if q.Get(mode) == "" {
					http.Error(w, "the authorization request has no "+mode, http.StatusBadRequest)
					return
				}
				q.Set(mode, q.Get(mode)+"x")
				r.URL.RawQuery = q.Encode()
				next.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			loc, _ := url.Parse(rec.Header().Get("Location"))
			q := loc.Query()
			q.Set("state", q.Get("state")+"x")
			loc.RawQuery = q.Encode()
			http.Redirect(w, r, loc.String(), http.StatusFound)
		})
	}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ln, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown() })
	return p
}

func (p *identityProvider) queue(subject, email string, groups ...string) {
	p.QueueUser(&mockoidc.MockUser{Subject: subject, Email: email, EmailVerified: true, PreferredUsername: subject, Groups: groups})
}

// TestOIDCSignin signs in to the console through a real OIDC provider in
// headless Chromium, with API key sign-in turned off: a user in the
// acme-team group is acme's admin and their change is recorded under
// their name; one in hookd-ops is an operator; one in neither group is
// refused with a page that says why; a tampered state is refused and
// starts no session, as are a tampered nonce and PKCE challenge;
// sign-out ends the session.
func TestOIDCSignin(t *testing.T) {
	t.Parallel()
	for _, backend := range dbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			idp := startProvider(t)
			s := startSiteWith(t, backend, "", func(cfg *app.Config) {
				cfg.OIDC = &app.OIDCConfig{Issuer: idp.Issuer(), ClientID: idp.ClientID, ClientSecret: idp.ClientSecret,
					OperatorValues: []string{"hookd-ops"}, AdminValues: map[string]string{"acme-team": "acme"}}
				cfg.ConsoleKeySigninOff = true
			})
			p := &page{t: t, tab: browser(t), s: s}
			ctx := context.Background()

			// API keys cannot sign in: the page offers the provider only,
			// and a posted key is refused.
			p.open("/admin/signin")
			if n := run(p, chromedp.Evaluate[int](`document.querySelectorAll('#key').length`)); n != 0 {
				t.Error("the sign-in page offers the API key form while key sign-in is off")
			}
			form := url.Values{"key": {s.keys["acme"]}}
			req, _ := http.NewRequest(http.MethodPost, s.srv.URL+"/admin/signin", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", s.srv.URL)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
				t.Errorf("API key sign-in while off: %d with %d cookies, want 403 and none", resp.StatusCode, len(resp.Cookies()))
			}

			// An admin through the provider, by the acme-team group.
			idp.queue("u-alice", "alice@example.com", "acme-team", "engineering")
			p.open("/admin/signin?next=/admin/event_types")
			p.click("#oidc-signin")
			p.do(chromedp.WaitVisible(chromedp.CSS("nav")))
			if got := p.path(); got != "/admin/event_types" {
				t.Fatalf("after sign-in at %s, want /admin/event_types", got)
			}
			if who := p.text(".who"); !strings.Contains(who, "acme") {
				t.Errorf("signed-in header %q does not name acme", who)
			}
			// A change through the console names the user in the audit log.
			p.click(`form[action="/admin/event_types/invoice.paid"] button[type=submit]`)
			rs, err := s.h.DB.Q().ListAudit(ctx, store.AuditFilter{OwnerID: "acme", Op: "event_types.put", Limit: 10})
			if err != nil || len(rs) != 1 {
				t.Fatalf("audit records of the change: %v %+v", err, rs)
			}
			if a := rs[0].Actor; a.Kind != audit.KindOIDC || a.ID != "u-alice" || a.Name != "alice@example.com" || a.Remote == "" {
				t.Errorf("the change's actor %+v, want the OIDC user alice@example.com", a)
			}
			if st := p.open("/admin/audit"); st != http.StatusOK {
				t.Fatalf("audit page: %d", st)
			}
			if txt := p.text("#audit"); !strings.Contains(txt, "alice@example.com") || !strings.Contains(txt, "event_types.put") {
				t.Errorf("the audit page does not show alice's change: %q", txt)
			}
			// Sign-out ends the session, on the server too: its cookie,
			// sent again, signs no one in.
			session := sessionCookie(t, p)
			p.click(`form[action="/admin/signout"] button`)
			p.open("/admin/webhooks")
			if got := p.path(); !strings.HasPrefix(got, "/admin/signin") {
				t.Errorf("after sign-out /admin/webhooks led to %s, want the sign-in page", got)
			}
			replay, _ := http.NewRequest(http.MethodGet, s.srv.URL+"/admin/webhooks", nil)
			replay.AddCookie(session)
			noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			if resp, err := noFollow.Do(replay); err != nil {
				t.Fatal(err)
			} else {
				resp.Body.Close()
				if loc := resp.Header.Get("Location"); resp.StatusCode/100 != 3 || !strings.Contains(loc, "/admin/signin") {
					t.Errorf("the signed-out session's cookie sent again: %d to %q, want a redirect to the sign-in page", resp.StatusCode, loc)
				}
			}

			// An operator, by the hookd-ops group.
			idp.queue("u-olga", "olga@example.com", "hookd-ops")
			p.open("/admin/signin")
			p.click("#oidc-signin")
			p.do(chromedp.WaitVisible(chromedp.CSS("nav")))
			if st := p.open("/admin/workers"); st != http.StatusOK {
				t.Errorf("the operator's workers page: %d", st)
			}
			p.click(`form[action="/admin/signout"] button`)

			// No matching group: refused, with a page that says why.
			idp.queue("u-mallory", "mallory@example.com", "marketing")
			p.open("/admin/signin")
			if st := p.click("#oidc-signin"); st != http.StatusForbidden {
				t.Errorf("a user without a role: status %d, want 403", st)
			}
			if txt := p.text("#signin-refused"); !strings.Contains(txt, "groups") {
				t.Errorf("refusal page says %q, want it to name the groups claim", txt)
			}

			// A tampered state, nonce (an ID token minted for another
			// sign-in) or PKCE challenge (a code stolen for another
			// verifier): each refused with a page, no session.
			for _, mode := range []string{"state", "nonce", "code_challenge"} {
				idp.queue("u-alice", "alice@example.com", "acme-team")
				idp.tamper.Store(mode)
				p.open("/admin/signin")
				if st := p.click("#oidc-signin"); st != http.StatusBadRequest {
					t.Errorf("a tampered %s: status %d, want 400", mode, st)
				}
				if txt := p.text("#signin-refused"); txt == "" {
					t.Errorf("a tampered %s's page says nothing", mode)
				}
				idp.tamper.Store("")
				p.open("/admin/webhooks")
				if got := p.path(); !strings.HasPrefix(got, "/admin/signin") {
					t.Errorf("after a sign-in with a tampered %s /admin/webhooks led to %s, want the sign-in page", mode, got)
				}
			}
		})
	}
}

// sessionCookie is the console session cookie the browser holds.
func sessionCookie(t *testing.T, p *page) *http.Cookie {
	t.Helper()
	ctx, cancel := p.timed()
	defer cancel()
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Cookies {
		if c.Name == "hookd_session" {
			return &http.Cookie{Name: c.Name, Value: c.Value}
		}
	}
	t.Fatal("the browser holds no session cookie")
	return nil
}
