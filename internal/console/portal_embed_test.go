package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hookd/hookd/internal/dbtest"
)

// hostPage is a producer's page on its own origin that embeds src with
// hookd's /portal.js and one <hookd-portal> tag, as docs/portal.md says.
// Its body says loaded once the element's iframe has loaded.
func hostPage(t *testing.T) (*httptest.Server, *string) {
	t.Helper()
	src := new(string)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := url.Parse(*src)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><head><title>the producer</title><meta name="viewport" content="width=device-width, initial-scale=1">
<script src="%s://%s/portal.js"></script></head><body style="margin:0">
<h1 style="font:16px sans-serif;margin:8px">Acme's settings</h1>
<hookd-portal src=%q></hookd-portal>
<script>document.querySelector("hookd-portal iframe").addEventListener("load", function () { document.body.dataset.loaded = "yes"; });</script>
</body></html>`, u.Scheme, u.Host, *src)
	}))
	t.Cleanup(srv.Close)
	return srv, src
}

// thirdPartyBrowser is headless Chromium with third-party cookies
// blocked, as Safari always and Chrome soon do.
func thirdPartyBrowser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing", chromium)
		}
		t.Skipf("browser tests skipped: %s not installed", chromium)
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("test-third-party-cookie-phaseout", true),
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

// framed loads the host page and returns a context attached to the
// portal's frame (a cross-site iframe: its own target), or nil when no
// frame shows a portal page.
func framed(tab context.Context, t *testing.T, host, portalOrigin string) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(host)); err != nil {
		t.Fatalf("open the host page: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.body.dataset.loaded === 'yes'`)); err != nil {
		t.Fatalf("the host page's iframe never loaded: %v", err)
	}
	infos, err := chromedp.Targets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range infos {
		if info.Type != "iframe" {
			continue
		}
		frame, cancelFrame := chromedp.NewContext(tab, chromedp.WithTargetID(info.TargetID))
		t.Cleanup(cancelFrame)
		// The first run attaches to the frame's target for good: not under
		// a timeout, whose end would detach it.
		page, err := chromedp.Run(frame, chromedp.Evaluate[string](`location.origin + " " + (document.body ? document.body.dataset.page || "" : "")`))
		if err == nil && strings.HasPrefix(page, portalOrigin+" ") && strings.TrimPrefix(page, portalOrigin+" ") != "" {
			return frame
		}
	}
	return nil
}

// in runs steps in the portal's frame, bounded.
func in[T any](frame context.Context, t *testing.T, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(frame, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("in the portal frame: %v", err)
	}
	return v
}

// js evaluates expr in the frame's current document. A plain evaluation
// holds no node id and no execution context across calls, so a page the
// frame has just navigated to cannot leave it waiting on the old one.
func js[T any](frame context.Context, t *testing.T, expr string) T {
	t.Helper()
	return in(frame, t, chromedp.Evaluate[T](expr))
}

// waitIn waits until sel is shown in the portal's frame. Each try is one
// evaluation that waits on animation frames for up to 2 s; a try that
// meets a navigation (its context destroyed) is simply tried again. On
// giving up it says which page the frame shows instead.
func waitIn(frame context.Context, t *testing.T, sel string) {
	t.Helper()
	expr := fmt.Sprintf(`new Promise(function (done) {
  var end = performance.now() + 2000;
  (function look() {
    var e = document.querySelector(%q);
    if (e && e.getClientRects().length > 0) return done(true);
    if (performance.now() > end) return done(false);
    requestAnimationFrame(look);
  })();
})`, sel)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(frame, 5*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr, chromedp.EvalAwaitPromise))
		cancel()
		if err == nil && ok {
			return
		}
	}
	ctx, cancel := context.WithTimeout(frame, 5*time.Second)
	defer cancel()
	page, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + (document.body ? document.body.innerText : "")`))
	t.Fatalf("%s never showed in the portal frame; it shows %s", sel, page)
}

// clickIn clicks sel in the portal's frame from the page's own script: a
// node id chromedp holds can go stale in a cross-site frame between the
// query and the click.
func clickIn(frame context.Context, t *testing.T, sel string) {
	t.Helper()
	waitIn(frame, t, sel)
	if !js[bool](frame, t, fmt.Sprintf(`(function (e) { if (!e) return false; e.click(); return true; })(document.querySelector(%q))`, sel)) {
		t.Fatalf("no %s in the portal frame", sel)
	}
}

// textIn is sel's text in the portal's frame.
func textIn(frame context.Context, t *testing.T, sel string) string {
	t.Helper()
	return js[string](frame, t, fmt.Sprintf(`(function (e) { return e ? e.textContent.trim() : ""; })(document.querySelector(%q))`, sel))
}

// TestPortalEmbedded: a producer's page on http://127.0.0.1:A frames the
// portal served from http://localhost:B, a different site, in Chromium
// with third-party cookies blocked. Inside the frame the customer creates
// an endpoint, reads its secret once, sends a test that a loopback
// receiver verifies with that secret, and opens the log. A page on an
// origin that is not allowed gets an empty frame.
func TestPortalEmbedded(t *testing.T) {
	for _, b := range dbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			host, src := hostPage(t)
			other, otherSrc := hostPage(t)
			s, _ := portalSite(t, b, host.URL)
			tab := thirdPartyBrowser(t)
			rc := newReceiver(t, false)
			portalOrigin := strings.Replace(s.srv.URL, "127.0.0.1", "localhost", 1)
			link := func(body map[string]any) string {
				return strings.Replace(s.link(s.keys["acme"], body), s.srv.URL, portalOrigin, 1)
			}

			*src = link(map[string]any{"return_url": host.URL + "/"})
			frame := framed(tab, t, host.URL, portalOrigin)
			if frame == nil {
				t.Fatal("the allowed host page shows no portal in its frame")
			}
			if got := textIn(frame, t, "main h1"); got != "Webhooks" {
				t.Fatalf("the framed portal says %q", got)
			}
			clickIn(frame, t, "a.button.primary")
			waitIn(frame, t, "#url")
			js[bool](frame, t, fmt.Sprintf(`(function (e) { e.value = %q; e.dispatchEvent(new Event("input", {bubbles: true})); return true; })(document.getElementById("url"))`, rc.URL+"/hook"))
			clickIn(frame, t, `input[value="invoice.paid"]`)
			clickIn(frame, t, "form.form button[type=submit]")
			waitIn(frame, t, "#secret")
			secret := js[string](frame, t, `document.getElementById("secret").value`)
			if !strings.HasPrefix(secret, "whsec_") {
				t.Fatalf("the secret read off the framed page is %q", secret)
			}
			rc.setSecret(secret)
			clickIn(frame, t, "section.secret a.button")
			waitIn(frame, t, `form[data-async="send-test"] button`)
			if html := js[string](frame, t, `document.documentElement.outerHTML`); strings.Contains(html, secret) {
				t.Fatal("the endpoint page shows the secret again")
			}
			clickIn(frame, t, `form[data-async="send-test"] button`)
			rc.expect(t, "webhook.test")
			waitIn(frame, t, `#delivery-rows tr[data-state="delivered"]`)
			clickIn(frame, t, ".section-head a")
			waitIn(frame, t, "form.filters")
			if got := textIn(frame, t, "#delivery-rows"); !strings.Contains(got, "webhook.test") {
				t.Errorf("the framed log says %q", got)
			}
			if cookies := js[string](frame, t, `document.cookie`); cookies != "" {
				t.Errorf("the portal set cookies: %q", cookies)
			}
			if back := js[string](frame, t, `(function (e) { return e ? e.getAttribute("href") : ""; })(document.querySelector("header a.return"))`); back != host.URL+"/" {
				t.Errorf("return link %q", back)
			}
			// portal.js keeps the iframe as tall as the portal's page: the
			// log page's height, told by postMessage to this origin only.
			want := js[int](frame, t, `Math.ceil(document.body.getBoundingClientRect().height)`)
			hctx, cancel := context.WithTimeout(tab, 20*time.Second)
			_, err := chromedp.Run(hctx, chromedp.Poll[bool](fmt.Sprintf(`parseInt(document.querySelector("hookd-portal iframe").style.height, 10) === %d`, want)))
			cancel()
			if err != nil {
				t.Errorf("the host's iframe never took the portal's height %d px: %v", want, err)
			}

			// The same portal, framed by an origin nobody allowed: the
			// browser refuses it, and the frame shows no portal page.
			*otherSrc = link(nil)
			if f := framed(tab, t, other.URL, portalOrigin); f != nil {
				t.Error("a page on an origin that is not allowed framed the portal")
			}
		})
	}
}
