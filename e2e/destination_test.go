package e2e_test

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/app"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/destination/brokertest"
	"github.com/hookd/hookd/internal/hookdtest"
	"github.com/hookd/hookd/webhook"
)

// destSetup is setup with hookd's log kept for reading (the password must
// never be in it).
func destSetup(t *testing.T, backend dbtest.Backend) (*bundle, *hookdtest.Logs) {
	logs := hookdtest.NewLogs()
	b := setup(t, backend, setupOpts{mutate: func(c *app.Config) { c.Log = logs.Logger(slog.LevelDebug) }})
	return b, logs
}

// verifyMessage checks a broker message with the endpoint's secret, as a
// consumer does with the Go SDK.
func verifyMessage[V any](t *testing.T, secret string, headers map[string]V, body []byte) webhook.Event {
	t.Helper()
	v, err := webhook.NewVerifier(secret)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := webhook.VerifyMessage(v, headers, body)
	if err != nil {
		t.Fatalf("the consumer could not verify the message: %v", err)
	}
	return ev
}

// One event to an HTTP endpoint, a RabbitMQ queue and a NATS stream: each
// gets it exactly once, signed the same way, on both engines.
func TestDestinationsEndToEnd(t *testing.T) {
	brokertest.Need(t, "RabbitMQ", brokertest.RabbitAddr)
	brokertest.Need(t, "NATS", brokertest.NATSAddr)
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b, logs := destSetup(t, backend)
		b.registerType("order.paid")
		rc := newReceiver(t)
		queue, ch := brokertest.RabbitQueue(t)
		subject, stream := brokertest.NATSStream(t, brokertest.NATSAddr)
		const password = "guest" // the machine's RabbitMQ: guest/guest
		amqpURL := "amqp://guest:" + password + "@" + brokertest.RabbitAddr + "/?routing_key=" + queue
		httpEP := b.endpoint(rc.URL, "order.*")
		amqpEP := b.endpoint(amqpURL, "order.*")
		natsEP := b.endpoint("nats://"+brokertest.NATSAddr+"/"+subject, "order.*")
		if want := "amqp://guest:***@" + brokertest.RabbitAddr + "/?routing_key=" + queue; amqpEP.URL != want || b.getEndpoint(amqpEP.ID).URL != want {
			t.Fatalf("the answers show url %q / %q; want %q", amqpEP.URL, b.getEndpoint(amqpEP.ID).URL, want)
		}

		id := b.publish("order.paid", `{"published":true}`)
		r := rc.waitForEvent(t, id, 10*time.Second)
		if ev := verify(t, httpEP.Secret, r); ev.ID != id {
			t.Fatalf("HTTP got %s, want %s", ev.ID, id)
		}
		m := brokertest.Get(t, ch, queue, 10*time.Second)
		if ev := verifyMessage(t, amqpEP.Secret, map[string]any(m.Headers), m.Body); ev.ID != id {
			t.Fatalf("RabbitMQ got %s, want %s", ev.ID, id)
		}
		if string(m.Body) != string(r.Body) {
			t.Fatalf("RabbitMQ's body differs from the HTTP receiver's:\n%s\n%s", m.Body, r.Body)
		}
		for _, ep := range []string{httpEP.ID, amqpEP.ID, natsEP.ID} {
			b.waitDelivery(ep, id, 10*time.Second, func(d deliveryOut) bool { return d.State == "delivered" })
		}
		sm, err := stream.GetMsg(t.Context(), 1)
		if err != nil {
			t.Fatal(err)
		}
		if ev := verifyMessage(t, natsEP.Secret, map[string][]string(sm.Header), sm.Data); ev.ID != id {
			t.Fatalf("NATS got %s, want %s", ev.ID, id)
		}
		// Exactly once each, now that all three are settled.
		info, err := stream.Info(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if n, q := info.State.Msgs, brokertest.Count(t, ch, queue); n != 1 || q != 0 || len(rc.receipts()) != 1 {
			t.Fatalf("NATS holds %d, RabbitMQ %d more, HTTP got %d; want exactly one each", n, q, len(rc.receipts()))
		}
		if strings.Contains(logs.String(), "guest:"+password+"@") {
			t.Fatal("the log shows the RabbitMQ url with its password")
		}
	})
}

// A bad destination url answers 422 naming the part to fix, never
// repeating the password, and creates nothing.
func TestDestinationBadInput(t *testing.T) {
	b := setup(t, dbtest.Backends()[0])
	b.registerType("order.paid")
	for url, field := range map[string]string{
		"amqp://guest:pw-secret-9@127.0.0.1:5672/":              "routing_key",
		"nats://127.0.0.1:4222/":                                "subject",
		"redis://127.0.0.1:6379/0":                              "stream",
		"redis://127.0.0.1:6379/0?stream=s&maxlen=lots":         "maxlen",
		"amqp://guest:pw-secret-9@10.1.2.3:5672/?routing_key=q": "host",
	} {
		var raw json.RawMessage
		if got := b.do("POST", "/api/admin/webhooks", map[string]any{"url": url, "event_types": []string{"order.*"}}, &raw); got != 422 {
			t.Fatalf("create with %s: %d, want 422: %s", url, got, raw)
		}
		if !strings.Contains(string(raw), field) || strings.Contains(string(raw), "pw-secret-9") {
			t.Fatalf("create with %s answered %s: want it to name %q and not show the password", url, raw, field)
		}
	}
	var list struct {
		Data []endpointOut `json:"data"`
	}
	b.must(200, "GET", "/api/admin/webhooks", nil, &list)
	if len(list.Data) != 0 {
		t.Fatalf("%d endpoints after refused creates, want 0", len(list.Data))
	}
}

// A missing queue is a permanent refusal: the standard profile discards
// it at once, as a 404 (recorded with that status).
func TestDestinationMissingQueue(t *testing.T) {
	brokertest.Need(t, "RabbitMQ", brokertest.RabbitAddr)
	b := setup(t, dbtest.Backends()[0])
	b.registerType("order.paid")
	ep := b.endpoint("amqp://guest:guest@"+brokertest.RabbitAddr+"/?routing_key=hookd-no-such-queue", "order.*")
	id := b.publish("order.paid", `{"published":true}`)
	d := b.waitDelivery(ep.ID, id, 10*time.Second, func(d deliveryOut) bool { return d.State == "failed" })
	if d.LastStatus != 404 || d.Attempts != 1 || !strings.Contains(d.LastError, "unroutable") {
		t.Fatalf("delivery %+v: want failed after 1 attempt, status 404, unroutable", d)
	}
}

// An unreachable broker is retried on the profile's schedule and the
// message delivered once it is back; the password can be kept (given
// back as ***) or replaced by update.
func TestDestinationBrokerBack(t *testing.T) {
	queue, ch := brokertest.RabbitQueue(t)
	px := brokertest.NewProxy(t, brokertest.RabbitAddr)
	b, logs := destSetup(t, dbtest.Backends()[0])
	b.registerType("order.paid")
	ep := b.endpoint("amqp://guest:guest@"+px.Addr+"/?routing_key="+queue, "order.*")
	px.Stop()
	id := b.publish("order.paid", `{"published":true}`)
	d := b.waitDelivery(ep.ID, id, 10*time.Second, func(d deliveryOut) bool { return d.Attempts == 1 })
	if d.State != "pending" || !strings.Contains(d.LastError, "connection failed") {
		t.Fatalf("delivery %+v: want pending after a failed connection", d)
	}
	if st := b.getEndpoint(ep.ID).State; st != "failing" {
		t.Fatalf("endpoint state %q after a failed send, want failing", st)
	}
	px.Start()
	b.must(202, "POST", "/api/admin/webhooks/"+ep.ID+"/retry_now", nil, nil)
	b.waitDelivery(ep.ID, id, 10*time.Second, func(d deliveryOut) bool { return d.State == "delivered" })
	m := brokertest.Get(t, ch, queue, 5*time.Second)
	verifyMessage(t, ep.Secret, map[string]any(m.Headers), m.Body)
	if st := b.getEndpoint(ep.ID).State; st != "enabled" {
		t.Fatalf("endpoint state %q after the broker came back, want enabled", st)
	}

	// Update, the password given back masked: kept.
	masked := "amqp://guest:***@" + px.Addr + "/?routing_key=" + queue
	b.must(200, "PATCH", "/api/admin/webhooks/"+ep.ID, map[string]any{"url": masked}, nil)
	id2 := b.publish("order.paid", `{"published":true}`)
	b.waitDelivery(ep.ID, id2, 10*time.Second, func(d deliveryOut) bool { return d.State == "delivered" })
	brokertest.Get(t, ch, queue, 5*time.Second)
	// send_test goes to the queue like any delivery.
	var sent struct {
		EventID string `json:"event_id"`
	}
	b.must(202, "POST", "/api/admin/webhooks/"+ep.ID+"/send_test", nil, &sent)
	tm := brokertest.Get(t, ch, queue, 10*time.Second)
	if ev := verifyMessage(t, ep.Secret, map[string]any(tm.Headers), tm.Body); ev.ID != sent.EventID || ev.Type != "webhook.test" {
		t.Fatalf("the queue got %s (%s), want the test event %s", ev.ID, ev.Type, sent.EventID)
	}
	// Replaced by a wrong one: refused as 403, discarded.
	b.must(200, "PATCH", "/api/admin/webhooks/"+ep.ID, map[string]any{"url": "amqp://guest:not-the-pw-77@" + px.Addr + "/?routing_key=" + queue}, nil)
	id3 := b.publish("order.paid", `{"published":true}`)
	d = b.waitDelivery(ep.ID, id3, 10*time.Second, func(d deliveryOut) bool { return d.State == "failed" })
	if d.LastStatus != 403 {
		t.Fatalf("delivery %+v: want failed as 403", d)
	}
	if got := b.getEndpoint(ep.ID).URL; got != masked {
		t.Fatalf("url shown %q, want %q", got, masked)
	}
	if strings.Contains(logs.String(), "not-the-pw-77") || strings.Contains(logs.String(), "guest:guest@") {
		t.Fatal("the log shows a password")
	}
}
