package transform

import (
	"encoding/json"
	"testing"
	"time"
)

// BenchmarkFilter is one filter asked about one event, the event's data
// already decoded (fanout decodes it once per event, for every endpoint
// with a filter): issue 46's "≤ 5 µs per event and endpoint".
func BenchmarkFilter(b *testing.B) {
	f := NewFilters()
	in := NewInput(invoice)
	const code = `data.amount > 1000 && data.region == "eu" && type.startsWith("invoice.")`
	if ok, err := f.Eval(code, in); !ok || err != nil {
		b.Fatal(ok, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if ok, _ := f.Eval(code, in); !ok {
			b.Fatal("false")
		}
	}
}

// BenchmarkFilterDecode adds the once-per-event decoding of a small data
// object (what the first filtered endpoint of an event pays).
func BenchmarkFilterDecode(b *testing.B) {
	f := NewFilters()
	const code = `data.amount > 1000`
	b.ReportAllocs()
	for b.Loop() {
		if ok, _ := f.Eval(code, NewInput(invoice)); !ok {
			b.Fatal("false")
		}
	}
}

// BenchmarkTransformation is one small transformation (a Slack-style
// reshaping of a ~200-byte envelope) with pooled runtimes: issue 46's
// "≤ 100 µs per delivery".
func BenchmarkTransformation(b *testing.B) {
	s := NewScripts(Limits{Time: 10 * time.Second}) // a loaded machine must not stop a run: this measures its cost
	env, _ := json.Marshal(map[string]any{"id": "evt_01", "type": "invoice.paid", "subject": "inv/1", "occurred_at": "2026-01-02T03:04:05Z",
		"data": map[string]any{"number": "INV-7", "amount": 1500, "region": "eu"}})
	in := Webhook{Method: "POST", URL: "https://example.com/hook", Headers: map[string]string{"X-Tenant": "acme"}, Payload: env}
	const code = `function handler(webhook) {
	const e = webhook.payload;
	webhook.payload = {text: "Invoice " + e.data.number + " paid: " + e.data.amount + " EUR"};
	webhook.headers["X-Slack-Channel"] = "#billing";
	return webhook;
}`
	if _, err := s.Run(code, in); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Run(code, in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTransformationCold is a run that must prepare a runtime first
// (a script's first run in a process, or after the pool was emptied by a
// GC): what pooling saves.
func BenchmarkTransformationCold(b *testing.B) {
	s := NewScripts(Limits{})
	sc, err := s.compiled(`function handler(w) { return w }`)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.prepare(sc); err != nil {
			b.Fatal(err)
		}
	}
}
