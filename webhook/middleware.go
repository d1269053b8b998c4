package webhook

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
)

// DefaultMaxBodyBytes caps the body Middleware reads when no
// WithMaxBodyBytes option is given.
const DefaultMaxBodyBytes = 1 << 20

// A RequestVerifier checks a request's headers and raw body and returns the
// event it carries. *Verifier (Standard Webhooks) and *KworkVerifier
// implement it.
type RequestVerifier interface {
	Verify(h http.Header, body []byte) (Event, error)
}

// A MiddlewareOption configures Middleware.
type MiddlewareOption func(*middleware)

// WithMaxBodyBytes caps how many body bytes Middleware reads (default 1 MiB);
// a larger body is answered 413.
func WithMaxBodyBytes(n int64) MiddlewareOption {
	return func(m *middleware) { m.maxBody = n }
}

// Middleware verifies every request with v before calling next. next sees
// the verified Event through EventFromContext and can read r.Body again.
// A request that fails verification is answered 401 with the reason as plain
// text (400 if the signature is valid but the body is not an event, 413 if
// the body is too large) and never reaches next.
func Middleware(v RequestVerifier, next http.Handler, opts ...MiddlewareOption) http.Handler {
	m := &middleware{verifier: v, next: next, maxBody: DefaultMaxBodyBytes}
	for _, opt := range opts {
		opt(m)
	}
	return m
}

type middleware struct {
	verifier RequestVerifier
	next     http.Handler
	maxBody  int64
}

func (m *middleware) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, m.maxBody))
	if err != nil {
		if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
			http.Error(w, "webhook: body larger than the receiver accepts", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "webhook: cannot read body", http.StatusBadRequest)
		return
	}
	ev, err := m.verifier.Verify(r.Header, body)
	if err != nil {
		status := http.StatusUnauthorized
		if errors.Is(err, ErrMalformedBody) {
			status = http.StatusBadRequest
		}
		http.Error(w, err.Error(), status)
		return
	}
	r = r.WithContext(NewContext(r.Context(), ev))
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	m.next.ServeHTTP(w, r)
}

type contextKey struct{}

// NewContext returns ctx carrying ev, as Middleware hands it to the next
// handler. Useful to test handlers without signing requests.
func NewContext(ctx context.Context, ev Event) context.Context {
	return context.WithValue(ctx, contextKey{}, ev)
}

// EventFromContext returns the Event Middleware verified for this request.
func EventFromContext(ctx context.Context) (Event, bool) {
	ev, ok := ctx.Value(contextKey{}).(Event)
	return ev, ok
}
