package transform

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDocExamples runs every script of docs/transformations.md on a
// sample envelope: the worked examples work as written.
func TestDocExamples(t *testing.T) {
	doc, err := os.ReadFile("../../docs/transformations.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```js\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	if len(blocks) < 4 {
		t.Fatalf("found %d scripts in the doc; want the handler outline, Slack, Teams and the renamed field", len(blocks))
	}
	s := NewScripts(Limits{})
	in := Webhook{Method: "POST", URL: "https://example.com/hook", Headers: map[string]string{},
		Payload: []byte(`{"id":"evt_1","type":"invoice.paid","subject":"inv/1","occurred_at":"2026-01-02T03:04:05Z","data":{"number":"INV-7","amount":1500,"customer_id":"c_9"}}`)}
	for i, b := range blocks {
		if err := s.Check(b[1]); err != nil {
			t.Fatalf("script %d: %v", i, err)
		}
		r, err := s.Run(b[1], in)
		if err == nil {
			err = CheckResult(in, &r)
		}
		if err != nil || r.Cancel {
			t.Fatalf("script %d: %v (cancel %v)", i, err, r.Cancel)
		}
		t.Logf("script %d: %s %s %s", i, r.URL, r.Headers, r.Payload)
		if i == 3 && (!strings.Contains(string(r.Payload), `"client_id":"c_9"`) || strings.Contains(string(r.Payload), "customer_id") ||
			r.URL != "https://example.com/hook/invoice/paid?v=2" || r.Headers["X-Legacy-Version"] != "2") {
			t.Errorf("the renamed-field example made %s %s %s", r.URL, r.Headers, r.Payload)
		}
	}
	_, err = s.Run("function handler(w) {\n  return w.payload.data.nothing.deeper;\n}", in)
	t.Logf("a throw reads: %v", err)
	t.Logf("a syntax error reads: %v", s.Check(`function handler(w) { return w`))
}
