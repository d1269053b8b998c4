package console_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/event"
)

// TestEventTypes: the catalog with exposure and description; an admin
// marks an internal type webhook, and it becomes a checkbox on the form.
func TestEventTypes(t *testing.T) {
	t.Parallel()
	s := startSite(t, dbtest.Backends()[0])
	p := &page{t: t, tab: browser(t), s: s}
	p.signIn(s.keys["acme"])
	p.open("/admin/event_types")
	row := p.text(`tr[id="type-order.audit"]`)
	if !strings.Contains(row, "internal") || !strings.Contains(row, "Internal bookkeeping") {
		t.Fatalf("order.audit row says %q", row)
	}
	p.shoot("event-types")
	p.open("/admin/webhooks/new")
	if n := len(p.text("fieldset.types")); n == 0 || strings.Contains(p.text("fieldset.types"), "order.audit") {
		t.Fatal("an internal type is offered on the form")
	}
	p.open("/admin/event_types")
	p.click(`tr[id="type-order.audit"] button`)
	if row := p.text(`tr[id="type-order.audit"]`); !strings.Contains(row, "webhook") || !strings.Contains(row, "Internal bookkeeping") {
		t.Errorf("after marking it webhook the row says %q (the description must stay)", row)
	}
	exp, _, err := s.h.DB.Q().Exposure(t.Context(), "acme", "order.audit")
	if err != nil || exp != event.Webhook {
		t.Fatalf("exposure %q %v", exp, err)
	}
	// Changing the exposure of a scoped type keeps it scoped.
	p.open("/admin/event_types")
	if row := p.text(`tr[id="type-invoice.voided"]`); !strings.Contains(row, "scoped") {
		t.Fatalf("scoped invoice.voided row says %q", row)
	}
	p.click(`tr[id="type-invoice.voided"] button`)
	if row := p.text(`tr[id="type-invoice.voided"]`); !strings.Contains(row, "internal") || !strings.Contains(row, "scoped") {
		t.Errorf("after marking it internal the row says %q (it must stay scoped)", row)
	}
	p.open("/admin/webhooks/new")
	if !strings.Contains(p.text("fieldset.types"), "order.audit") {
		t.Error("the type marked webhook is not offered on the form")
	}

	// A type's schema and example are shown, as text (escaped); marking
	// the type internal keeps both.
	const schema = `{"type":"object","description":"<b>amount</b> & co","properties":{"amount":{"type":"integer","minimum":0}}}`
	ty := &event.Type{OwnerID: "acme", Name: "order.shipped", Exposure: event.Webhook, Description: "An order left the warehouse.",
		Schema: []byte(schema), Example: []byte(`{"amount":3}`), CreatedAt: time.Now()}
	if _, err := ty.CheckSchema(); err != nil {
		t.Fatal(err)
	}
	if err := s.h.DB.Q().PutEventType(t.Context(), ty); err != nil {
		t.Fatal(err)
	}
	p.open("/admin/event_types")
	const shipped = `tr[id="type-order.shipped"]`
	p.do(chromedp.Click(chromedp.CSS(shipped+` details.type-schema summary`)), chromedp.Click(chromedp.CSS(shipped+` details.type-example summary`)))
	if got := p.text(shipped + ` details.type-schema pre`); !strings.Contains(got, `"description": "<b>amount</b> & co"`) || !strings.Contains(got, `"minimum": 0`) {
		t.Fatalf("schema shown as %q", got)
	}
	if got := p.text(shipped + ` details.type-example pre`); !strings.Contains(got, `"amount": 3`) {
		t.Fatalf("example shown as %q", got)
	}
	if html := run(p, chromedp.InnerHTML(chromedp.CSS(shipped+` details.type-schema pre`))); !strings.Contains(html, "&lt;b&gt;amount&lt;/b&gt; &amp; co") {
		t.Fatalf("the schema is not escaped: %s", html)
	}
	p.shoot("event-types-schema")
	p.click(shipped + ` button`)
	got, err := s.h.DB.Q().GetEventType(t.Context(), "acme", "order.shipped")
	if err != nil || got.Exposure != event.Internal || string(got.Schema) != schema || string(got.Example) != `{"amount":3}` {
		t.Fatalf("after marking it internal: %+v, %v; want its schema and example kept", got, err)
	}
}
