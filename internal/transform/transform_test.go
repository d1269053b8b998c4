package transform

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/apperr"
)

var invoice = Event{Type: "invoice.paid", Subject: "inv/1", OccurredAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	Data: json.RawMessage(`{"amount": 1500, "region": "eu", "lines": [1, 2, 3]}`)}

func TestFilterEval(t *testing.T) {
	f := NewFilters()
	cases := []struct {
		code string
		want bool
		err  bool
	}{
		{`data.amount > 1000`, true, false},
		{`data.amount > 2000`, false, false},
		{`data.region == "eu" && type.startsWith("invoice.")`, true, false},
		{`subject == "inv/2"`, false, false},
		{`occurred_at > timestamp("2026-01-01T00:00:00Z")`, true, false},
		{`size(data.lines) == 3`, true, false},
		{`data.missing == 1`, false, true}, // a missing field: an error, false
		{`data.region`, false, true},       // not a boolean at run time
		{`data.lines.all(x, x > 0)`, true, false},
	}
	for _, c := range cases {
		got, err := f.Eval(c.code, NewInput(invoice))
		if got != c.want || (err != nil) != c.err {
			t.Errorf("%s = %v, %v; want %v (error %v)", c.code, got, err, c.want, c.err)
		}
	}
}

func TestFilterCostBounded(t *testing.T) {
	big := make([]int, 5000)
	data, _ := json.Marshal(map[string]any{"xs": big})
	in := NewInput(Event{Type: "t", Data: data})
	// Every pair of 5,000 elements: 25 million steps, far over the limit.
	_, err := NewFilters().Eval(`data.xs.all(x, data.xs.all(y, x == y))`, in)
	if err == nil || !strings.Contains(err.Error(), "cost") {
		t.Fatalf("an expensive filter ran: %v", err)
	}
}

func TestCheckFilter(t *testing.T) {
	for code, want := range map[string]string{
		`data.amount >`:                  "line 1, column 14",
		`type == 1`:                      "no matching overload",
		`subject + "x"`:                  "true or false",
		strings.Repeat("x", MaxFilter+1): "at most 4096",
		"type == 'a' &&\n  nosuch.field": "line 2, column 3",
	} {
		err := CheckFilter(code)
		var ae *apperr.Error
		if !errors.As(err, &ae) || ae.Code != apperr.Invalid || !strings.Contains(ae.Message, want) {
			t.Errorf("CheckFilter(%.40q) = %v; want a 422 with %q", code, err, want)
		}
	}
	if err := CheckFilter(`data.amount > 1000`); err != nil {
		t.Fatal(err)
	}
}

const slack = `function handler(webhook) {
	const e = webhook.payload;
	webhook.payload = {text: "Invoice " + e.subject + " paid: " + e.data.amount};
	webhook.headers["X-Source"] = "hookd";
	webhook.url = webhook.url + "/slack?v=1";
	return webhook;
}`

func TestRunReshapes(t *testing.T) {
	s := NewScripts(Limits{})
	in := Webhook{Method: "POST", URL: "https://example.com/hook", Headers: map[string]string{"X-A": "1"},
		Payload: []byte(`{"subject":"inv/1","data":{"amount":1500}}`)}
	for range 3 { // pooled runtimes give the same answer
		r, err := s.Run(slack, in)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckResult(in, &r); err != nil {
			t.Fatal(err)
		}
		if string(r.Payload) != `{"text":"Invoice inv/1 paid: 1500"}` || r.Headers["X-Source"] != "hookd" || r.Headers["X-A"] != "1" ||
			r.URL != "https://example.com/hook/slack?v=1" || r.Method != "POST" || r.Cancel {
			t.Fatalf("result %+v %s", r, r.Payload)
		}
	}
}

func TestRunCancel(t *testing.T) {
	r, err := NewScripts(Limits{}).Run(`function handler(w) { if (w.payload.skip) { w.cancel = true } return w }`,
		Webhook{Method: "POST", URL: "https://x.test/", Payload: []byte(`{"skip":true}`)})
	if err != nil || !r.Cancel {
		t.Fatalf("%+v %v", r, err)
	}
}

func TestCheckResultKeepsHost(t *testing.T) {
	in := Webhook{URL: "https://example.com/a"}
	for _, u := range []string{"https://evil.test/a", "http://example.com/a", "https://example.com:444/a", "https://u@example.com/a"} {
		r := Result{Webhook: Webhook{URL: u, Payload: []byte(`{}`)}}
		if err := CheckResult(in, &r); err == nil || !strings.Contains(err.Error(), "host") {
			t.Errorf("%s: %v", u, err)
		}
	}
	r := Result{Webhook: Webhook{Method: "PUT", URL: in.URL}}
	if err := CheckResult(in, &r); err == nil || !strings.Contains(err.Error(), "POST only") {
		t.Errorf("PUT: %v", err)
	}
}

// TestHostileScripts: each is stopped or refused with a message that says
// why, and the runner goes on running other scripts.
func TestHostileScripts(t *testing.T) {
	s := NewScripts(Limits{})
	in := Webhook{Method: "POST", URL: "https://x.test/", Payload: []byte(`{}`)}
	cases := []struct{ name, code, want string }{
		{"endless loop", `function handler(w) { for (;;) {} }`, "time limit"},
		{"memory bomb", `function handler(w) { const a = []; while (true) a.push({x: a.length, y: "yyyyyyyyyyyyyyyy"}); }`, "stopped"},
		{"100 MB string", `function handler(w) { w.payload = "x".repeat(100 * 1024 * 1024); return w }`, "over the transformation's bound"},
		{"doubling string", `function handler(w) { let s = "x"; for (;;) s += s; }`, "stopped"},
		{"huge output", `function handler(w) { w.payload = "x".repeat(300000); return w }`, "at most 262144"},
		{"throw", `function handler(w) {
	throw new Error("no thanks");
}`, "no thanks at handler (transformation.js:2:8"},
		{"deep recursion", `function f() { return f() } function handler(w) { return f() }`, "recursed too deep"},
		{"top level loop", `while (true) {} function handler(w) { return w }`, "its top level: stopped"},
		{"no return", `function handler(w) { }`, "returned nothing"},
	}
	// Cases not about time get a long limit: a loaded machine (-race, other
	// tests) must not stop them first.
	patient := NewScripts(Limits{Time: 10 * time.Second})
	for _, c := range cases {
		start := time.Now()
		run := s
		if !strings.Contains(c.want, "time limit") && c.want != "stopped" && !strings.Contains(c.want, "top level") {
			run = patient
		}
		_, err := run.Run(c.code, in)
		var re *RunError
		if !errors.As(err, &re) || !strings.Contains(re.Error(), c.want) {
			t.Errorf("%s: %v; want a RunError with %q", c.name, err, c.want)
		}
		t.Logf("%s: stopped after %v: %v", c.name, time.Since(start), err)
	}
	r, err := s.Run(slack, Webhook{Method: "POST", URL: "https://x.test/", Headers: map[string]string{}, Payload: []byte(`{"subject":"s","data":{"amount":1}}`)})
	if err != nil || r.Cancel {
		t.Fatalf("after the hostile scripts: %v", err)
	}
}

func TestCheckScript(t *testing.T) {
	s := NewScripts(Limits{})
	for code, want := range map[string]string{
		`function handler(w) { return w`:       "does not compile: SyntaxError",
		`function handle(w) { return w }`:      "defines no handler",
		`var handler = 3`:                      "defines no handler",
		"// " + strings.Repeat("x", MaxScript): "at most 65536",
		`throw new Error("top")`:               "top at transformation.js:1:",
		"  ":                                   "empty",
	} {
		err := s.Check(code)
		var ae *apperr.Error
		if !errors.As(err, &ae) || ae.Code != apperr.Invalid || !strings.Contains(ae.Message, want) {
			t.Errorf("Check(%.40q) = %v; want a 422 with %q", code, err, want)
		}
	}
	if err := s.Check(slack); err != nil {
		t.Fatal(err)
	}
}

// TestRuntimesStaySeparate: a runtime runs one script only, so one
// script's globals are not another's.
func TestRuntimesStaySeparate(t *testing.T) {
	s := NewScripts(Limits{})
	in := Webhook{Method: "POST", URL: "https://x.test/", Payload: []byte(`{}`)}
	if _, err := s.Run(`var secret = "a's"; function handler(w) { return w }`, in); err != nil {
		t.Fatal(err)
	}
	r, err := s.Run(`function handler(w) { w.payload = typeof secret; return w }`, in)
	if err != nil || string(r.Payload) != `"undefined"` {
		t.Fatalf("%s %v", r.Payload, err)
	}
}

// TestHeapBound: a script that allocates without end is stopped by the
// heap watchdog when the heap grows past the bound before the time limit.
func TestHeapBound(t *testing.T) {
	s := NewScripts(Limits{Heap: 8 << 20, Time: 10 * time.Second})
	in := Webhook{Method: "POST", URL: "https://x.test/", Payload: []byte(`{}`)}
	_, err := s.Run(`function handler(w) { const a = []; for (;;) a.push("x".repeat(1000000)); }`, in)
	var re *RunError
	if !errors.As(err, &re) || !errors.Is(re.Stopped, ErrHeapLimit) {
		t.Fatalf("%v; want a stop at the heap bound", err)
	}
}
