package destination_test

import (
	"context"
	"net/http"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/destination"
	"github.com/hookd/hookd/webhook"
)

// loopback is the allow list the tests' brokers need.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

func newPool(t *testing.T, cfg destination.Config) *destination.Pool {
	t.Helper()
	if cfg.Allow == nil {
		cfg.Allow = loopback
	}
	cfg.DialTimeout = 3 * time.Second
	p := destination.New(cfg)
	t.Cleanup(p.Close)
	return p
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// testSecret signs the tests' messages as the standard profile does.
const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// signed is a message signed with testSecret, as attempt builds it.
func signed(t *testing.T, eventID string) destination.Message {
	t.Helper()
	body := []byte(`{"id":"` + eventID + `","type":"order.paid","subject":"orders/1","occurred_at":"2026-12-05T08:00:00Z","data":{}}`)
	s, err := webhook.NewSigner(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Now().Unix()
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Webhook-Id", eventID)
	h.Set("Webhook-Timestamp", strconv.FormatInt(ts, 10))
	h.Set("Webhook-Signature", s.Sign(eventID, ts, body))
	return destination.Message{Body: body, Headers: h, EventID: eventID, Subject: "orders/1", Type: "order.paid"}
}

// verify checks a consumed message with the Go SDK, as a receiver does.
func verify[V any](t *testing.T, headers map[string]V, body []byte, wantID string) {
	t.Helper()
	v, err := webhook.NewVerifier(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := webhook.VerifyMessage(v, headers, body)
	if err != nil {
		t.Fatalf("the consumer could not verify the message: %v (headers %v)", err, headers)
	}
	if ev.ID != wantID {
		t.Fatalf("verified event %q, want %q", ev.ID, wantID)
	}
}

// wantRefused asserts err is a permanent refusal standing for status.
func wantRefused(t *testing.T, err error, status int) {
	t.Helper()
	r, ok := destination.AsRefused(err)
	if !ok {
		t.Fatalf("err = %v, want a refusal as HTTP %d", err, status)
	}
	if r.Status != status {
		t.Fatalf("refused as HTTP %d (%s), want %d", r.Status, r.Reason, status)
	}
}

// wantTransient asserts err is a failure that is retried: neither nil
// nor a refusal.
func wantTransient(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("the send succeeded; want a failure that is retried")
	}
	if r, ok := destination.AsRefused(err); ok {
		t.Fatalf("refused as HTTP %d (%s); want a failure that is retried", r.Status, r.Reason)
	}
}
