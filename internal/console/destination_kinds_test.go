package console_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/hookd/hookd/internal/app"
	"github.com/hookd/hookd/internal/dbtest"
)

// TestDestinationPickerAllowedKinds: the console's picker offers only the
// kinds the operator allows (--destinations); with one kind there is no
// picker, only its fields, in the portal too; an endpoint saved before its
// kind was left out keeps it on its edit form and saves unchanged.
func TestDestinationPickerAllowedKinds(t *testing.T) {
	t.Parallel()
	for _, backend := range dbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			s := startSiteWith(t, backend, "", func(c *app.Config) { c.Destinations = []string{"http", "sqs"} })
			p := &page{t: t, tab: browser(t), s: s}
			p.signIn(s.keys["acme"])
			p.open("/admin/webhooks/new")
			options := func() []string {
				t.Helper()
				return run(p, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('select#dest_kind option')).map(o => o.value)`))
			}
			if got := options(); !slices.Equal(got, []string{"http", "sqs"}) {
				t.Fatalf("with --destinations http,sqs the picker offers %v", got)
			}
			if run(p, chromedp.Evaluate[bool](`document.getElementById('amqp_host') !== null`)) {
				t.Error("RabbitMQ's fields are on the page though amqp is not allowed")
			}

			var old struct{ ID, URL string }
			rc := newReceiver(t, false)
			if st := s.api(s.keys["acme"], http.MethodPost, "/api/admin/webhooks", map[string]any{"url": rc.URL + "/hook", "event_types": []string{"invoice.*"}}, &old); st != http.StatusCreated {
				t.Fatalf("create the http endpoint: %d", st)
			}
			// The operator restarts with --destinations sqs (SetDestinations:
			// the list is read on every request, as a new process would).
			s.h.Ops.SetDestinations([]string{"sqs"})
			rw := s.open(s.link(s.keys["acme"], nil))
			p.open(strings.TrimPrefix(rw, s.srv.URL) + "/webhooks/new")
			if run(p, chromedp.Evaluate[bool](`document.querySelector('select#dest_kind') !== null || document.getElementById('url') !== null`)) {
				t.Fatal("with only sqs allowed the portal still shows a picker or the http url field")
			}
			if k := run(p, chromedp.Value(chromedp.ID("dest_kind"))); k != "sqs" {
				t.Fatalf("the form's kind is %q, want sqs", k)
			}
			if !run(p, chromedp.Evaluate[bool](`document.getElementById('sqs_queue_url').offsetParent !== null`)) {
				t.Fatal("SQS's fields do not show")
			}
			p.do(
				chromedp.SendKeys(chromedp.ID("sqs_queue_url"), "http://127.0.0.1:4566/000000000000/orders"),
				chromedp.SendKeys(chromedp.ID("sqs_region"), "us-east-1"),
				chromedp.SendKeys(chromedp.ID("sqs_access_key"), "AKID"),
				chromedp.SendKeys(chromedp.ID("sqs_secret_key"), "s3cret"),
				chromedp.Click(chromedp.CSS(`input[value="invoice.paid"]`)),
			)
			if st := p.click("form.form button[type=submit]"); st != http.StatusCreated {
				t.Fatalf("the SQS endpoint answered %d (%s)", st, p.text("main"))
			}

			// The http endpoint saved before: its edit form keeps http
			// (beside sqs) and saves unchanged.
			p.open(strings.TrimPrefix(rw, s.srv.URL) + "/webhooks/" + old.ID + "/edit")
			if got := options(); !slices.Equal(got, []string{"http", "sqs"}) {
				t.Fatalf("the existing http endpoint's picker offers %v, want its own http beside sqs", got)
			}
			if k := run(p, chromedp.Value(chromedp.ID("dest_kind"))); k != "http" {
				t.Fatalf("its kind shows as %q", k)
			}
			if st := p.click("form.form button[type=submit]"); st != http.StatusOK {
				t.Fatalf("saving it unchanged answered %d (%s)", st, p.text("main"))
			}
		})
	}
}
