package console_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hookd/hookd/internal/dbtest"
)

var deliveryLink = regexp.MustCompile(`href="(/portal/s/[^"]+/deliveries/[^"]+)"`)

// TestPortalPages renders every portal page a customer reaches, framed by
// the producer's page through /portal.js, in English and Simplified
// Chinese, at 1280 and 360 px: nothing may overflow the 360 px frame
// sideways. With HOOKD_SCREENSHOTS=1 the pictures go to docs/screenshots.
func TestPortalPages(t *testing.T) {
	host, _ := hostPage(t)
	s, clk := portalSite(t, dbtest.Backends()[0], host.URL)
	rc := newReceiver(t, false)
	var ep struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	if st := s.api(s.keys["acme"], http.MethodPost, "/api/admin/webhooks", map[string]any{"url": rc.URL + "/orders", "description": "orders and invoices", "event_types": []string{"invoice.paid", "order.shipped"}, "enabled": true}, &ep); st != http.StatusCreated {
		t.Fatalf("endpoint: %d", st)
	}
	rc.setSecret(ep.Secret)
	for range 3 {
		if st := s.api(s.keys["acme-publisher"], http.MethodPost, "/api/v1/events", map[string]any{"type": "invoice.paid", "data": map[string]any{"invoice": "inv_12345", "amount": 12345}}, nil); st != http.StatusAccepted {
			t.Fatalf("publish: %d", st)
		}
		rc.expect(t, "invoice.paid")
	}
	if st := s.api(s.keys["operator"], http.MethodPatch, "/api/admin/owners/acme", map[string]any{"attributes": map[string]string{"portal_title": "Acme", "portal_accent": "#0a7d53"}}, nil); st != http.StatusOK {
		t.Fatalf("brand: %d", st)
	}
	tab := thirdPartyBrowser(t)
	portalOrigin := strings.Replace(s.srv.URL, "127.0.0.1", "localhost", 1)
	dir := t.TempDir()
	if os.Getenv("HOOKD_SCREENSHOTS") == "1" {
		dir = filepath.Join("..", "..", "docs", "screenshots")
	}
	for _, lang := range []string{"en", "zh-Hans"} {
		link := s.link(s.keys["acme"], map[string]any{"locale": lang, "return_url": host.URL + "/"})
		base := strings.Replace(s.open(link), s.srv.URL, portalOrigin, 1)
		var delivery string
		if m := deliveryLink.FindStringSubmatch(fetch(t, http.MethodGet, strings.Replace(base, portalOrigin, s.srv.URL, 1)+"/webhooks/"+ep.ID+"/deliveries", nil, "").body); m != nil {
			delivery = m[1]
		} else {
			t.Fatal("the log links to no delivery")
		}
		readOnly := strings.Replace(s.open(s.link(s.keys["acme"], map[string]any{"locale": lang, "read_only": true})), s.srv.URL, portalOrigin, 1)
		expired := strings.Replace(s.link(s.keys["acme"], map[string]any{"locale": lang, "ttl": "30m"}), s.srv.URL, portalOrigin, 1)
		clk.advance(31 * time.Minute) // the sessions above last an hour
		pages := []struct {
			name, url string
			act       func(context.Context) error // after the page loaded
		}{
			{"endpoints", base + "/webhooks", nil},
			{"endpoint", base + "/webhooks/" + ep.ID, nil},
			{"endpoint-read-only", readOnly + "/webhooks/" + ep.ID, nil},
			{"endpoint-new", base + "/webhooks/new", nil},
			{"endpoint-edit", base + "/webhooks/" + ep.ID + "/edit", nil},
			{"secret", base + "/webhooks/new", submitNewEndpoint(rc.URL + "/new")},
			{"deliveries", base + "/webhooks/" + ep.ID + "/deliveries", nil},
			{"delivery", portalOrigin + delivery, nil},
			{"event-types", base + "/event_types", nil},
			{"events", base + "/events", nil},
			{"grants", base + "/grants", nil},
			{"grant-new", base + "/grants/new", nil},
			{"link-used", strings.Replace(link, s.srv.URL, portalOrigin, 1), nil},
			{"link-expired", expired, nil},
		}
		for _, pg := range pages {
			for _, width := range []int64{1280, 360} {
				// The page itself, top-level at the frame's width: attaching
				// to a cross-site frame's target for every picture raced
				// inside chromedp (its node map written while its event
				// loop reads it) under -race. TestPortalEmbedded covers the
				// page framed.
				ctx, cancel := context.WithTimeout(tab, 30*time.Second)
				err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 800))
				if err == nil {
					err = chromedp.Do(ctx, chromedp.Navigate(pg.url))
				}
				if err == nil && pg.act != nil {
					err = pg.act(ctx)
				}
				var height int64
				if err == nil {
					height, err = chromedp.Run(ctx, chromedp.Evaluate[int64](`Math.ceil(document.documentElement.getBoundingClientRect().height)`))
				}
				if err == nil {
					err = chromedp.Do(ctx, chromedp.EmulateViewport(width, max(height, 200)))
				}
				var over bool
				if err == nil {
					over, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`))
				}
				var png []byte
				if err == nil {
					png, err = chromedp.Run(ctx, chromedp.CaptureScreenshot())
				}
				cancel()
				if err != nil {
					t.Fatalf("%s %s at %d px: %v", pg.name, lang, width, err)
				}
				if len(png) < 1000 || !bytes.HasPrefix(png, []byte("\x89PNG")) {
					t.Fatalf("%s %s at %d px is not a PNG", pg.name, lang, width)
				}
				if width == 360 && over {
					t.Errorf("portal %s (%s) overflows a 360 px frame sideways", pg.name, lang)
				}
				name := fmt.Sprintf("portal-%s-%s-%d.png", pg.name, lang, width)
				if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		// The endpoints the secret pictures made are gone again: the next
		// language's list shows the one endpoint.
		var eps struct {
			Data []struct{ ID string } `json:"data"`
		}
		s.api(s.keys["acme"], http.MethodGet, "/api/admin/webhooks", nil, &eps)
		for _, e := range eps.Data {
			if e.ID != ep.ID {
				if st := s.api(s.keys["acme"], http.MethodDelete, "/api/admin/webhooks/"+e.ID, nil, nil); st != http.StatusNoContent && st != http.StatusOK {
					t.Fatalf("delete endpoint %s: %d", e.ID, st)
				}
			}
		}
	}
}

// submitNewEndpoint fills the new-endpoint form with url and one event
// type and submits it, as a customer would, waiting for the page that
// shows the secret once. The click runs after the evaluation returns (the
// navigation it starts would end the evaluation's context), and each look
// for the secret waits on animation frames for up to 2 s, tried again when
// the page changed under it.
func submitNewEndpoint(url string) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`(function () {
  document.getElementById("url").value = %q;
  document.querySelector('input[value="invoice.paid"]').checked = true;
  var submit = document.querySelector("form.form button[type=submit]");
  setTimeout(function () { submit.click(); }, 0);
  return true;
})()`, url)))
		look := `new Promise(function (done) {
  var end = performance.now() + 2000;
  (function look() {
    if (document.getElementById("secret")) return done(true);
    if (performance.now() > end) return done(false);
    requestAnimationFrame(look);
  })();
})`
		for err == nil {
			shown, lookErr := chromedp.Run(ctx, chromedp.Evaluate[bool](look, chromedp.EvalAwaitPromise))
			if shown && lookErr == nil {
				return nil
			}
			err = ctx.Err() // a look the navigation cut short is tried again
		}
		return err
	}
}
