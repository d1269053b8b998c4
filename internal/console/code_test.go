package console_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hookd/hookd/internal/app"
	"github.com/hookd/hookd/internal/dbtest"
)

// TestCodeEditors: the endpoint form's filter and transformation editors
// run the code on the owner's sample event when Try is clicked, showing
// what came of it without leaving the page; a filter that does not
// compile is refused next to its editor; saved code shows in the edit
// form.
func TestCodeEditors(t *testing.T) {
	t.Parallel()
	// 5 s a run: under -race on a loaded machine a small script can take
	// longer than the 50 ms default, and this test is about the editors.
	s := startSiteWith(t, dbtest.Backends()[0], "", func(c *app.Config) { c.TransformationTimeLimit = 5 * time.Second })
	if st := s.api(s.keys["acme"], "PUT", "/api/admin/event_types/acme.order", map[string]any{"exposure": "webhook",
		"example": map[string]any{"number": "A-1", "amount": 1500}}, nil); st != http.StatusOK {
		t.Fatalf("event type: %d", st)
	}
	p := &page{t: t, tab: browser(t), s: s}
	rc := newReceiver(t, false)
	p.signIn(s.keys["acme"])
	p.open("/admin/webhooks/new")
	p.do(
		chromedp.SendKeys(chromedp.ID("url"), rc.URL+"/hook"),
		chromedp.Click(chromedp.CSS(`input[value="acme.order"]`)),
		chromedp.SendKeys(chromedp.ID("filter"), "data.amount > 1000"),
		chromedp.Click(chromedp.ID("try-filter")),
		chromedp.WaitVisible(chromedp.ID("filter-output")),
	)
	if got := p.text("#filter-output"); !strings.Contains(got, "acme.order event passes") || !strings.Contains(got, "A-1") {
		t.Errorf("filter Try shows %q", got)
	}
	p.do(
		chromedp.SetValue(chromedp.ID("transformation"), `function handler(webhook) {
  webhook.payload = {text: "Order " + webhook.payload.data.number};
  return webhook;
}`),
		chromedp.Click(chromedp.ID("try-transformation")),
		chromedp.WaitVisible(chromedp.ID("transformation-output")),
	)
	if got := p.text("#transformation-output"); !strings.Contains(got, "would sign and send") || !strings.Contains(got, `"text": "Order A-1"`) || !strings.Contains(got, rc.URL+"/hook") {
		t.Errorf("transformation Try shows %q", got)
	}
	// A failing script: its error and line, shown as a failure.
	p.do(
		chromedp.SetValue(chromedp.ID("transformation"), "function handler(w) {\n  return w.payload.nothing.here;\n}"),
		chromedp.Click(chromedp.ID("try-transformation")),
		chromedp.WaitVisible(chromedp.CSS(`#transformation-output[data-ok="false"]`)),
	)
	if got := p.text("#transformation-output"); !strings.Contains(got, "transformation.js:2:") {
		t.Errorf("a failing script's Try shows %q", got)
	}
	if st := p.click("form.form button[type=submit]"); st != http.StatusCreated {
		t.Fatalf("create answered %d", st)
	}
	id := strings.TrimPrefix(p.path(), "/admin/webhooks/")
	p.open("/admin/webhooks/" + id + "/edit")
	if v := run(p, chromedp.Value(chromedp.ID("filter"))); v != "data.amount > 1000" {
		t.Fatalf("the edit form shows filter %q", v)
	}
	// A filter that does not compile: 422, said next to the editor.
	p.do(chromedp.SetValue(chromedp.ID("filter"), "data.amount >"))
	if st := p.click("form.form button[type=submit]"); st != http.StatusUnprocessableEntity {
		t.Fatalf("a bad filter answered %d", st)
	}
	if got := p.text("#filter-error"); !strings.Contains(got, "line 1, column 14") {
		t.Errorf("filter error says %q", got)
	}
}
