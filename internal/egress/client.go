package egress

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	neturl "net/url"
	"sync/atomic"
	"time"
)

// Defaults applied by [New] to zero fields of [Config].
const (
	DefaultTimeout          = 10 * time.Second
	DefaultMaxResponseBytes = 64 << 10
	DefaultMaxRedirects     = 3
	DefaultUserAgent        = "hookd"
)

// maxHeaderBytes bounds the response headers kept in [Response.Header].
const maxHeaderBytes = 64 << 10

// Config configures a [Client]. The zero value is usable: every delivery is
// guarded, nothing is allowed beyond public addresses.
type Config struct {
	// Allow lists prefixes that may be dialed even though they are blocked
	// by default (local development, tests). Allow wins over the block
	// list. See [ParseAllow].
	Allow []netip.Prefix
	// Timeout bounds a whole Post: connect, TLS, redirects, headers and
	// reading the response body. Zero or negative means DefaultTimeout.
	Timeout time.Duration
	// MaxResponseBytes is how much of a response body is read (and
	// discarded). Zero or negative means DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// MaxRedirects is how many redirects are followed: zero means
	// DefaultMaxRedirects, negative means none.
	MaxRedirects int
	// UserAgent is sent unless the request header sets one. Empty means
	// DefaultUserAgent.
	UserAgent string
}

// Client posts webhook deliveries. It is safe for concurrent use; create one
// and share it.
type Client struct {
	http      *http.Client
	transport *http.Transport
	policy    policy
	timeout   time.Duration
	maxBody   int64
	userAgent string
}

// Response is what a delivery learns from the receiver. The body is never
// kept.
type Response struct {
	StatusCode int
	Header     http.Header
	// Duration is the time from sending the request to the end of reading
	// the (capped) body.
	Duration time.Duration
	// Unfinished says why the body was not read to its end (or to
	// MaxResponseBytes): the timeout came first (it then matches
	// context.DeadlineExceeded) or the connection broke. Nil when the
	// answer was read whole. The status had arrived; whether an
	// unfinished answer counts is the caller's rule.
	Unfinished error
}

// New returns a client for cfg, filling zero fields with the defaults.
func New(cfg Config) *Client {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	switch {
	case cfg.MaxRedirects == 0:
		cfg.MaxRedirects = DefaultMaxRedirects
	case cfg.MaxRedirects < 0:
		cfg.MaxRedirects = 0
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = DefaultUserAgent
	}
	c := &Client{
		policy:    newPolicy(cfg.Allow),
		timeout:   cfg.Timeout,
		maxBody:   cfg.MaxResponseBytes,
		userAgent: cfg.UserAgent,
	}
	c.transport = newTransport(c.policy, cfg.Timeout)
	c.http = &http.Client{
		Transport:     noReplay{c.transport},
		CheckRedirect: c.checkRedirect(cfg.MaxRedirects),
	}
	return c
}

// newTransport returns a keep-alive transport whose every connection goes
// through the guarded dialer. Proxy is nil on purpose: a proxy from the
// environment would dial on our behalf and bypass the check.
func newTransport(p policy, timeout time.Duration) *http.Transport {
	step := min(5*time.Second, timeout)
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            newDialer(p, step).DialContext,
		ForceAttemptHTTP2:      true,
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    step,
		ResponseHeaderTimeout:  timeout,
		ExpectContinueTimeout:  time.Second,
		IdleConnTimeout:        90 * time.Second,
		MaxIdleConns:           1024,
		MaxIdleConnsPerHost:    256,
		MaxResponseHeaderBytes: maxHeaderBytes,
		// The body is discarded: asking for gzip buys nothing.
		DisableCompression: true,
	}
}

// noReplay hands the transport each request without its GetBody, so the
// transport never sends a POST again by itself. net/http re-sends a
// request it deems replayable when a kept-alive connection breaks after
// the request was written, and it deems a POST replayable when it carries
// an Idempotency-Key or X-Idempotency-Key header (an endpoint's custom
// header may be either) and a GetBody to rewind the body with. The
// receiver may have acted on the first copy; retries are River's, counted
// and recorded. The client keeps GetBody on its own request: a 307 or 308
// redirect is a new request it makes, and still carries the body.
type noReplay struct{ t http.RoundTripper }

func (n noReplay) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.GetBody == nil {
		return n.t.RoundTrip(req)
	}
	once := *req // a shallow copy: RoundTrip must not change the caller's request
	once.GetBody = nil
	return n.t.RoundTrip(&once)
}

// checkRedirect follows at most limit redirects, to http or https only, and
// refuses non-canonical numeric hosts; each hop is dialed through the guard.
// Past the limit the redirect response itself is returned.
func (c *Client) checkRedirect(limit int) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) > limit {
			return http.ErrUseLastResponse
		}
		if s := req.URL.Scheme; s != "http" && s != "https" {
			return &BlockedError{Addr: req.URL.Redacted(), Reason: "redirect to a scheme other than http or https"}
		}
		if err := c.policy.checkHost(req.URL.Hostname(), false); err != nil {
			return fmt.Errorf("redirect: %w", err)
		}
		return nil
	}
}

// Post sends body to url with header (cloned; User-Agent added if absent)
// and returns the receiver's status and headers. The response body is read
// up to MaxResponseBytes and discarded; a failure while reading it is not
// an error, because the status has already arrived: it is reported in
// [Response.Unfinished]. Post never retries, nor lets the transport
// re-send (see noReplay).
//
// Errors wrap [ErrInvalidURL] for a malformed url and [ErrBlocked] when the
// egress policy refused a destination (including a redirect hop); a timeout
// matches context.DeadlineExceeded.
func (c *Client) Post(ctx context.Context, url string, header http.Header, body []byte) (Response, error) {
	return c.PostReleasing(ctx, url, header, body, nil)
}

// PostReleasing is Post for a body from a pool: release (if not nil) is
// called once nothing reads body any more, so the caller may reuse it.
// That is usually before PostReleasing returns, but the transport may
// still be writing the request when the response has arrived; release then
// comes when it has finished. It may never come (a connection lost before
// the write began); the buffer is then the garbage collector's.
func (c *Client) PostReleasing(ctx context.Context, url string, header http.Header, body []byte, release func()) (Response, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if release != nil {
		// The body stays a *bytes.Reader, which the transport writes
		// with the headers in one packet (it flushes the headers first for
		// any other reader type, and a process killed in between left a
		// truncated request). Who still reads it is counted with the
		// trace: each connection got for a request (a redirect, a retry)
		// will write it once; the last write done, and this call
		// returned, it is free.
		var writers atomic.Int32
		writers.Store(1) // this call's own count, dropped on return
		done := func() {
			if writers.Add(-1) == 0 {
				release()
			}
		}
		defer done()
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			GotConn:      func(httptrace.GotConnInfo) { writers.Add(1) },
			WroteRequest: func(httptrace.WroteRequestInfo) { done() },
		})
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Response{}, fmt.Errorf("%w: %w", ErrInvalidURL, err)
	}
	if err := checkShape(req.URL); err != nil {
		return Response{}, &neturl.Error{Op: "Post", URL: req.URL.Redacted(), Err: err}
	}
	if err := c.policy.checkHost(req.URL.Hostname(), false); err != nil {
		return Response{}, &neturl.Error{Op: "Post", URL: req.URL.Redacted(), Err: err}
	}
	if header != nil {
		req.Header = header.Clone()
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", c.userAgent)
	}

	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		return Response{}, err
	}
	// Drain up to the cap so a small body leaves the connection reusable;
	// closing a longer body drops the connection instead of reading on.
	_, unfinished := io.Copy(io.Discard, io.LimitReader(resp.Body, c.maxBody))
	_ = resp.Body.Close()
	return Response{
		StatusCode: resp.StatusCode,
		Header:     resp.Header,
		Duration:   time.Since(start),
		Unfinished: unfinished,
	}, nil
}

// CloseIdleConnections closes kept-alive connections that are not in use,
// e.g. on shutdown.
func (c *Client) CloseIdleConnections() {
	c.transport.CloseIdleConnections()
}
