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
	s, _ := portalSite(t, dbtest.Backends()[0], host.URL)
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
		pages := []struct{ name, path string }{
			{"endpoints", "/webhooks"},
			{"endpoint", "/webhooks/" + ep.ID},
			{"endpoint-new", "/webhooks/new"},
			{"deliveries", "/webhooks/" + ep.ID + "/deliveries"},
			{"delivery", strings.TrimPrefix(delivery, strings.TrimPrefix(base, portalOrigin))},
			{"event-types", "/event_types"},
			{"events", "/events"},
			{"grants", "/grants"},
			{"link-used", ""},
		}
		for _, pg := range pages {
			for _, width := range []int64{1280, 360} {
				// The page itself, top-level at the frame's width: attaching
				// to a cross-site frame's target for every picture raced
				// inside chromedp (its node map written while its event
				// loop reads it) under -race. TestPortalEmbedded covers the
				// page framed.
				url := base + pg.path
				if pg.name == "link-used" {
					url = strings.Replace(link, s.srv.URL, portalOrigin, 1)
				}
				ctx, cancel := context.WithTimeout(tab, 30*time.Second)
				err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 800))
				if err == nil {
					err = chromedp.Do(ctx, chromedp.Navigate(url))
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
	}
}
