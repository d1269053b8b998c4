// Package destination sends a delivery's message to a place that is not an
// HTTP receiver: a RabbitMQ exchange, a NATS JetStream subject, a Redis
// stream, a Kafka topic, an Amazon SQS queue, a Google Pub/Sub topic. The
// endpoint's URL scheme chooses the system (Parse); the message is the
// same envelope bytes and signature headers an HTTP receiver gets, so
// every receiver verifies it the same way. A Pool holds one connection
// per destination, whatever the number of endpoints that name it.
//
// A send answers nil (the broker's ack: the 2xx), a *Refused (a permanent
// refusal: authentication, permission, a missing queue or stream), or any
// other error (unreachable, timeout, nack: retried). Refused carries a
// synthetic HTTP status, so each profile applies its own rule for a 4xx.
package destination

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Message is what a destination carries: the envelope and the headers of
// the attempt (signature included), plus what routes or dedupes it.
type Message struct {
	Body    []byte
	Headers http.Header
	// EventID dedupes (NATS Nats-Msg-Id, the AMQP message id), Subject
	// and Type describe the event.
	EventID, Subject, Type string
}

// Refused is a permanent refusal by the broker. Status is the HTTP status
// a profile judges it as: 403 for authentication and permission, 404 for
// a missing exchange, queue, stream or route, 409 for a key of another type.
type Refused struct {
	Status int
	Reason string
}

func (r *Refused) Error() string { return fmt.Sprintf("refused (as HTTP %d): %s", r.Status, r.Reason) }

// refused builds a Refused.
func refused(status int, format string, args ...any) *Refused {
	return &Refused{Status: status, Reason: fmt.Sprintf(format, args...)}
}

// AsRefused returns err's Refused, if it is one.
func AsRefused(err error) (*Refused, bool) {
	var r *Refused
	ok := errors.As(err, &r)
	return r, ok
}

// headerName is a header's name as a message carries it: lower case, as
// HTTP/2 writes it (webhook-id, webhook-signature, x-kwork-signature).
func headerName(name string) string { return strings.ToLower(name) }

// eachHeader calls f with every header of m in a message's form.
func eachHeader(h http.Header, f func(name, value string)) {
	for name, values := range h {
		if len(values) > 0 {
			f(headerName(name), values[0])
		}
	}
}
