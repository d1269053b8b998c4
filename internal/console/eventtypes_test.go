package console_test

import (
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/event"
)

// TestEventTypes: the catalog with exposure and description; an admin
// marks an internal type webhook, and it becomes a checkbox on the form.
func TestEventTypes(t *testing.T) {
	s := startSite(t, dbtest.Engines()[0])
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
}
