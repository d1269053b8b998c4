package console_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/hookd/hookd/internal/dbtest"
)

// outsidePrefix lists the page's links, form actions, assets and script
// targets that are not under prefix (an app mounting hookd at /webhooks
// must not get the console's requests at /admin/…).
func outsidePrefix(p *page, prefix string) []string {
	p.t.Helper()
	return run(p, chromedp.Evaluate[[]string](`(() => {
		const pre = `+"`"+prefix+"/`"+`;
		const urls = [];
		document.querySelectorAll('a[href]').forEach(e => urls.push(e.getAttribute('href')));
		document.querySelectorAll('form[action]').forEach(e => urls.push(e.getAttribute('action')));
		document.querySelectorAll('link[href], script[src]').forEach(e => urls.push(e.getAttribute('href') || e.getAttribute('src')));
		document.querySelectorAll('[data-live-rows], [data-replace-url]').forEach(e => urls.push(e.getAttribute('data-live-rows') || e.getAttribute('data-replace-url')));
		return urls.filter(u => !u.startsWith(pre) && !u.startsWith('#') && !u.startsWith('?'));
	})()`))
}

// TestMounted runs the console through hookd.Mount(mux, "/webhooks") in a
// plain ServeMux beside the app's own routes, on both engines: / stays the
// app's; /webhooks/ leads to the sign-in page; signing in, creating an
// endpoint, its delivery log, a test delivery's task link, grants and an
// operator's River UI all stay under /webhooks, with every link, form and
// asset of each page there; the session cookie is scoped to
// /webhooks/admin, so the app's routes never see it.
func TestMounted(t *testing.T) {
	t.Parallel()
	const pre = "/webhooks"
	for _, backend := range dbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			s := startSiteAt(t, backend, pre)
			rc := newReceiver(t, false)
			p := &page{t: t, tab: browser(t), s: s}
			check := func(what string) {
				t.Helper()
				if bad := outsidePrefix(p, pre); len(bad) > 0 {
					t.Errorf("%s (%s) links outside %s: %q", what, p.path(), pre, bad)
				}
				if !run(p, chromedp.Evaluate[bool](`[...document.styleSheets].some(s => s.cssRules.length > 0)`)) {
					t.Errorf("%s: the stylesheet did not load", what)
				}
			}

			p.open("/")
			if got := strings.TrimSpace(run(p, chromedp.Evaluate[string](`document.body.innerText`))); got != "the app" {
				t.Fatalf("the app's / says %q", got)
			}
			p.signIn(s.keys["acme"])
			if got := p.path(); got != pre+"/admin/webhooks" {
				t.Fatalf("after sign-in the address is %s", got)
			}
			check("endpoint list")
			ctx, cancel := p.timed()
			res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{})
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			var paths []string
			for _, c := range res.Cookies {
				if c.Name == "hookd_session" {
					paths = append(paths, c.Path)
				}
			}
			if len(paths) != 1 || paths[0] != pre+"/admin" {
				t.Errorf("session cookie paths %q, want [%s/admin]", paths, pre)
			}
			p.open("/cookies")
			if got := strings.TrimSpace(run(p, chromedp.Evaluate[string](`document.body.innerText`))); strings.Contains(got, "hookd_session") {
				t.Errorf("the app's own route was sent the console's cookie: %q", got)
			}

			// Create an endpoint through the form.
			p.open(pre + "/admin/webhooks")
			p.click("a.button.primary")
			check("new endpoint form")
			p.do(
				chromedp.SendKeys(chromedp.ID("url"), rc.URL+"/mounted"),
				chromedp.Click(chromedp.CSS(`input[value="invoice.paid"]`)),
			)
			if st := p.click("form.form button[type=submit]"); st != http.StatusCreated {
				t.Fatalf("create under %s: %d", pre, st)
			}
			check("secret page")
			rc.setSecret(run(p, chromedp.Value(chromedp.ID("secret"))))
			epPath := p.path()
			if !strings.HasPrefix(epPath, pre+"/admin/webhooks/ep_") {
				t.Fatalf("after create the address is %s", epPath)
			}

			// Send test (the script posts to the form's action), the row
			// turns delivered, its task link is under the prefix.
			p.open(epPath)
			check("endpoint page")
			p.do(chromedp.Click(chromedp.CSS(`form[data-async="send-test"] button`)))
			rc.expect(t, "webhook.test")
			run(p, chromedp.Poll[bool](`[...document.querySelectorAll('#delivery-rows tr[data-state="delivered"]')].some(r => r.textContent.includes('webhook.test'))`))
			p.click(`a[href$="/deliveries"]`)
			if got := p.path(); got != epPath+"/deliveries" {
				t.Fatalf("the full log link went to %s", got)
			}
			check("delivery log")
			link := run(p, chromedp.Evaluate[string](`document.querySelector('#delivery-rows a.task-link').getAttribute('href')`))
			if !strings.HasPrefix(link, pre+"/admin/tasks?job=") {
				t.Fatalf("task link %q", link)
			}
			job := strings.TrimPrefix(link, pre+"/admin/tasks?job=")
			if st := p.click(`#delivery-rows a.task-link`); st != http.StatusOK {
				t.Fatalf("task page under %s: %d", pre, st)
			}
			if got := p.text("main"); !strings.Contains(got, "webhook.deliver") {
				t.Errorf("task page says %q", got)
			}
			check("task page")
			p.open(pre + "/admin/grants/new")
			check("grant form")

			// An operator's River UI, under the prefix.
			op := &page{t: t, tab: browser(t), s: s}
			op.signIn(s.keys["operator"])
			op.open(pre + "/admin/tasks?job=" + job)
			if got := op.path(); got != pre+"/admin/tasks/jobs/"+job {
				t.Fatalf("operator's task link went to %s, want River UI's job page under %s", got, pre)
			}
			if _, err := chromedp.Run(p.timedFor(op, 90*time.Second), chromedp.Poll[bool](`document.body.innerText.includes('webhook.deliver')`)); err != nil {
				t.Fatalf("River UI under %s never showed the job (%v): %q", pre, err, run(op, chromedp.Evaluate[string](`document.documentElement.outerHTML`)))
			}

			// Sign out lands on the sign-in page under the prefix.
			p.open(pre + "/admin/webhooks")
			p.click(`form[action$="/admin/signout"] button`)
			if got := p.path(); got != pre+"/admin/signin" {
				t.Errorf("sign-out went to %s", got)
			}
		})
	}
}
