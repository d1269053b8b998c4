package e2e_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/app"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/hookdtest"
	"github.com/hookd/hookd/internal/transform"
)

// patientScripts gives transformations 5 s a run: these tests are about
// what scripts do, and under -race on a loaded machine a small run can
// take longer than the 50 ms default (TestHostileTransformations keeps it).
func patientScripts(c *app.Config) { c.TransformationTimeLimit = 5 * time.Second }

// apiError is an error answer's body.
type apiError struct {
	Error struct{ Code, Message string } `json:"error"`
}

// TestEndpointFilters: on both engines, an endpoint's filter lets through
// the events it is true for; the others get no delivery row at all; a
// filter that fails on an event (a field it lacks) counts as false and is
// logged once for the endpoint, not per event; a filter that does not
// compile is refused with a 422 naming its position, and changes nothing.
func TestEndpointFilters(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		logs := hookdtest.NewLogs()
		b := setup(t, backend, setupOpts{mutate: func(c *app.Config) { c.Log = logs.Logger(slog.LevelInfo) }})
		rc := newReceiver(t)
		b.registerType("invoice.paid")
		var big, eu, all struct {
			endpointOut
			Filter string `json:"filter"`
		}
		b.must(201, "POST", "/api/admin/webhooks", map[string]any{"url": rc.URL + "/big", "event_types": []string{"invoice.*"}, "filter": "data.amount > 1000"}, &big)
		b.must(201, "POST", "/api/admin/webhooks", map[string]any{"url": rc.URL + "/eu", "event_types": []string{"invoice.*"}, "filter": `data.region == "eu" && subject.startsWith("test://")`}, &eu)
		b.must(201, "POST", "/api/admin/webhooks", map[string]any{"url": rc.URL + "/all", "event_types": []string{"invoice.*"}}, &all)
		if big.Filter != "data.amount > 1000" || all.Filter != "" {
			t.Fatalf("records show filters %q and %q", big.Filter, all.Filter)
		}
		evs := []string{
			b.publish("invoice.paid", `{"amount": 1500, "region": "eu"}`), // big, eu
			b.publish("invoice.paid", `{"amount": 10, "region": "us"}`),   // neither
			b.publish("invoice.paid", `{"amount": 2000}`),                 // big; eu's filter fails (no region)
			b.publish("invoice.paid", `{"amount": 5}`),                    // neither; eu's fails again
		}
		rc.waitFor(t, 4+2+1, 60*time.Second) // all's four, big's two, eu's one
		want := map[string][]string{big.ID: {evs[0], evs[2]}, eu.ID: {evs[0]}, all.ID: evs}
		for id, events := range want {
			got := map[string]bool{}
			for _, d := range b.deliveries(id) {
				got[d.EventID] = true
			}
			if len(got) != len(events) {
				t.Errorf("endpoint %s has deliveries of %v; want exactly %v", id, got, events)
			}
			for _, ev := range events {
				if !got[ev] {
					t.Errorf("endpoint %s has no delivery of %s", id, ev)
				}
			}
		}
		if n := strings.Count(logs.String(), "an endpoint's filter failed"); n != 1 {
			t.Errorf("the failing filter was logged %d times over two events; want once:\n%s", n, logs.String())
		}

		// A filter that does not compile, or is not a condition: 422,
		// naming where, and nothing changes.
		for filter, want := range map[string]string{
			"data.amount >":   "line 1, column 14",
			"subject + 'x'":   "true or false",
			"type == 1":       "no matching overload",
			"no_such_var > 1": "undeclared reference",
		} {
			var e apiError
			if got := b.do("PATCH", "/api/admin/webhooks/"+big.ID, map[string]any{"filter": filter}, &e); got != 422 || !strings.Contains(e.Error.Message, want) {
				t.Errorf("filter %q: %d %q; want 422 with %q", filter, got, e.Error.Message, want)
			}
			if got := b.do("POST", "/api/admin/webhooks", map[string]any{"url": rc.URL, "event_types": []string{"invoice.*"}, "filter": filter}, &e); got != 422 {
				t.Errorf("create with filter %q: %d; want 422", filter, got)
			}
		}
		var after struct {
			Data []struct {
				ID     string `json:"id"`
				Filter string `json:"filter"`
			} `json:"data"`
		}
		b.must(200, "GET", "/api/admin/webhooks", nil, &after)
		if len(after.Data) != 3 || after.Data[0].Filter != "data.amount > 1000" {
			t.Fatalf("after the refusals: %+v", after.Data)
		}
		// An empty filter removes it: every event passes again.
		b.must(200, "PATCH", "/api/admin/webhooks/"+big.ID, map[string]any{"filter": ""}, nil)
		small := b.publish("invoice.paid", `{"amount": 1}`)
		b.waitDelivery(big.ID, small, 30*time.Second, func(d deliveryOut) bool { return d.State == "delivered" })
	})
}

// slackScript reshapes an invoice event into a Slack message, moves it to
// the receiver's /slack path and adds a header.
const slackScript = `function handler(webhook) {
	const e = webhook.payload;
	webhook.payload = {text: "Invoice " + e.data.number + " paid: " + e.data.amount + " EUR"};
	webhook.headers["X-Slack-Channel"] = "#billing";
	webhook.url = webhook.url + "/slack?format=blocks";
	return webhook;
}`

// TestTransformations: on both engines, a Slack-style reshaping arrives
// with the new body, path and header, signed over the new body (the Go SDK
// verifies it); a cancelled delivery is recorded as such and not sent; a
// script that throws or moves the host fails the delivery with its error
// and line; bad scripts are refused with a 422.
func TestTransformations(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend, setupOpts{mutate: patientScripts})
		rc := newReceiver(t)
		b.registerType("invoice.paid")
		mk := func(path, script string) endpointOut {
			var ep endpointOut
			b.must(201, "POST", "/api/admin/webhooks", map[string]any{"url": rc.URL + path, "event_types": []string{"invoice.paid"},
				"headers": map[string]string{"X-Tenant": "acme"}, "transformation": script}, &ep)
			return ep
		}
		slack := mk("/hooks", slackScript)
		cancel := mk("/cancel", `function handler(w) { if (w.payload.data.amount < 100) { w.cancel = true } return w }`)
		throws := mk("/throws", "function handler(w) {\n  return w.payload.data.nothing.deeper;\n}")
		moves := mk("/moves", `function handler(w) { w.url = "https://example.com/stolen"; return w }`)
		var leaks endpointOut // a script that throws the endpoint's credential
		b.must(201, "POST", "/api/admin/webhooks", map[string]any{"url": rc.URL + "/leaks", "event_types": []string{"invoice.paid"},
			"headers": map[string]string{"Authorization": "Bearer s3cr3t-token"}, "transformation": `function handler(w) { throw new Error("have " + w.headers.Authorization) }`}, &leaks)

		ev := b.publish("invoice.paid", `{"number": "INV-7", "amount": 1500}`)
		small := b.publish("invoice.paid", `{"number": "INV-8", "amount": 5}`)

		var got *receipt
		for _, r := range rc.waitFor(t, 3, 60*time.Second) { // slack twice, cancel's big one
			if strings.HasPrefix(r.Path, "/hooks/slack") && strings.Contains(string(r.Body), "INV-7") {
				got = &r
			}
		}
		if got == nil {
			t.Fatalf("no Slack message for INV-7 arrived: %+v", rc.receipts())
		}
		if string(got.Body) != `{"text":"Invoice INV-7 paid: 1500 EUR"}` {
			t.Fatalf("body %s", got.Body)
		}
		if got.Path != "/hooks/slack" || got.Header.Get("X-Slack-Channel") != "#billing" || got.Header.Get("X-Tenant") != "acme" {
			t.Fatalf("path %q, headers %v", got.Path, got.Header)
		}
		verify(t, slack.Secret, *got) // the signature covers the new body
		if got.Header.Get("webhook-id") == "" {
			t.Fatal("no webhook-id")
		}
		b.waitDelivery(slack.ID, ev, 30*time.Second, func(d deliveryOut) bool { return d.State == "delivered" })

		c := b.waitDelivery(cancel.ID, small, 30*time.Second, func(d deliveryOut) bool { return d.State != "pending" })
		if c.State != "failed" || !strings.Contains(c.LastError, "cancelled by the endpoint's transformation") {
			t.Fatalf("cancelled delivery: %+v", c)
		}
		b.waitDelivery(cancel.ID, ev, 30*time.Second, func(d deliveryOut) bool { return d.State == "delivered" })
		for _, r := range rc.receipts() {
			if strings.HasPrefix(r.Path, "/cancel") && strings.Contains(string(r.Body), "INV-8") {
				t.Fatal("the cancelled delivery was sent")
			}
		}
		th := b.waitDelivery(throws.ID, ev, 30*time.Second, func(d deliveryOut) bool { return d.State != "pending" })
		if th.State != "failed" || !strings.Contains(th.LastError, "transformation failed") || !strings.Contains(th.LastError, "transformation.js:2:") {
			t.Fatalf("throwing script's delivery: %+v; want failed with the error's line", th)
		}
		mv := b.waitDelivery(moves.ID, ev, 30*time.Second, func(d deliveryOut) bool { return d.State != "pending" })
		if mv.State != "failed" || !strings.Contains(mv.LastError, "changes the host") {
			t.Fatalf("host-moving script's delivery: %+v", mv)
		}
		lk := b.waitDelivery(leaks.ID, ev, 30*time.Second, func(d deliveryOut) bool { return d.State != "pending" })
		if lk.State != "failed" || strings.Contains(lk.LastError, "s3cr3t") || !strings.Contains(lk.LastError, "have ***") {
			t.Fatalf("a script throwing a header's value: %+v; want it redacted", lk)
		}
		for _, r := range rc.receipts() {
			if strings.HasPrefix(r.Path, "/throws") || strings.HasPrefix(r.Path, "/moves") || strings.HasPrefix(r.Path, "/leaks") {
				t.Fatalf("a failed transformation's delivery was sent: %s", r.Path)
			}
		}

		// Bad scripts: 422 with what to fix; nothing changes.
		for script, want := range map[string]string{
			`function handle(w) { return w }`:        "defines no handler",
			`function handler(w) { return w`:         "SyntaxError",
			"// " + strings.Repeat("x", 64<<10):      "at most 65536",
			`while (true) {} function handler(w) {}`: "stopped:", // the time limit, or the heap bound when the rest of hookd allocated meanwhile
			`throw new Error("not today")`:           "not today",
		} {
			var e apiError
			if got := b.do("PATCH", "/api/admin/webhooks/"+slack.ID, map[string]any{"transformation": script}, &e); got != 422 || !strings.Contains(e.Error.Message, want) {
				t.Errorf("transformation %.30q: %d %q; want 422 with %q", script, got, e.Error.Message, want)
			}
		}
		var now struct {
			Transformation string `json:"transformation"`
		}
		b.must(200, "GET", "/api/admin/webhooks/"+slack.ID, nil, &now)
		if now.Transformation != slackScript {
			t.Fatalf("a refused update changed the script: %q", now.Transformation)
		}
	})
}

// TestTransformationsOff: with the operator's switch, no script runs: a
// delivery to an endpoint with one fails (it is never sent untransformed)
// and a new script is refused; filters still apply.
func TestTransformationsOff(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.Backends()[0], setupOpts{mutate: func(c *app.Config) { c.NoTransformations = true }})
	rc := newReceiver(t)
	b.registerType("invoice.paid")
	var e apiError
	if got := b.do("POST", "/api/admin/webhooks", map[string]any{"url": rc.URL, "event_types": []string{"invoice.paid"}, "transformation": slackScript}, &e); got != 422 || !strings.Contains(e.Error.Message, "turned off") {
		t.Fatalf("create with a script while off: %d %q", got, e.Error.Message)
	}
	// One saved while they were on (written here as it was stored then).
	ep := b.endpoint(rc.URL, "invoice.paid")
	dbtest.Exec(t, b.h.DB, `UPDATE hookd_endpoints SET transform_code = '`+strings.ReplaceAll(slackScript, "'", "''")+`' WHERE id = '`+ep.ID+`'`)
	ev := b.publish("invoice.paid", `{"number": "INV-1", "amount": 1}`)
	d := b.waitDelivery(ep.ID, ev, 30*time.Second, func(d deliveryOut) bool { return d.State != "pending" })
	if d.State != "failed" || !strings.Contains(d.LastError, "turned off") || len(rc.receipts()) != 0 {
		t.Fatalf("delivery %+v, %d sent", d, len(rc.receipts()))
	}
}

// TestTryCode: webhooks.test_filter and webhooks.test_transformation run
// code on the type's example (or the data given) and answer the result or
// the error, sending nothing; bad code is a 422.
func TestTryCode(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.Backends()[0], setupOpts{mutate: patientScripts})
	rc := newReceiver(t)
	b.must(200, "PUT", "/api/admin/event_types/invoice.paid", map[string]any{"exposure": "webhook", "example": map[string]any{"number": "INV-1", "amount": 1500}}, nil)
	b.endpoint(rc.URL, "invoice.paid")

	var f struct {
		Passed bool   `json:"passed"`
		Error  string `json:"error"`
		Event  struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		} `json:"event"`
	}
	b.must(200, "POST", "/api/admin/webhooks/test_filter", map[string]any{"filter": "data.amount > 1000", "event_type": "invoice.paid"}, &f)
	if !f.Passed || f.Event.Type != "invoice.paid" || !strings.Contains(string(f.Event.Data), "INV-1") {
		t.Fatalf("example: %+v", f)
	}
	b.must(200, "POST", "/api/admin/webhooks/test_filter", map[string]any{"filter": "data.amount > 1000", "event_type": "invoice.paid", "data": map[string]any{"amount": 3}}, &f)
	if f.Passed {
		t.Fatalf("given data: %+v", f)
	}
	b.must(200, "POST", "/api/admin/webhooks/test_filter", map[string]any{"filter": "data.region == 'eu'"}, &f) // the first type with an example
	if f.Passed || !strings.Contains(f.Error, "region") {
		t.Fatalf("a missing field: %+v", f)
	}

	var x struct {
		Cancel  bool              `json:"cancel"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
		Payload json.RawMessage   `json:"payload"`
		Error   string            `json:"error"`
	}
	b.must(200, "POST", "/api/admin/webhooks/test_transformation", map[string]any{"transformation": slackScript, "event_type": "invoice.paid", "url": "https://hooks.example/T1"}, &x)
	if string(x.Payload) != `{"text":"Invoice INV-1 paid: 1500 EUR"}` || x.URL != "https://hooks.example/T1/slack?format=blocks" || x.Headers["X-Slack-Channel"] != "#billing" || x.Error != "" {
		t.Fatalf("try: %+v (%s)", x, x.Payload)
	}
	b.must(200, "POST", "/api/admin/webhooks/test_transformation", map[string]any{"transformation": "function handler(w) {\n  throw new Error('nope');\n}", "event_type": "invoice.paid"}, &x)
	if !strings.Contains(x.Error, "nope") || !strings.Contains(x.Error, "transformation.js:2:") {
		t.Fatalf("a throw: %+v", x)
	}
	b.must(200, "POST", "/api/admin/webhooks/test_transformation", map[string]any{"transformation": "function handler(w) { w.cancel = true; return w }"}, &x)
	if !x.Cancel {
		t.Fatalf("cancel: %+v", x)
	}
	for path, body := range map[string]map[string]any{
		"test_filter":         {"filter": "data.amount >"},
		"test_transformation": {"transformation": "function nope() {}"},
	} {
		var e apiError
		if got := b.do("POST", "/api/admin/webhooks/"+path, body, &e); got != 422 {
			t.Errorf("%s %v: %d %q; want 422", path, body, got, e.Error.Message)
		}
	}
	var e apiError
	if got := b.do("POST", "/api/admin/webhooks/test_filter", map[string]any{"filter": "true", "event_type": "not.offered"}, &e); got != 422 || !strings.Contains(e.Error.Message, "not offered") {
		t.Errorf("a type not offered: %d %q", got, e.Error.Message)
	}
	if n := len(rc.receipts()); n != 0 {
		t.Fatalf("trying sent %d requests", n)
	}
}

// TestHostileTransformations: scripts that loop forever, allocate without
// end, build a 100 MB string, double a string until stopped, or throw are
// stopped, each delivery failed with the reason; hookd stays healthy; and
// another owner's deliveries are not slowed past a bound generous enough
// for a loaded 2-core machine (the latencies are logged as figures).
func TestHostileTransformations(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.Backends()[0])
	rc := newReceiver(t)
	b.registerType("attack.go")
	hostile := map[string]string{
		"endless loop":    `function handler(w) { for (;;) {} }`,
		"memory bomb":     `function handler(w) { const a = []; while (true) a.push({n: a.length, s: "0123456789abcdef"}); }`,
		"100 MB string":   `function handler(w) { w.payload = "x".repeat(100 * 1024 * 1024); return w }`,
		"doubling string": `function handler(w) { let s = "x"; for (;;) s += s; }`,
		"throw":           `function handler(w) { throw new Error("hostile") }`,
	}
	wantErr := map[string]string{"endless loop": "time limit", "memory bomb": "stopped", "100 MB string": "over the transformation's bound",
		"doubling string": "stopped", "throw": "hostile"}
	// The heap watchdog watches the process's heap, not one script's (Go
	// cannot tell them apart): while a bomb beside it grows the heap, the
	// endless loop is stopped by that bound before its time limit (seen in
	// CI). Either stop is right here; internal/transform's tests hold each
	// cause alone.
	reason := func(name, lastError string) bool {
		return strings.Contains(lastError, wantErr[name]) ||
			name == "endless loop" && strings.Contains(lastError, transform.ErrHeapLimit.Error())
	}
	eps := map[string]string{}
	for name, script := range hostile {
		var ep endpointOut
		b.must(201, "POST", "/api/admin/webhooks", map[string]any{"url": rc.URL + "/hostile", "event_types": []string{"attack.go"}, "transformation": script}, &ep)
		eps[name] = ep.ID
	}
	// Another owner's endpoint, with no script.
	calmKey, err := b.h.CreateAPIKey(t.Context(), "calm", "admin")
	if err != nil {
		t.Fatal(err)
	}
	calm := *b
	calm.key = calmKey
	calm.registerType("calm.thing")
	calmRC := newReceiver(t)
	calm.endpoint(calmRC.URL, "calm.thing")
	latency := func(n int) (p50, worst time.Duration) {
		var ls []time.Duration
		for range n {
			start := time.Now()
			id := calm.publish("calm.thing", `{}`)
			ls = append(ls, calmRC.waitForEvent(t, id, 60*time.Second).At.Sub(start))
		}
		slices.Sort(ls)
		return ls[len(ls)/2], ls[len(ls)-1]
	}
	base50, baseMax := latency(10)

	const perEndpoint = 3
	var attack []string
	for range perEndpoint {
		attack = append(attack, b.publish("attack.go", `{"n": 1}`))
	}
	under50, underMax := latency(10)
	t.Logf("another owner's delivery latency: before the attack p50 %v, max %v; during it p50 %v, max %v (%d scripts × %d events)",
		base50, baseMax, under50, underMax, len(hostile), perEndpoint)
	if bound := 5*time.Second + 2*baseMax; underMax > bound {
		t.Errorf("another owner's deliveries took up to %v during the attack; want under %v (5 s + twice the worst before it)", underMax, bound)
	}
	// The first event's delivery to each hostile endpoint is due at once
	// and fails with the reason. The others too, unless their fanout came
	// after that failure: the endpoint is failing then, and they wait out
	// its cooldown (5 min) unsent.
	// A run the watchdog stopped (time limit, heap bound) is retried on
	// the profile's schedule: pending again, with the reason recorded.
	for name, id := range eps {
		d := b.waitDelivery(id, attack[0], 120*time.Second, func(d deliveryOut) bool { return d.State != "pending" || d.LastError != "" })
		retried := d.State == "pending" && strings.Contains(d.LastError, "stopped:")
		if !retried && d.State != "failed" || !reason(name, d.LastError) {
			t.Errorf("%s: delivery %+v; want failed with %q (or, stopped by the watchdog, pending to be retried)", name, d, wantErr[name])
		}
		if name == "endless loop" && !retried {
			t.Errorf("endless loop: delivery %+v; want it pending, to be retried after the watchdog stopped it", d)
		}
		for _, ev := range attack[1:] {
			d := b.waitDelivery(id, ev, 120*time.Second, func(d deliveryOut) bool {
				return d.State != "pending" || d.Attempts == 0 && d.NextAttemptAt != nil && d.NextAttemptAt.After(time.Now().Add(time.Minute)) ||
					strings.Contains(d.LastError, "stopped:") // stopped by the watchdog: retried
			})
			if d.State == "failed" && !reason(name, d.LastError) || d.State == "delivered" {
				t.Errorf("%s: delivery %+v; want failed with %q, or waiting out the cooldown", name, d, wantErr[name])
			}
		}
	}
	if n := len(rc.receipts()); n != 0 {
		t.Fatalf("hostile endpoints got %d requests", n)
	}
	resp, err := http.Get(b.api.URL + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz after the attack: %v %v", resp, err)
	}
	resp.Body.Close()
	after50, _ := latency(3)
	t.Logf("after the attack: p50 %v", after50)
}
