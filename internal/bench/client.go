package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// client calls hookd's public HTTP API: the setup calls through net/http,
// the publishes through raw (or net/http, see publisher).
type client struct {
	base string
	http *http.Client
	raw  *rawClient
}

// newClient returns a client of the hookd at base (http://host:port) for
// conns concurrent callers.
func newClient(base string, conns int) *client {
	tr := &http.Transport{MaxIdleConns: 4 * conns, MaxIdleConnsPerHost: 4 * conns, IdleConnTimeout: time.Minute}
	return &client{
		base: base,
		http: &http.Client{Transport: tr, Timeout: 2 * time.Minute},
		raw:  newRawClient(strings.TrimPrefix(base, "http://")),
	}
}

// postFunc sends one publish request, body as JSON to path with key: nil
// when hookd answered want, a *statusError when it answered otherwise.
type postFunc func(ctx context.Context, path, key string, body []byte, want int) error

// publisher returns how the publishes are sent: through the raw client, or
// with netHTTP through net/http's, to show what the load generator's own
// CPU costs the run (Options.Generator).
func (c *client) publisher(netHTTP bool) postFunc {
	if netHTTP {
		return func(ctx context.Context, path, key string, body []byte, want int) error {
			return c.call(ctx, http.MethodPost, path, key, body, want, nil)
		}
	}
	return c.raw.post
}

// statusError is an answer other than the one expected.
type statusError struct {
	method, path string
	status       int
	body         string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s %s: %d %s", e.method, e.path, e.status, e.body)
}

// call sends in as JSON with key and decodes the answer into out (if not
// nil). body, when not nil, is sent as is instead of in.
func (c *client) call(ctx context.Context, method, path, key string, in any, want int, out any) error {
	var body []byte
	switch v := in.(type) {
	case nil:
	case []byte:
		body = v
	default:
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close() //nolint:errcheck // closing a response body reports nothing the caller can act on
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return &statusError{method: method, path: path, status: resp.StatusCode, body: string(bytes.TrimSpace(b))}
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
		}
	}
	return nil
}
