package console_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hookd/hookd/internal/dbtest"
)

// pngFile writes a w×h PNG (noise, so it does not compress) and returns
// its path.
func pngFile(t *testing.T, w, h int) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = byte(rand.IntN(256))
	}
	img.Set(0, 0, color.RGBA{10, 125, 83, 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return tempFile(t, fmt.Sprintf("logo-%dx%d.png", w, h), buf.Bytes())
}

// tempFile writes data to a file called name in a temp dir, for the
// browser to upload.
func tempFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBrandingPage: an owner's admin sets its portal's branding in the
// console: an uploaded logo is served by hookd (its sniffed type,
// nosniff, a sandboxing CSP) and shown in the portal; a logo over 64 KiB,
// an SVG and a bad colour are refused with what to fix, nothing saved.
func TestBrandingPage(t *testing.T) {
	for _, b := range dbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			s, _ := portalSite(t, b)
			p := &page{t: t, tab: browser(t), s: s}
			p.signIn(s.keys["acme"])
			p.open("/admin/branding")
			p.do(chromedp.SendKeys(chromedp.ID("b-title"), "Acme hooks"), chromedp.SendKeys(chromedp.ID("b-accent"), "#0a7d53"),
				chromedp.SetUploadFiles(chromedp.ID("b-logo"), []string{pngFile(t, 60, 28)}))
			if st := p.click("#branding-form button[type=submit]"); st != http.StatusOK {
				t.Fatalf("save branding: %d", st)
			}
			if got := p.text(".notice"); got != "Saved." {
				t.Fatalf("after saving the page says %q", got)
			}
			if w := run(p, chromedp.Evaluate[int](`new Promise(r => { const i = document.querySelector('.logo-preview'); i.complete ? r(i.naturalWidth) : i.onload = () => r(i.naturalWidth) })`, chromedp.EvalAwaitPromise)); w != 60 {
				t.Fatalf("the uploaded logo's preview is %d px wide, want 60", w)
			}
			p.shoot("branding")

			refused := []struct {
				name string
				set  chromedp.Action[chromedp.Void]
				want string
			}{
				{"a logo over 64 KiB", chromedp.SetUploadFiles(chromedp.ID("b-logo"), []string{pngFile(t, 200, 200)}), "The logo is larger than 64 KiB: upload an image of at most 65,536 bytes."},
				{"an SVG logo", chromedp.SetUploadFiles(chromedp.ID("b-logo"), []string{svgFile(t)}), "SVG logos are not accepted"},
				{"a bad colour", chromedp.SetValue(chromedp.ID("b-accent"), "green"), `"green" is not a colour`},
			}
			for _, c := range refused {
				p.open("/admin/branding")
				p.do(chromedp.SetValue(chromedp.ID("b-title"), "Changed"), c.set)
				if st := p.click("#branding-form button[type=submit]"); st != http.StatusUnprocessableEntity {
					t.Errorf("%s: %d, want 422", c.name, st)
				}
				if got := p.text("#branding-error"); !strings.Contains(got, c.want) {
					t.Errorf("%s: the page says %q, want %q", c.name, got, c.want)
				}
			}
			var got struct {
				Title string
				Logo  *struct {
					ContentType string `json:"content_type"`
					Size        int
				}
			}
			s.api(s.keys["acme"], http.MethodGet, "/api/admin/portal/branding", nil, &got)
			if got.Title != "Acme hooks" || got.Logo == nil || got.Logo.ContentType != "image/png" {
				t.Fatalf("after the refusals the branding is %+v, want the saved one", got)
			}

			// The portal shows the logo, served by hookd as a PNG only.
			base := s.open(s.link(s.keys["acme"], nil))
			p.do(chromedp.Navigate(base + "/webhooks"))
			src := run(p, chromedp.Evaluate[string](`document.querySelector('header img.logo').getAttribute('src')`))
			if !strings.HasPrefix(src, strings.TrimPrefix(base, s.srv.URL)+"/logo?v=") {
				t.Fatalf("the portal's logo is %q, want hookd's", src)
			}
			if title := p.text("header .brand"); title != "Acme hooks" {
				t.Errorf("the portal's title is %q", title)
			}
			a := fetch(t, http.MethodGet, s.srv.URL+src, nil, "")
			if a.status != http.StatusOK || a.header.Get("Content-Type") != "image/png" || a.header.Get("X-Content-Type-Options") != "nosniff" ||
				!strings.Contains(a.header.Get("Content-Security-Policy"), "sandbox") || !strings.HasPrefix(a.body, "\x89PNG") {
				t.Errorf("the logo answers %d %v", a.status, a.header)
			}
			// Another owner's admin sees its own (none), never acme's.
			var bobs struct {
				Title string
				Logo  any
			}
			if st := s.api(s.keys["bob"], http.MethodGet, "/api/admin/portal/branding", nil, &bobs); st != http.StatusOK || bobs.Title != "" || bobs.Logo != nil {
				t.Errorf("bob's branding: %d %+v", st, bobs)
			}
			// Over REST: too big is 422 saying the bound; another owner's 404.
			var e struct{ Error struct{ Message string } }
			big := base64.StdEncoding.EncodeToString(make([]byte, 64<<10+1))
			if st := s.api(s.keys["acme"], http.MethodPatch, "/api/admin/portal/branding", map[string]any{"logo_image": big}, &e); st != http.StatusUnprocessableEntity || !strings.Contains(e.Error.Message, "at most 65536 bytes") {
				t.Errorf("a 64 KiB + 1 logo over REST: %d %q", st, e.Error.Message)
			}
			if st := s.api(s.keys["acme"], http.MethodPatch, "/api/admin/portal/branding?owner=bob", map[string]any{"title": "pwned"}, nil); st != http.StatusNotFound {
				t.Errorf("acme's admin key on bob's branding: %d, want 404", st)
			}
			if a := fetch(t, http.MethodGet, s.srv.URL+"/admin/branding/logo", nil, ""); a.status == http.StatusOK {
				t.Error("the console's logo answers without a session")
			}
		})
	}
}

func svgFile(t *testing.T) string {
	t.Helper()
	// The name says PNG; the bytes do not.
	return tempFile(t, "logo.png", []byte(`<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>alert(1)</script></svg>`))
}

// TestPortalInBrowser: in Chromium, a link opened a second time and an
// expired one get the page that says so, naming nobody; a read-only
// session shows no button and a forged POST from its page answers 403,
// nothing changed; owner A's session never shows owner B's endpoint,
// deliveries or events, by URL or by form.
func TestPortalInBrowser(t *testing.T) {
	for _, b := range dbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			s, clk := portalSite(t, b)
			rc := newSwitchable(t)
			rc.up.Store(true)
			var acmeEP, bobEP struct{ ID, URL string }
			s.api(s.keys["acme"], http.MethodPost, "/api/admin/webhooks", map[string]any{"url": rc.URL + "/acme", "event_types": []string{"invoice.*"}}, &acmeEP)
			s.api(s.keys["bob"], http.MethodPost, "/api/admin/webhooks", map[string]any{"url": rc.URL + "/bob-secret-path", "event_types": []string{"invoice.*"}}, &bobEP)
			var bobEvent struct{ ID string }
			s.api(s.keys["bob"], http.MethodPost, "/api/v1/events", map[string]any{"type": "invoice.paid", "subject": "invoice://bob/1", "data": map[string]any{}}, &bobEvent)
			if acmeEP.ID == "" || bobEP.ID == "" || bobEvent.ID == "" {
				t.Fatal("setup: an endpoint or event was not created")
			}
			p := &page{t: t, tab: browser(t), s: s}
			nav := func(u string) int64 { p.t.Helper(); return run(p, chromedp.NavigateResponse(u)).Status }
			body := func() string { p.t.Helper(); return p.text("body") }

			link := s.link(s.keys["acme"], map[string]any{"ttl": "1h"})
			if st := nav(link); st != http.StatusOK || !strings.Contains(p.path(), "/portal/s/") {
				t.Fatalf("first opening: %d at %s", st, p.path())
			}
			if st := nav(link); st != http.StatusGone || !strings.Contains(body(), "This link was already used") || strings.Contains(body(), "acme") {
				t.Errorf("second opening: %d %q", st, body())
			}
			expiring := s.link(s.keys["acme"], map[string]any{"ttl": "30m"})
			clk.advance(31 * time.Minute)
			if st := nav(expiring); st != http.StatusGone || !strings.Contains(body(), "This link has expired") || strings.Contains(body(), "acme") {
				t.Errorf("expired link: %d %q", st, body())
			}

			// Read-only: no button, and a forged POST from the page is 403.
			ro := s.open(s.link(s.keys["acme"], map[string]any{"read_only": true}))
			for _, path := range []string{"/webhooks", "/webhooks/" + acmeEP.ID, "/events"} {
				if st := nav(ro + path); st != http.StatusOK {
					t.Fatalf("read-only %s: %d", path, st)
				}
				if n := run(p, chromedp.Evaluate[int](`document.querySelectorAll('form[method=post], main button:not(form[method=get] button), summary').length`)); n != 0 {
					t.Errorf("read-only %s shows %d buttons or posting forms", path, n)
				}
			}
			forge := func(path string, form map[string]string) int {
				p.t.Helper()
				js := fmt.Sprintf(`fetch(%q, {method: 'POST', body: new URLSearchParams(%s)}).then(r => r.status)`, path, jsonOf(form))
				return run(p, chromedp.Evaluate[int](js, chromedp.EvalAwaitPromise))
			}
			tok := readOnlyCSRF(ro)
			for _, path := range []string{"/webhooks/" + acmeEP.ID + "/delete", "/webhooks/" + acmeEP.ID + "/recover", "/events/" + bobEvent.ID + "/resend"} {
				if st := forge(ro+path, map[string]string{"csrf": tok, "since": "2026-01-01T00:00"}); st != http.StatusForbidden {
					t.Errorf("read-only forged POST %s: %d, want 403", path, st)
				}
			}
			if st := s.api(s.keys["acme"], http.MethodGet, "/api/admin/webhooks/"+acmeEP.ID, nil, nil); st != http.StatusOK {
				t.Fatalf("the forged delete removed the endpoint: %d", st)
			}

			// Isolation walk: acme's session, bob's ids.
			rw := s.open(s.link(s.keys["acme"], nil))
			for _, path := range []string{"/webhooks/" + bobEP.ID, "/webhooks/" + bobEP.ID + "/edit", "/webhooks/" + bobEP.ID + "/deliveries"} {
				if st := nav(rw + path); st != http.StatusNotFound || strings.Contains(body(), "bob-secret-path") {
					t.Errorf("acme's portal at bob's %s: %d", path, st)
				}
			}
			nav(rw + "/events")
			if strings.Contains(body(), bobEvent.ID) || strings.Contains(body(), "invoice://bob/") {
				t.Error("acme's events page shows bob's event")
			}
			tok = readOnlyCSRF(rw)
			for _, c := range []struct {
				path string
				form map[string]string
			}{
				{"/events/" + bobEvent.ID + "/resend", nil},
				{"/webhooks/" + bobEP.ID + "/recover", map[string]string{"since": time.Now().UTC().Add(-time.Hour).Format("2006-01-02T15:04")}},
				{"/webhooks/" + bobEP.ID + "/delete", nil},
				{"/webhooks/" + bobEP.ID + "/send_test", nil},
				{"/webhooks/" + bobEP.ID, map[string]string{"url": rc.URL + "/stolen", "event_types": "invoice.paid"}},
			} {
				form := map[string]string{"csrf": tok}
				for k, v := range c.form {
					form[k] = v
				}
				if st := forge(rw+c.path, form); st != http.StatusNotFound {
					t.Errorf("acme's portal POST %s at bob's: %d, want 404", c.path, st)
				}
			}
			var ep struct{ URL string }
			if st := s.api(s.keys["bob"], http.MethodGet, "/api/admin/webhooks/"+bobEP.ID, nil, &ep); st != http.StatusOK || ep.URL != rc.URL+"/bob-secret-path" {
				t.Fatalf("bob's endpoint after the walk: %d %+v", st, ep)
			}
		})
	}
}

func jsonOf(m map[string]string) string {
	var sb strings.Builder
	sb.WriteString("{")
	first := true
	for k, v := range m {
		if !first {
			sb.WriteString(",")
		}
		first = false
		fmt.Fprintf(&sb, "%q:%q", k, v)
	}
	sb.WriteString("}")
	return sb.String()
}
