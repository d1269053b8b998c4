package console_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/hookd/hookd/internal/dbtest"
)

// TestKworkSubscriptions: a kwork owner sees the kwork profile's words, creates a
// subscription, sends open.ping, and reads its delivery records.
func TestKworkSubscriptions(t *testing.T) {
	t.Parallel()
	for _, backend := range dbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			s := startSite(t, backend)
			rc := newReceiver(t, true)
			p := &page{t: t, tab: browser(t), s: s}
			p.signIn(s.keys["shop"])
			if got := p.text("main h1"); got != "Event subscriptions" {
				t.Fatalf("kwork list is titled %q", got)
			}
			// kwork has no scoped types: no grants in its nav.
			if n := run(p, chromedp.Evaluate[int](`document.querySelectorAll('nav a[href$="/admin/grants"]').length`)); n != 0 {
				t.Error("a kwork owner's nav offers Grants")
			}
			if got := p.text(".empty-state"); !strings.Contains(got, "No subscriptions yet") {
				t.Errorf("kwork empty state says %q", got)
			}
			p.click("a.button.primary")
			if n := run(p, chromedp.Evaluate[int](`document.querySelectorAll('#grant_id').length`)); n != 0 {
				t.Error("a kwork owner without grants is offered a grant picker")
			}
			p.do(
				chromedp.SendKeys(chromedp.ID("url"), rc.URL+"/kwork"),
				chromedp.Click(chromedp.CSS(`input[value="app.installed"]`)),
				chromedp.Click(chromedp.CSS(`input[value="app.uninstalled"]`)),
				chromedp.Click(chromedp.ID("developer")),
			)
			if st := p.click("form.form button[type=submit]"); st != http.StatusCreated {
				t.Fatalf("create subscription: %d", st)
			}
			rc.setSecret(run(p, chromedp.Value(chromedp.ID("secret"))))
			epPath := p.path()
			p.open(epPath)
			if got := p.text("#developer"); !strings.Contains(got, "lifecycle events") {
				t.Errorf("the developer subscription's page says %q", got)
			}
			p.do(chromedp.Click(chromedp.CSS(`form[data-async="send-test"] button`)))
			rc.expect(t, "open.ping")
			run(p, chromedp.Poll[bool](`[...document.querySelectorAll('#delivery-rows tr[data-state="delivered"]')].some(r => r.textContent.includes('open.ping'))`))
			if got := p.text("section[data-live-rows] h2"); got != "Delivery records" {
				t.Errorf("kwork log is titled %q", got)
			}
			if backend.Name == "sqlite" {
				p.shoot("kwork-subscription")
			}
			p.open(epPath + "/deliveries")
			body := strings.ToLower(p.text("main"))
			for _, want := range []string{"delivery records", "latest 50", "open.ping", "sends"} {
				if !strings.Contains(body, want) {
					t.Errorf("kwork records page lacks %q", want)
				}
			}
			if backend.Name == "sqlite" {
				p.shoot("kwork-records")
			}
			p.click(`#delivery-rows a[href*="/deliveries/"]`)
			body = strings.ToLower(p.text("main"))
			for _, want := range []string{"x-kwork-event", "x-kwork-delivery", `"apiversion"`, `"tenant"`} {
				if !strings.Contains(body, want) {
					t.Errorf("kwork delivery page lacks %q", want)
				}
			}
			if strings.Contains(body, "x-kwork-signature") {
				t.Error("kwork delivery page shows the signature")
			}

			// kwork has no overlap: after a rotation only the new secret
			// signs, and the page says so.
			p.open(epPath)
			p.click(`form[action$="/rotate_secret"] button`)
			if got := p.text("#rotation-note"); !strings.Contains(got, "no longer signs") || strings.Contains(got, "beside") {
				t.Errorf("kwork rotation page says %q; want that the old secret no longer signs", got)
			}
		})
	}
}
