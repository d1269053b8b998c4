package console_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/hookdtest"
)

// TestFlow is what a new user does in the browser, on both engines: sign
// in, create an endpoint through the form ticking two types, read the
// secret off the page, receive a delivery a real receiver verifies with it,
// send a test and watch its row turn delivered without a reload, open its
// task, rotate the secret, disable, enable, delete.
func TestFlow(t *testing.T) {
	t.Parallel()
	for _, backend := range dbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			s := startSite(t, backend)
			p := &page{t: t, tab: browser(t), s: s}
			rc := newReceiver(t, false)
			shots := backend.Name == "sqlite"

			if shots {
				p.open("/admin/signin")
				p.shoot("signin")
			}
			p.signIn(s.keys["acme"])
			if got := p.text("main h1"); got != "Webhooks" {
				t.Fatalf("after sign-in the page says %q, want the Webhooks list", got)
			}
			if got := p.text(".empty-state"); !strings.Contains(got, "No endpoints yet") || !strings.Contains(got, "Create your first endpoint") {
				t.Errorf("empty list says %q; want it to say what to do", got)
			}
			if shots {
				p.shoot("endpoints-empty")
			}

			// A refused form keeps what was typed and says why next to the field.
			p.click("a.button.primary")
			p.do(
				chromedp.SendKeys(chromedp.ID("url"), "http://10.1.2.3/hook"),
				chromedp.SendKeys(chromedp.ID("description"), "orders & invoices"),
				chromedp.Click(chromedp.CSS(`input[value="invoice.paid"]`)),
				chromedp.Click(chromedp.CSS(`input[value="order.shipped"]`)),
			)
			if shots {
				p.shoot("endpoint-new")
			}
			if st := p.click("form.form button[type=submit]"); st != http.StatusUnprocessableEntity {
				t.Fatalf("a blocked URL answered %d, want 422", st)
			}
			if msg := p.text("#url-error"); !strings.Contains(msg, "not reachable by hookd") {
				t.Errorf("url error says %q", msg)
			}
			if v := run(p, chromedp.Value(chromedp.ID("url"))); v != "http://10.1.2.3/hook" {
				t.Errorf("the typed URL was not kept: %q", v)
			}
			if v := run(p, chromedp.Value(chromedp.ID("description"))); v != "orders & invoices" {
				t.Errorf("the typed description was not kept: %q", v)
			}
			if !run(p, chromedp.Evaluate[bool](`document.querySelector('input[value="invoice.paid"]').checked && document.querySelector('input[value="order.shipped"]').checked && !document.querySelector('input[value="invoice.voided"]').checked`)) {
				t.Error("the ticked types were not kept")
			}
			if shots {
				p.shoot("endpoint-new-error")
			}

			// Now a reachable URL: created, secret shown once.
			p.do(chromedp.SetValue(chromedp.ID("url"), rc.URL+"/hook"))
			if st := p.click("form.form button[type=submit]"); st != http.StatusCreated {
				t.Fatalf("create answered %d, want 201", st)
			}
			secret := run(p, chromedp.Value(chromedp.ID("secret")))
			if !strings.HasPrefix(secret, "whsec_") {
				t.Fatalf("secret on the page is %q", secret)
			}
			if !strings.Contains(p.text(".warning"), "will not be shown again") {
				t.Error("the secret page does not say it will not be shown again")
			}
			if shots {
				p.shoot("secret")
			}
			epPath := p.path()
			if !strings.HasPrefix(epPath, "/admin/webhooks/ep_") {
				t.Fatalf("after create the address is %s; want the endpoint's page (a reload must not show the secret)", epPath)
			}
			epID := strings.TrimPrefix(epPath, "/admin/webhooks/")
			rc.setSecret(secret)

			// A reload, the list and the page never show it again.
			p.open(epPath)
			if html := run(p, chromedp.OuterHTML(chromedp.CSS("html"))); strings.Contains(html, secret) {
				t.Fatal("the endpoint page shows the secret")
			}
			p.open("/admin/webhooks")
			if html := run(p, chromedp.OuterHTML(chromedp.CSS("html"))); strings.Contains(html, secret) {
				t.Fatal("the list shows the secret")
			}
			if got := p.text("table.endpoints tbody"); !strings.Contains(got, rc.URL+"/hook") || !strings.Contains(got, "invoice.paid") || !strings.Contains(got, "order.shipped") {
				t.Errorf("list row says %q", got)
			}

			// A published event reaches the receiver, which verifies it.
			if st := s.api(s.keys["acme-publisher"], "POST", "/api/v1/events", map[string]any{"type": "invoice.paid", "data": map[string]any{"invoice": "inv_1"}}, nil); st != http.StatusAccepted {
				t.Fatalf("publish: %d", st)
			}
			rc.expect(t, "invoice.paid")

			// Send test from the page: the row appears and turns delivered
			// with no reload (the marker set on the window survives).
			p.open(epPath)
			run(p, chromedp.Evaluate[int](`window.__noReload = 42`))
			p.do(chromedp.Click(chromedp.CSS(`form[data-async="send-test"] button`)))
			rc.expect(t, "webhook.test")
			run(p, chromedp.Poll[bool](`[...document.querySelectorAll('#delivery-rows tr[data-state="delivered"]')].some(r => r.textContent.includes('webhook.test'))`))
			if n := run(p, chromedp.Evaluate[int](`window.__noReload || 0`)); n != 42 {
				t.Fatal("the page reloaded to show the test delivery")
			}
			if shots {
				p.shoot("endpoint")
			}

			// Its task link opens the owner-checked task page.
			link := run(p, chromedp.Evaluate[string](`[...document.querySelectorAll('#delivery-rows tr')].find(r => r.textContent.includes('webhook.test')).querySelector('a.task-link').getAttribute('href')`))
			if !strings.HasPrefix(link, "/admin/tasks?job=") {
				t.Fatalf("test delivery's task link is %q", link)
			}
			// hookd records the delivery inside the job, and River marks
			// the job completed once it returns: the page may show it
			// running for a moment, so it is opened again until then.
			var got string
			hookdtest.WaitFor(10*time.Second, nil, func() bool {
				if st := p.open(link); st != http.StatusOK {
					t.Fatalf("task page: %d", st)
				}
				got = p.text("main")
				return strings.Contains(got, "completed")
			})
			if !strings.Contains(got, "webhook.deliver") || !strings.Contains(got, "completed") {
				t.Errorf("task page says %q", got)
			}
			if shots {
				p.shoot("task")
			}

			// The delivery log and one delivery's page.
			p.open(epPath + "/deliveries")
			if got := p.text("#delivery-rows"); !strings.Contains(got, "webhook.test") || !strings.Contains(got, "invoice.paid") {
				t.Errorf("log says %q", got)
			}
			if shots {
				p.shoot("deliveries")
			}
			p.open(epPath + "/deliveries?state=delivered&event_type=invoice.paid")
			if got := p.text("#delivery-rows"); strings.Contains(got, "webhook.test") || !strings.Contains(got, "invoice.paid") {
				t.Errorf("filtered log (invoice.paid) says %q", got)
			}
			p.click(`#delivery-rows a[href*="/deliveries/"]`)
			body := strings.ToLower(p.text("main")) // header names are case-insensitive
			for _, want := range []string{"invoice.paid", "webhook-id", "webhook-timestamp", `"inv_1"`} {
				if !strings.Contains(body, want) {
					t.Errorf("delivery page lacks %q", want)
				}
			}
			if strings.Contains(body, "webhook-signature") || strings.Contains(body, "v1,") {
				t.Error("delivery page shows the signature header")
			}
			if shots {
				p.shoot("delivery")
			}

			// Rotate: a new secret, shown once; the receiver verifies with it.
			p.open(epPath)
			p.click(`form[action$="/rotate_secret"] button`)
			rotated := run(p, chromedp.Value(chromedp.ID("secret")))
			if rotated == secret || !strings.HasPrefix(rotated, "whsec_") {
				t.Fatalf("rotated secret %q", rotated)
			}
			if got := p.text("#rotation-note"); !strings.Contains(got, "beside the new one until") {
				t.Errorf("the rotation page says %q; want the overlap's end", got)
			}
			rc.setSecret(rotated)
			p.open(epPath)
			p.do(chromedp.Click(chromedp.CSS(`form[data-async="send-test"] button`)))
			rc.expect(t, "webhook.test")

			// The rotation's overlap is on the page until it is ended.
			if got := p.text("#old-keys"); !strings.Contains(got, "still signing until") {
				t.Errorf("after rotate the old keys row says %q", got)
			}
			p.click(`form[action$="/expire_old_secrets"] button`)
			if got := p.text(".notice"); !strings.Contains(got, "Old keys no longer sign") {
				t.Errorf("ending the overlap says %q", got)
			}
			if run(p, chromedp.Evaluate[bool](`document.querySelector('#old-keys') !== null`)) {
				t.Error("the old keys row is still shown after ending the overlap")
			}

			// Retry now says how many were brought forward.
			p.click(`form[action$="/retry_now"] button`)
			if got := p.text(".notice"); !strings.Contains(got, "Nothing was waiting") {
				t.Errorf("retry now says %q", got)
			}

			// Trace context: off by default, ticked on the edit form, shown
			// on the page, unticked again; the other fields stay as they were.
			traceContext := func() bool {
				e, err := s.h.DB.Q().GetEndpoint(t.Context(), "acme", epID)
				if err != nil {
					t.Fatal(err)
				}
				if len(e.EventTypes) != 2 {
					t.Errorf("after an edit the endpoint's types are %v, want the two it had", e.EventTypes)
				}
				return e.TraceContext
			}
			p.open(epPath + "/edit")
			if run(p, chromedp.Evaluate[bool](`document.querySelector('#trace_context').checked`)) || traceContext() {
				t.Fatal("a new endpoint sends trace context; want it off unless ticked")
			}
			p.do(chromedp.Click(chromedp.ID("trace_context")))
			p.click("form.form button[type=submit]")
			if got := p.text("#trace-context"); !strings.Contains(got, "traceparent") || !traceContext() {
				t.Errorf("after ticking it the page says %q and the endpoint has trace_context %v", got, traceContext())
			}
			p.open(epPath + "/edit")
			if !run(p, chromedp.Evaluate[bool](`document.querySelector('#trace_context').checked`)) {
				t.Error("the edit form does not show trace context ticked")
			}
			p.do(chromedp.Click(chromedp.ID("trace_context")))
			p.click("form.form button[type=submit]")
			if run(p, chromedp.Evaluate[bool](`document.querySelector('#trace-context') !== null`)) || traceContext() {
				t.Error("unticked, the endpoint still sends trace context")
			}

			// Disable, enable.
			p.click(`form[action$="/enabled"] button`)
			if got := p.text(".facts .badge"); got != "disabled" {
				t.Errorf("after Disable the state is %q", got)
			}
			if !strings.Contains(p.text(".notice"), "Disabled") {
				t.Error("no notice after Disable")
			}
			p.click(`form[action$="/enabled"] button`)
			if got := p.text(".facts .badge"); got != "enabled" {
				t.Errorf("after Enable the state is %q", got)
			}

			// Redeliver says how many.
			p.click(`form[action$="/redeliver"] button`)
			if got := p.text(".notice"); !strings.Contains(got, "Nothing to redeliver") {
				t.Errorf("redeliver says %q", got)
			}

			// Delete asks first.
			p.click(`form[action$="/delete"] button`)
			if got := p.text("main h1"); !strings.Contains(got, "Delete this endpoint?") {
				t.Fatalf("delete did not ask: %q", got)
			}
			if _, err := s.h.DB.Q().GetEndpoint(t.Context(), "acme", epID); err != nil {
				t.Fatalf("asking deleted it: %v", err)
			}
			p.click(`form[action$="/delete"] button.danger`)
			if got := p.text(".empty-state"); !strings.Contains(got, "No endpoints yet") {
				t.Errorf("after delete the list says %q", got)
			}
			if _, err := s.h.DB.Q().GetEndpoint(t.Context(), "acme", epID); err == nil {
				t.Fatal("the endpoint still exists")
			}
		})
	}
}
