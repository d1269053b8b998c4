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
	"strings"
	"sync/atomic"
	"time"

	"github.com/hookd/hookd/internal/endpoint"
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
	// Proxy, when set, is an HTTP proxy every delivery goes through with
	// CONNECT (see [ParseProxy]); the guard still judges the receiver.
	Proxy *neturl.URL
	// Now is the clock OAuth2 token lifetimes are counted on (nil:
	// time.Now).
	Now func() time.Time
}

// Client posts webhook deliveries. It is safe for concurrent use; create one
// and share it.
type Client struct {
	http      *http.Client
	transport *http.Transport
	policy    policy
	proxy     *neturl.URL
	timeout   time.Duration
	maxBody   int64
	userAgent string
	redirects int
	tokens    *tokenCache // oauth2_client_credentials (oauth2.go)
	tlsPool   *tlsPool    // a client per mtls certificate (mtls.go)
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
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &Client{
		policy:    newPolicy(cfg.Allow),
		proxy:     cfg.Proxy,
		timeout:   cfg.Timeout,
		maxBody:   cfg.MaxResponseBytes,
		userAgent: cfg.UserAgent,
		redirects: cfg.MaxRedirects,
	}
	c.http, c.transport = c.newHTTP(&tls.Config{MinVersion: tls.VersionTLS12})
	c.tokens = newTokenCache(c.http, cfg.Now, cfg.Timeout)
	c.tlsPool = newTLSPool(maxTLSTransports, c.newHTTP)
	return c
}

// newHTTP returns an HTTP client on a transport of its own with tlsCfg
// (client certificates differ per transport).
func (c *Client) newHTTP(tlsCfg *tls.Config) (*http.Client, *http.Transport) {
	t := newTransport(c.policy, c.timeout, c.proxy, tlsCfg)
	return &http.Client{Transport: noReplay{t}, CheckRedirect: c.checkRedirect(c.redirects)}, t
}

// newTransport returns a keep-alive transport whose every connection goes
// through the guarded dialer, or through the guarded CONNECT tunnel of
// proxy. Transport.Proxy is nil on purpose: a proxy from the environment,
// or net/http's own CONNECT with the receiver's name, would have the
// proxy resolve and dial on our behalf, past the check.
func newTransport(p policy, timeout time.Duration, proxy *neturl.URL, tlsCfg *tls.Config) *http.Transport {
	step := min(5*time.Second, timeout)
	dial := newDialer(p, step).DialContext
	if proxy != nil {
		dial = newProxyDialer(proxy, p, step).DialContext
	}
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            dial,
		ForceAttemptHTTP2:      true,
		TLSClientConfig:        tlsCfg,
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
	return c.PostAuth(ctx, url, nil, header, body, release)
}

// PostAuth is PostReleasing that also authenticates hookd to the receiver
// with auth (nil: the signature alone): basic and bearer set
// Authorization; oauth2_client_credentials sends the process's cached
// token (auth errors match [ErrToken]) and, when the receiver answers 401,
// drops it, fetches a new one and sends once more; mtls presents the
// client certificate on a transport of its own.
func (c *Client) PostAuth(ctx context.Context, url string, auth *endpoint.Auth, header http.Header, body []byte, release func()) (Response, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	hc := c.http
	switch {
	case auth == nil:
	case auth.Type == endpoint.AuthMTLS:
		var err error
		if hc, err = c.tlsPool.client(auth); err != nil {
			return Response{}, fmt.Errorf("endpoint auth: %w", err)
		}
	case auth.Type == endpoint.AuthOAuth2:
		return c.postOAuth2(ctx, url, auth, header, body, release)
	default:
		header = header.Clone()
		if header == nil {
			header = http.Header{}
		}
		authorize(header, auth)
	}
	return c.send(ctx, hc, url, header, body, release)
}

// postOAuth2 sends with a bearer token from the cache, refreshed once on a
// 401. The body may go twice, so it is copied off the caller's pool.
func (c *Client) postOAuth2(ctx context.Context, url string, auth *endpoint.Auth, header http.Header, body []byte, release func()) (Response, error) {
	if release != nil {
		body = bytes.Clone(body)
		release()
	}
	withToken := func(token string) http.Header {
		h := header.Clone()
		if h == nil {
			h = http.Header{}
		}
		h.Set("Authorization", "Bearer "+token)
		return h
	}
	token, err := c.tokens.token(ctx, auth)
	if err != nil {
		return Response{}, err
	}
	resp, err := c.send(ctx, c.http, url, withToken(token), body, nil)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	c.tokens.refused(auth, token)
	if token, err = c.tokens.token(ctx, auth); err != nil {
		return Response{}, err
	}
	return c.send(ctx, c.http, url, withToken(token), body, nil)
}

// send posts body to url through hc; ctx carries the timeout.
func (c *Client) send(ctx context.Context, hc *http.Client, url string, header http.Header, body []byte, release func()) (Response, error) {
	var trace httptrace.ClientTrace
	// handshake is 1 once a TLS handshake has begun, 2 once one has
	// succeeded, so an error that came before any succeeded is told apart
	// (ErrHandshake): a receiver that never finishes the handshake, or
	// refuses it, is not one that took the request and hung. Only for
	// https: plain http pays nothing.
	var handshake atomic.Int32
	if len(url) > 6 && strings.EqualFold(url[:6], "https:") {
		trace.TLSHandshakeStart = func() { handshake.CompareAndSwap(0, 1) }
		trace.TLSHandshakeDone = func(_ tls.ConnectionState, err error) {
			if err == nil {
				handshake.Store(2)
			}
		}
	}
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
		trace.GotConn = func(httptrace.GotConnInfo) { writers.Add(1) }
		trace.WroteRequest = func(httptrace.WroteRequestInfo) { done() }
	}
	if trace.GotConn != nil || trace.TLSHandshakeStart != nil {
		ctx = httptrace.WithClientTrace(ctx, &trace)
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
	resp, err := hc.Do(req)
	if err != nil {
		if handshake.Load() == 1 {
			return Response{}, &handshakeError{err}
		}
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
	c.tlsPool.closeIdle()
}
