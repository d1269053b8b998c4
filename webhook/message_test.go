package webhook_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/hookd/hookd/webhook"
)

// Headers in brokers' shapes: an AMQP table (any), NATS (string lists),
// Kafka (bytes).
func TestVerifyMessage(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"id":"evt_1","type":"order.paid","subject":"orders/1","occurred_at":"2026-12-05T08:00:00Z","data":{}}`)
	s, _ := webhook.NewSigner(secret)
	ts := time.Now().Unix()
	sig := s.Sign("evt_1", ts, body)
	v, _ := webhook.NewVerifier(secret)
	amqp := map[string]any{"webhook-id": "evt_1", "webhook-timestamp": strconv.FormatInt(ts, 10), "webhook-signature": sig, "x-count": 3}
	nats := map[string][]string{"Webhook-Id": {"evt_1"}, "Webhook-Timestamp": {strconv.FormatInt(ts, 10)}, "Webhook-Signature": {sig}}
	kafka := map[string][]byte{"webhook-id": []byte("evt_1"), "webhook-timestamp": []byte(strconv.FormatInt(ts, 10)), "webhook-signature": []byte(sig)}
	for name, check := range map[string]func([]byte) (webhook.Event, error){
		"amqp":  func(b []byte) (webhook.Event, error) { return webhook.VerifyMessage(v, amqp, b) },
		"nats":  func(b []byte) (webhook.Event, error) { return webhook.VerifyMessage(v, nats, b) },
		"kafka": func(b []byte) (webhook.Event, error) { return webhook.VerifyMessage(v, kafka, b) },
	} {
		ev, err := check(body)
		if err != nil || ev.ID != "evt_1" {
			t.Fatalf("%s: %+v, %v", name, ev, err)
		}
		changed := append([]byte(nil), body...)
		changed[len(changed)-3] = ' '
		if _, err := check(changed); !errors.Is(err, webhook.ErrNoMatchingSignature) {
			t.Fatalf("%s: a changed body gave %v, want no matching signature", name, err)
		}
	}
}
