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

// clickIn clicks sel in the portal's frame from the page's own script: a
// node id chromedp holds can go stale in a cross-site frame between the
// query and the click.
func clickIn(frame context.Context, t *testing.T, sel string) {
	t.Helper()
	in(frame, t, chromedp.WaitVisible(chromedp.CSS(sel)))
	if !in(frame, t, chromedp.Evaluate[bool](fmt.Sprintf(`(function (e) { if (!e) return false; e.click(); return true; })(document.querySelector(%q))`, sel))) {
		t.Fatalf("no %s in the portal frame", sel)
	}
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
			if got := in(frame, t, chromedp.Text(chromedp.CSS("main h1"))); got != "Webhooks" {
				t.Fatalf("the framed portal says %q", got)
			}
			clickIn(frame, t, "a.button.primary")
			in(frame, t, chromedp.WaitVisible(chromedp.ID("url")))
			in(frame, t, chromedp.SendKeys(chromedp.ID("url"), rc.URL+"/hook"))
			clickIn(frame, t, `input[value="invoice.paid"]`)
			clickIn(frame, t, "form.form button[type=submit]")
			in(frame, t, chromedp.WaitVisible(chromedp.ID("secret")))
			secret := in(frame, t, chromedp.Value(chromedp.ID("secret")))
			if !strings.HasPrefix(secret, "whsec_") {
				t.Fatalf("the secret read off the framed page is %q", secret)
			}
			rc.setSecret(secret)
			clickIn(frame, t, "section.secret a.button")
			in(frame, t, chromedp.WaitVisible(chromedp.CSS(`form[data-async="send-test"] button`)))
			if html := in(frame, t, chromedp.OuterHTML(chromedp.CSS("html"))); strings.Contains(html, secret) {
				t.Fatal("the endpoint page shows the secret again")
			}
			clickIn(frame, t, `form[data-async="send-test"] button`)
			rc.expect(t, "webhook.test")
			in(frame, t, chromedp.WaitVisible(chromedp.CSS(`#delivery-rows tr[data-state="delivered"]`)))
			clickIn(frame, t, ".section-head a")
			in(frame, t, chromedp.WaitVisible(chromedp.CSS("form.filters")))
			if got := in(frame, t, chromedp.Text(chromedp.CSS("#delivery-rows"))); !strings.Contains(got, "webhook.test") {
				t.Errorf("the framed log says %q", got)
			}
			if cookies := in(frame, t, chromedp.Evaluate[string](`document.cookie`)); cookies != "" {
				t.Errorf("the portal set cookies: %q", cookies)
			}
			if back := in(frame, t, chromedp.AttributeValue(chromedp.CSS("header a.return"), "href")); back.Value != host.URL+"/" {
				t.Errorf("return link %q", back.Value)
			}
			// portal.js keeps the iframe as tall as the portal's page: the
			// log page's height, told by postMessage to this origin only.
			want := in(frame, t, chromedp.Evaluate[int](`Math.ceil(document.body.getBoundingClientRect().height)`))
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
