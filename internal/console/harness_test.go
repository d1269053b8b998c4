package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hookd/hookd/internal/app"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/hookdtest"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/webhook"
)

const chromium = "/usr/bin/chromium"

// site is one running hookd (workers on) behind a real HTTP server, with
// owners acme (admin key), bob (admin key) and an operator key.
type site struct {
	t      *testing.T
	h      hookdtest.Hookd
	srv    *httptest.Server
	logs   *hookdtest.Logs   // hookd's log: a line per recorded attempt
	keys   map[string]string // "acme", "bob", "operator", "acme-publisher", "shop"
	prefix string            // where hookd is mounted ("": its own Handler at the root)
}

var catalog = []event.Type{
	{Name: "invoice.paid", Exposure: event.Webhook, Description: "An invoice was paid."},
	{Name: "invoice.voided", Exposure: event.Webhook, Scoped: true, Description: "An invoice was voided."},
	{Name: "order.shipped", Exposure: event.Webhook, Description: "An order left the warehouse."},
	{Name: "order.audit", Exposure: event.Internal, Description: "Internal bookkeeping; never leaves hookd."},
}

func startSite(t *testing.T, backend dbtest.Backend) *site {
	t.Helper()
	return startSiteAt(t, backend, "")
}

// startSiteAt is startSite with hookd mounted (hookd.Mount) under prefix in
// a plain http.ServeMux that also serves the app's own routes: / says
// "the app", and /cookies echoes the Cookie header the app was sent.
func startSiteAt(t *testing.T, backend dbtest.Backend, prefix string) *site {
	t.Helper()
	return startSiteWith(t, backend, prefix, nil)
}

// startSiteWith is startSiteAt with tweak applied to hookd's config.
func startSiteWith(t *testing.T, backend dbtest.Backend, prefix string, tweak func(*app.Config)) *site {
	t.Helper()
	cfg := hookdtest.Config(backend.Config(t))
	cfg.EventTypes = catalog
	cfg.BusySnooze = 100 * time.Millisecond
	logs := hookdtest.NewLogs()
	cfg.Log = logs.Logger(slog.LevelInfo)
	if tweak != nil {
		tweak(&cfg)
	}
	h := hookdtest.Open(t, cfg)
	handler := h.Handler()
	if prefix != "" {
		mux := http.NewServeMux()
		mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "the app") })
		mux.HandleFunc("GET /cookies", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "cookies: "+r.Header.Get("Cookie"))
		})
		if err := h.Mount(mux, prefix); err != nil {
			t.Fatal(err)
		}
		handler = mux
	}
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	ctx := context.Background()
	s := &site{t: t, h: h, srv: srv, logs: logs, keys: map[string]string{}, prefix: prefix}
	if _, err := s.h.Ops.CreateOwner(ctx, "shop", "kwork", map[string]string{"app": "shop-sync", "environment": "test"}); err != nil {
		t.Fatal(err)
	}
	for name, k := range map[string]struct {
		owner string
		role  owner.Role
	}{
		"acme": {"acme", owner.Admin}, "bob": {"bob", owner.Admin}, "operator": {"", owner.Operator},
		"acme-publisher": {"acme", owner.Publisher}, "shop": {"shop", owner.Admin},
	} {
		nk, err := s.h.Ops.CreateKey(ctx, k.owner, k.role)
		if err != nil {
			t.Fatal(err)
		}
		s.keys[name] = nk.Secret
	}
	return s
}

// api calls the REST API with a key and decodes the answer.
func (s *site) api(key, method, path string, body, out any) int {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.srv.URL+path, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			s.t.Fatalf("%s %s: decode %q: %v", method, path, raw, err)
		}
	}
	return resp.StatusCode
}

// verified is one request a receiver verified with the secret it was given.
type verified struct {
	Type string
	ID   string
}

// receiver is a real loopback HTTP server that verifies every request with
// the secret the test read off the page, and reports each verified event.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	secret string
	kwork  bool
	got    chan verified
	bad    chan error
}

func newReceiver(t *testing.T, kwork bool) *receiver {
	rc := &receiver{kwork: kwork, got: make(chan verified, 100), bad: make(chan error, 100)}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		secret := rc.secret
		rc.mu.Unlock()
		var ev webhook.Event
		var err error
		if rc.kwork {
			var v *webhook.KworkVerifier
			if v, err = webhook.NewKworkVerifier(secret); err == nil {
				ev, err = v.Verify(r.Header, body)
			}
		} else {
			var v *webhook.Verifier
			if v, err = webhook.NewVerifier(secret); err == nil {
				ev, err = v.Verify(r.Header, body)
			}
		}
		if err != nil {
			rc.bad <- err
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		rc.got <- verified{Type: ev.Type, ID: ev.ID}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) setSecret(s string) {
	rc.mu.Lock()
	rc.secret = s
	rc.mu.Unlock()
}

// expect waits for a verified event of type typ, failing on a request that
// did not verify or after 20 s.
func (rc *receiver) expect(t *testing.T, typ string) verified {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case v := <-rc.got:
			if v.Type == typ {
				return v
			}
		case err := <-rc.bad:
			t.Fatalf("receiver could not verify a delivery with the secret shown on the page: %v", err)
		case <-deadline:
			t.Fatalf("no verified %s delivery within 20 s", typ)
		}
	}
}

// browser starts headless Chromium (Debian's package; nothing downloaded)
// and returns a tab. Without it the test skips, except in CI.
func browser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing; CI must run the browser tests (.ci/run installs Debian's chromium)", chromium)
		}
		t.Skipf("browser tests skipped: %s not installed (apt-get install chromium)", chromium)
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("user-data-dir", t.TempDir()), chromedp.WindowSize(1280, 900))
	tab, cancelTab := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	if err := chromedp.Do(tab, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return tab
}

// page drives one tab with a bound on every step.
type page struct {
	t   *testing.T
	tab context.Context
	s   *site
}

func (p *page) timed() (context.Context, context.CancelFunc) {
	return context.WithTimeout(p.tab, 30*time.Second)
}

// timedFor bounds one step of q to d (its caller reports the failure).
func (p *page) timedFor(q *page, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(q.tab, d)
	p.t.Cleanup(cancel)
	return ctx
}

func (p *page) do(steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := p.timed()
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		p.t.Fatalf("browser: %v", err)
	}
}

func run[T any](p *page, a chromedp.Action[T]) T {
	p.t.Helper()
	ctx, cancel := p.timed()
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		p.t.Fatalf("browser: %v", err)
	}
	return v
}

// open navigates to path and returns the HTTP status of the page.
func (p *page) open(path string) int64 {
	p.t.Helper()
	resp := run(p, chromedp.NavigateResponse(p.s.srv.URL+path))
	return resp.Status
}

// click clicks sel and waits for the navigation it causes.
func (p *page) click(sel string) int64 {
	p.t.Helper()
	ctx, cancel := p.timed()
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(sel)))
	if err != nil {
		p.t.Fatalf("click %s: %v", sel, err)
	}
	return resp.Status
}

func (p *page) text(sel string) string {
	p.t.Helper()
	return strings.TrimSpace(run(p, chromedp.Text(chromedp.CSS(sel))))
}

func (p *page) path() string {
	p.t.Helper()
	loc := run(p, chromedp.Location())
	return strings.TrimPrefix(loc, p.s.srv.URL)
}

// signIn signs in with key and lands on the endpoint list.
func (p *page) signIn(key string) {
	p.t.Helper()
	pre := p.s.prefix
	if st := p.open(pre + "/"); st != http.StatusOK {
		p.t.Fatalf("GET %s/ ended with status %d, want the sign-in page", pre, st)
	}
	if got := p.path(); !strings.HasPrefix(got, pre+"/admin/signin") {
		p.t.Fatalf("%s/ led to %s, want %s/admin/signin", pre, got, pre)
	}
	p.do(chromedp.SendKeys(chromedp.ID("key"), key))
	p.click("form[action='" + pre + "/admin/signin'] button[type=submit]")
}

// shoot writes a full-page screenshot of the current page at width w:
// into docs/screenshots when HOOKD_SCREENSHOTS=1, else a temp dir.
func (p *page) shoot(name string) {
	p.t.Helper()
	dir := p.t.TempDir()
	if os.Getenv("HOOKD_SCREENSHOTS") == "1" {
		dir = filepath.Join("..", "..", "docs", "screenshots")
	}
	for _, w := range []int64{1280, 390} {
		p.do(chromedp.EmulateViewport(w, 800))
		png := run(p, chromedp.FullScreenshot(100))
		if len(png) < 1000 || !bytes.HasPrefix(png, []byte("\x89PNG")) {
			p.t.Fatalf("screenshot %s at %d px is not a PNG (%d bytes)", name, w, len(png))
		}
		// At 390 px nothing may overflow sideways: tables scroll inside
		// their own box.
		if w == 390 {
			if over := run(p, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`)); over {
				p.t.Errorf("%s overflows 390 px sideways (scrollWidth %v)", name, run(p, chromedp.Evaluate[float64](`document.documentElement.scrollWidth`)))
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name+"-"+strconv.FormatInt(w, 10)+".png"), png, 0o644); err != nil {
			p.t.Fatal(err)
		}
	}
	p.do(chromedp.EmulateViewport(1280, 900))
}
