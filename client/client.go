// Package client calls hookd's publish and admin API from a remote producer:
// one typed method per op (generated from hookd's OpenAPI document by
// go run ./internal/clientgen), retries of 429 and 503 answers honouring
// Retry-After, an idempotency key on every publish, and errors that carry
// hookd's error code. It uses the standard library alone.
//
//	c := client.New("https://hookd.example.com", os.Getenv("HOOKD_KEY"))
//	ev, err := c.Events().Publish(ctx, client.EventsPublishInput{Type: "invoice.paid", Data: json.RawMessage(`{"id":"inv_1"}`)})
package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client calls one hookd with one API key. Its methods are safe for
// concurrent use; WithOwner returns a copy.
type Client struct {
	base  string
	key   string
	owner string
	// HTTP sends the requests (default http.DefaultClient).
	HTTP *http.Client
	// Retry bounds the retries of 429 and 503 answers.
	Retry Retry
}

// Retry is how a 429 or 503 answer is retried: after its Retry-After, or
// after Backoff doubled per retry when it has none. A Retry-After longer
// than MaxWait is not waited for: the error is returned, with RetryAfter
// set, for the caller to decide.
type Retry struct {
	Attempts int           // retries after the first try (default 3; -1 for none)
	Backoff  time.Duration // the first wait without Retry-After (default 500 ms)
	MaxWait  time.Duration // the longest wait (default 30 s)
}

// New returns a client of the hookd at baseURL (e.g. http://127.0.0.1:8080)
// calling with the API key key.
func New(baseURL, key string) *Client {
	return &Client{base: strings.TrimRight(baseURL, "/"), key: key, HTTP: http.DefaultClient}
}

// WithOwner returns a copy of c that acts on owner (the Hookd-Owner
// header): operator keys name the owner of every owner-scoped op.
func (c *Client) WithOwner(owner string) *Client {
	cp := *c
	cp.owner = owner
	return &cp
}

// Ptr returns a pointer to v, for an input's optional fields.
func Ptr[T any](v T) *T { return &v }

// request is one call of an op, built by the generated methods.
type request struct {
	op, method, path string
	query            url.Values
	header           http.Header
	body             any
}

func (r *request) setQuery(name string, v any) {
	if s := paramValue(v); s != "" {
		if r.query == nil {
			r.query = url.Values{}
		}
		r.query.Set(name, s)
	}
}

func (r *request) setHeader(name string, v any) {
	if s := paramValue(v); s != "" {
		if r.header == nil {
			r.header = http.Header{}
		}
		r.header.Set(name, s)
	}
}

// paramValue is a parameter as sent; "" (a zero value) is not sent.
func paramValue(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int64:
		if v == 0 {
			return ""
		}
		return strconv.FormatInt(v, 10)
	case time.Time:
		if v.IsZero() {
			return ""
		}
		return v.Format(time.RFC3339Nano)
	}
	return fmt.Sprint(v)
}

func pathValue(v any) string { return url.PathEscape(paramValue(v)) }

func (c *Client) do(ctx context.Context, r *request, out any) error {
	var body []byte
	if r.body != nil {
		var err error
		if body, err = json.Marshal(r.body); err != nil {
			return fmt.Errorf("%s: encode the request: %w", r.op, err)
		}
	}
	if r.op == "events.publish" && r.header.Get("Idempotency-Key") == "" {
		// A retried publish must not publish twice, even when the answer
		// lost was a proxy's 503 after hookd committed.
		r.setHeader("Idempotency-Key", newKey())
	}
	if r.op == "events.publish_batch" {
		var err error
		if body, err = keyBatch(body); err != nil {
			return fmt.Errorf("%s: key the events: %w", r.op, err)
		}
	}
	return c.send(ctx, r, body, out)
}

func (c *Client) send(ctx context.Context, r *request, body []byte, out any) error {
	policy := c.Retry.withDefaults()
	wait := policy.Backoff
	for attempt := 0; ; attempt++ {
		err := c.try(ctx, r, body, out)
		var e *Error
		if !errors.As(err, &e) || (e.Status != http.StatusTooManyRequests && e.Status != http.StatusServiceUnavailable) || attempt >= policy.Attempts {
			return err
		}
		d := wait
		if e.hasRetryAfter {
			d = e.RetryAfter
		}
		if d > policy.MaxWait {
			return err
		}
		wait *= 2
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s: %w (while waiting to retry after %v)", r.op, ctx.Err(), err)
		case <-t.C:
		}
	}
}

func (p Retry) withDefaults() Retry {
	if p.Attempts == 0 {
		p.Attempts = 3
	}
	if p.Backoff <= 0 {
		p.Backoff = 500 * time.Millisecond
	}
	if p.MaxWait <= 0 {
		p.MaxWait = 30 * time.Second
	}
	return p
}

func (c *Client) try(ctx context.Context, r *request, body []byte, out any) error {
	u := c.base + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, rd)
	if err != nil {
		return fmt.Errorf("%s: %w", r.op, err)
	}
	for k, vs := range r.header {
		req.Header[k] = vs
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.owner != "" {
		req.Header.Set("Hookd-Owner", c.owner)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", r.op, err)
	}
	defer resp.Body.Close() //nolint:errcheck // closing a read response body reports nothing the caller can act on
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s: read the answer: %w", r.op, err)
	}
	if resp.StatusCode >= 300 {
		return errorOf(r.op, resp, raw)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s: decode the answer: %w", r.op, err)
	}
	return nil
}

// keyBatch gives every event of a publish_batch body without an
// idempotency_key one, so a retried batch publishes each event once.
func keyBatch(body []byte) ([]byte, error) {
	var b struct {
		Events []map[string]json.RawMessage `json:"events"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, err
	}
	for _, ev := range b.Events {
		if _, ok := ev["idempotency_key"]; !ok {
			ev["idempotency_key"], _ = json.Marshal(newKey())
		}
	}
	return json.Marshal(b)
}

// newKey is a random idempotency key.
func newKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return "idem_" + hex.EncodeToString(b[:])
}

// BaseURL is the hookd the client calls.
func (c *Client) BaseURL() string { return c.base }
