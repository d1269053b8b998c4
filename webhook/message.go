package webhook

import (
	"fmt"
	"net/http"
)

// MessageHeader turns a queued message's headers into an http.Header: the
// AMQP headers table, the NATS message headers, the fields of a Redis
// stream entry or the Kafka record headers of a delivery that hookd sent
// to a broker instead of an HTTP receiver. Names are matched without
// regard to case, as HTTP's are. Values that are not strings or bytes
// are skipped.
func MessageHeader[V any](headers map[string]V) http.Header {
	h := make(http.Header, len(headers))
	for name, value := range headers {
		switch v := any(value).(type) {
		case string:
			h.Set(name, v)
		case []byte:
			h.Set(name, string(v))
		case []string:
			if len(v) > 0 {
				h.Set(name, v[0])
			}
		case fmt.Stringer:
			h.Set(name, v.String())
		}
	}
	return h
}

// VerifyMessage verifies a message that hookd sent to a queue or stream:
// its body is the envelope an HTTP receiver would get and its headers
// carry the same signature (webhook-id, webhook-timestamp,
// webhook-signature, or X-Kwork-Signature). v is a *Verifier or a
// *KworkVerifier.
//
//	ev, err := webhook.VerifyMessage(v, delivery.Headers, delivery.Body) // amqp091.Delivery
func VerifyMessage[V any](v RequestVerifier, headers map[string]V, body []byte) (Event, error) {
	return v.Verify(MessageHeader(headers), body)
}
