package console_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/destination/brokertest"
	"github.com/hookd/hookd/webhook"
)

// The destination picker: RabbitMQ's fields make the endpoint's url, the
// machine's real RabbitMQ gets the event, and a consumer verifies it with
// the secret the page showed; the password is never on a page again.
func TestDestinationPickerRabbitMQ(t *testing.T) {
	t.Parallel()
	for _, backend := range dbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			queue, ch := brokertest.RabbitQueue(t)
			s := startSite(t, backend)
			p := &page{t: t, tab: browser(t), s: s}
			p.signIn(s.keys["acme"])
			p.open("/admin/webhooks/new")
			if run(p, chromedp.Evaluate[bool](`getComputedStyle(document.getElementById('amqp_routing_key')).display !== 'none' && document.getElementById('amqp_routing_key').offsetParent !== null`)) {
				t.Fatal("RabbitMQ's fields show before RabbitMQ is chosen")
			}
			p.do(
				chromedp.SetValue(chromedp.ID("dest_kind"), "amqp"),
				chromedp.WaitVisible(chromedp.ID("amqp_routing_key")),
				chromedp.SendKeys(chromedp.ID("amqp_host"), brokertest.RabbitAddr),
				chromedp.SendKeys(chromedp.ID("amqp_user"), "guest"),
				chromedp.SendKeys(chromedp.ID("amqp_password"), "guest"),
				chromedp.SendKeys(chromedp.ID("amqp_routing_key"), queue),
				chromedp.Click(chromedp.CSS(`input[value="invoice.paid"]`)),
			)
			if vis := run(p, chromedp.Evaluate[bool](`document.getElementById('url').offsetParent !== null`)); vis {
				t.Error("the HTTP url field still shows with RabbitMQ chosen")
			}
			if st := p.click("form.form button[type=submit]"); st != http.StatusCreated {
				t.Fatalf("create answered %d, want 201 (%s)", st, p.text("main"))
			}
			secret := run(p, chromedp.Value(chromedp.ID("secret")))
			if st := s.api(s.keys["acme-publisher"], "POST", "/api/v1/events", map[string]any{"type": "invoice.paid", "data": map[string]any{"invoice": "inv_q1"}}, nil); st != http.StatusAccepted {
				t.Fatalf("publish: %d", st)
			}
			m := brokertest.Get(t, ch, queue, 20*time.Second)
			v, err := webhook.NewVerifier(secret)
			if err != nil {
				t.Fatal(err)
			}
			ev, err := webhook.VerifyMessage(v, m.Headers, m.Body)
			if err != nil || ev.Type != "invoice.paid" {
				t.Fatalf("the consumer could not verify the message with the page's secret: %v, %+v", err, ev)
			}

			// The edit form shows the fields back, the password never.
			epPath := p.path()
			p.open(epPath + "/edit")
			if k := run(p, chromedp.Value(chromedp.ID("dest_kind"))); k != "amqp" {
				t.Fatalf("the edit form's kind is %q, want amqp", k)
			}
			if rk := run(p, chromedp.Value(chromedp.ID("amqp_routing_key"))); rk != queue {
				t.Errorf("the edit form's routing key is %q", rk)
			}
			if pw := run(p, chromedp.Value(chromedp.ID("amqp_password"))); pw != "" {
				t.Errorf("the edit form shows a password: %q", pw)
			}
			// Saved untouched: the stored password is kept, the messages still flow.
			if st := p.click("form.form button[type=submit]"); st != http.StatusOK {
				t.Fatalf("save answered %d (%s)", st, p.text("main"))
			}
			if html := run(p, chromedp.OuterHTML(chromedp.CSS("html"))); !strings.Contains(html, "guest:***@") || strings.Contains(html, "guest:guest") {
				t.Errorf("the endpoint page does not show the url with its password masked")
			}
			if st := s.api(s.keys["acme-publisher"], "POST", "/api/v1/events", map[string]any{"type": "invoice.paid", "data": map[string]any{"invoice": "inv_q2"}}, nil); st != http.StatusAccepted {
				t.Fatalf("publish: %d", st)
			}
			m = brokertest.Get(t, ch, queue, 20*time.Second)
			if _, err := webhook.VerifyMessage(v, m.Headers, m.Body); err != nil {
				t.Fatalf("after the edit: %v", err)
			}
		})
	}
}

// A destination the API refuses: the 422's message beside the field it
// names, the kind and what was typed kept, nothing created.
func TestDestinationPickerFieldError(t *testing.T) {
	t.Parallel()
	s := startSite(t, dbtest.Backends()[0])
	p := &page{t: t, tab: browser(t), s: s}
	p.signIn(s.keys["acme"])
	p.open("/admin/webhooks/new")
	p.do(
		chromedp.SetValue(chromedp.ID("dest_kind"), "nats"),
		chromedp.WaitVisible(chromedp.ID("nats_subject")),
		chromedp.SendKeys(chromedp.ID("nats_host"), brokertest.NATSAddr),
		chromedp.SendKeys(chromedp.ID("nats_subject"), "orders.*"),
		chromedp.Click(chromedp.CSS(`input[value="invoice.paid"]`)),
	)
	if st := p.click("form.form button[type=submit]"); st != http.StatusUnprocessableEntity {
		t.Fatalf("a wildcard subject answered %d, want 422", st)
	}
	p.do(chromedp.WaitVisible(chromedp.ID("nats_subject-error")))
	if msg := p.text("#nats_subject-error"); !strings.Contains(msg, "subject") || !strings.Contains(msg, "no wildcards") {
		t.Errorf("the subject's error says %q", msg)
	}
	if k := run(p, chromedp.Value(chromedp.ID("dest_kind"))); k != "nats" {
		t.Errorf("the kind was not kept: %q", k)
	}
	if h := run(p, chromedp.Value(chromedp.ID("nats_host"))); h != brokertest.NATSAddr {
		t.Errorf("the typed host was not kept: %q", h)
	}
	var list struct {
		Data []any `json:"data"`
	}
	if st := s.api(s.keys["acme"], "GET", "/api/admin/webhooks", nil, &list); st != http.StatusOK || len(list.Data) != 0 {
		t.Fatalf("after a refused form: %d, %d endpoints", st, len(list.Data))
	}
}
