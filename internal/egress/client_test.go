package egress

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// receiver is a real HTTP server on a loopback address that counts hits.
type receiver struct {
	*httptest.Server
	hits atomic.Int64
}

// newReceiver starts a receiver on addr ("127.0.0.1:0", "127.0.0.2:0", ...).
func newReceiver(t *testing.T, addr string, h http.HandlerFunc) *receiver {
	t.Helper()
	r := &receiver{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.hits.Add(1)
		h(w, req)
	}))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	_ = srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	r.Server = srv
	return r
}

// port returns the receiver's port.
func (r *receiver) port(t *testing.T) string {
	t.Helper()
	u, err := url.Parse(r.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

func allowList(t *testing.T, s string) []netip.Prefix {
	t.Helper()
	p, err := ParseAllow(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func ok(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }

func TestPostBlocked(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, "127.0.0.1:0", ok)
	port := rcv.port(t)
	c := New(Config{}) // no allow-list; default 10 s timeout
	tests := []struct{ url, msg string }{
		{"http://127.0.0.1:" + port + "/", "loopback"},
		{"http://localhost:" + port + "/", "loopback"},
		{"http://0.0.0.0:" + port + "/", "unspecified"},
		{"http://[::1]:" + port + "/", "loopback"},
		{"http://[::ffff:127.0.0.1]:" + port + "/", "loopback"},
		{"http://[64:ff9b::7f00:1]:" + port + "/", "NAT64 form of 127.0.0.1"},
		// Unroutable: refused before connect, not timed out.
		{"http://169.254.169.254/latest/meta-data/", "metadata"},
		{"http://10.0.0.1/", "private"},
		{"http://[fd00::1]/", "unique local"},
		// Non-canonical numeric hosts: refused before dialing.
		{"http://2130706433:" + port + "/", "127.0.0.1"},
		{"http://0x7f000001:" + port + "/", "127.0.0.1"},
		{"http://0177.0.0.1:" + port + "/", "127.0.0.1"},
		{"http://127.1:" + port + "/", "127.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			t.Parallel()
			_, err := c.Post(t.Context(), tt.url, nil, []byte(`{}`))
			if !errors.Is(err, ErrBlocked) {
				t.Fatalf("Post(%s) = %v, want ErrBlocked", tt.url, err)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Post(%s) = %v, want a refusal, not a timeout", tt.url, err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Post(%s) = %q, want it to mention %q", tt.url, err, tt.msg)
			}
		})
	}
	t.Cleanup(func() {
		if n := rcv.hits.Load(); n != 0 {
			t.Errorf("receiver got %d requests, want 0", n)
		}
	})
}

// TestBlockedErrorSurvivesWrapping checks that the refusal raised in the
// dialer's control hook is still recognisable through net.OpError and
// url.Error, and tells the operator how to allow the address.
func TestBlockedErrorSurvivesWrapping(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, "127.0.0.1:0", ok)
	_, err := New(Config{}).Post(t.Context(), rcv.URL, nil, nil)

	var ue *url.Error
	if !errors.As(err, &ue) {
		t.Errorf("err %T is not a *url.Error", err)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "dial" {
		t.Errorf("err %v does not wrap a dial *net.OpError", err)
	}
	var be *BlockedError
	if !errors.As(err, &be) {
		t.Fatalf("err %v does not wrap a *BlockedError", err)
	}
	if be.Addr != "127.0.0.1" || !strings.Contains(be.Reason, "loopback") {
		t.Errorf("BlockedError = %+v, want 127.0.0.1 loopback", be)
	}
	for _, want := range []string{"--egress-allow", "HOOKD_EGRESS_ALLOW", "127.0.0.1/32"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestPostAllowedLoopback(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || string(b) != `{"id":"1"}` ||
			r.Header.Get("Webhook-Id") != "msg_1" || r.Header.Get("User-Agent") != DefaultUserAgent {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("X-Receiver", "yes")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, "thanks")
	})
	c := New(Config{Allow: allowList(t, "127.0.0.1/32")})
	header := http.Header{"Webhook-Id": {"msg_1"}}

	res, err := c.Post(t.Context(), rcv.URL+"/hooks", header, []byte(`{"id":"1"}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusCreated || res.Header.Get("X-Receiver") != "yes" || res.Duration <= 0 {
		t.Errorf("Post = %+v, want 201 with X-Receiver and a duration", res)
	}
	if header.Get("User-Agent") != "" {
		t.Error("Post modified the caller's header")
	}
}

func TestPostReusesConnection(t *testing.T) {
	t.Parallel()
	body := bytes.Repeat([]byte("y"), 60<<10) // under the cap: drained
	rcv := newReceiver(t, "127.0.0.1:0", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write(body)
	})
	c := New(Config{Allow: allowList(t, "127.0.0.1")})
	var reused []bool
	ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) { reused = append(reused, i.Reused) },
	})
	for range 2 {
		if _, err := c.Post(ctx, rcv.URL, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if len(reused) != 2 || !reused[1] {
		t.Errorf("connection reuse = %v, want second request on a reused connection", reused)
	}
}

func TestPostRedirectToLoopbackRefused(t *testing.T) {
	t.Parallel()
	target := newReceiver(t, "127.0.0.1:0", ok)
	port := target.port(t)
	tests := []struct{ location, msg string }{
		{target.URL + "/internal", "127.0.0.1: loopback"},
		{"http://localhost:" + port + "/", "loopback"},
		{"http://[::ffff:127.0.0.1]:" + port + "/", "loopback"},
		{"http://2130706433:" + port + "/", "non-canonical"},
		{"ftp://127.0.0.2/", "scheme"},
	}
	for _, tt := range tests {
		t.Run(tt.location, func(t *testing.T) {
			t.Parallel()
			front := newReceiver(t, "127.0.0.2:0", func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, tt.location, http.StatusTemporaryRedirect)
			})
			c := New(Config{Allow: allowList(t, "127.0.0.2/32")})
			_, err := c.Post(t.Context(), front.URL, nil, []byte(`{}`))
			if !errors.Is(err, ErrBlocked) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("Post = %v, want ErrBlocked mentioning %q", err, tt.msg)
			}
			if n := front.hits.Load(); n != 1 {
				t.Errorf("front got %d requests, want 1", n)
			}
		})
	}
	t.Cleanup(func() {
		if n := target.hits.Load(); n != 0 {
			t.Errorf("loopback target got %d requests, want 0", n)
		}
	})
}

func TestPostRedirectFollowedWhenAllowed(t *testing.T) {
	t.Parallel()
	target := newReceiver(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = w.Write(b) // 200 echo: proves the body followed the 307
	})
	front := newReceiver(t, "127.0.0.2:0", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
	})
	c := New(Config{Allow: allowList(t, "127.0.0.1,127.0.0.2")})
	res, err := c.Post(t.Context(), front.URL, nil, []byte(`{}`))
	if err != nil || res.StatusCode != http.StatusOK || target.hits.Load() != 1 {
		t.Fatalf("Post = %+v, %v (target hits %d), want 200 via redirect", res, err, target.hits.Load())
	}
}

func TestPostRedirectLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		max      int
		wantHits int64
	}{
		{max: 0, wantHits: DefaultMaxRedirects + 1},
		{max: 1, wantHits: 2},
		{max: -1, wantHits: 1},
	}
	for _, tt := range tests {
		t.Run("", func(t *testing.T) {
			t.Parallel()
			rcv := newReceiver(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "/again", http.StatusTemporaryRedirect)
			})
			c := New(Config{Allow: allowList(t, "127.0.0.1"), MaxRedirects: tt.max})
			res, err := c.Post(t.Context(), rcv.URL, nil, nil)
			if err != nil {
				t.Fatalf("Post = %v, want the redirect response", err)
			}
			if res.StatusCode != http.StatusTemporaryRedirect || res.Header.Get("Location") != "/again" {
				t.Errorf("Post = %+v, want 307 to /again", res)
			}
			if n := rcv.hits.Load(); n != tt.wantHits {
				t.Errorf("MaxRedirects %d: %d requests, want %d", tt.max, n, tt.wantHits)
			}
		})
	}
}

func TestPostBodyCapped(t *testing.T) {
	t.Parallel()
	stopped := make(chan int64, 1)
	rcv := newReceiver(t, "127.0.0.1:0", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Receiver", "big")
		w.WriteHeader(http.StatusAccepted)
		chunk := bytes.Repeat([]byte("x"), 16<<10)
		var sent int64
		for { // an endless body: only the client hanging up ends it
			n, err := w.Write(chunk)
			sent += int64(n)
			if err != nil {
				stopped <- sent
				return
			}
			w.(http.Flusher).Flush()
		}
	})
	c := New(Config{Allow: allowList(t, "127.0.0.1")})
	read := countReads(c)
	began := time.Now()
	res, err := c.Post(t.Context(), rcv.URL, nil, nil)
	took := time.Since(began)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusAccepted || res.Header.Get("X-Receiver") != "big" {
		t.Errorf("Post = %+v, want 202 with X-Receiver", res)
	}
	if res.Unfinished != nil {
		t.Errorf("Unfinished = %v: a body read to the cap is an answer read whole", res.Unfinished)
	}
	if sent := <-stopped; sent <= DefaultMaxResponseBytes {
		t.Errorf("receiver stopped after %d bytes, want more than the cap", sent)
	}
	// The cap is 64 KiB, and it is what ends the read: the client took in
	// the cap and no more than its headers and one buffer fill beyond it
	// (a removed or raised cap reads on), and it hung up at once instead of
	// reading until the 10 s timeout.
	if DefaultMaxResponseBytes != 64<<10 {
		t.Errorf("DefaultMaxResponseBytes = %d, want 64 KiB", DefaultMaxResponseBytes)
	}
	const slack = 8 << 10 // status line, headers, chunk framing, bufio's 4 KiB
	if n := read.Load(); n < 64<<10 || n > 64<<10+slack {
		t.Errorf("client read %d bytes from the connection, want 64 KiB to 64 KiB + %d", n, slack)
	}
	if took > DefaultTimeout/2 {
		t.Errorf("Post took %v: the read ran towards the %v timeout instead of stopping at the cap", took, DefaultTimeout)
	}
}

// countReads makes every connection c dials count the bytes read from it.
func countReads(c *Client) *atomic.Int64 {
	var n atomic.Int64
	dial := c.transport.DialContext
	c.transport.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: conn, read: &n}, nil
	}
	return &n
}

type countingConn struct {
	net.Conn
	read *atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

func TestPostTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	rcv := newReceiver(t, "127.0.0.1:0", func(http.ResponseWriter, *http.Request) { <-release })
	t.Cleanup(func() { close(release) }) // runs before the server's Close
	c := New(Config{Allow: allowList(t, "127.0.0.1"), Timeout: 50 * time.Millisecond})

	_, err := c.Post(t.Context(), rcv.URL, nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Post = %v, want context.DeadlineExceeded", err)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("Post = %v, want a net.Error with Timeout()", err)
	}
	if errors.Is(err, ErrBlocked) {
		t.Errorf("Post = %v, a timeout must not look blocked", err)
	}
}

func TestPostSlowBodyKeepsStatus(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	rcv := newReceiver(t, "127.0.0.1:0", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
		<-release
	})
	t.Cleanup(func() { close(release) })
	c := New(Config{Allow: allowList(t, "127.0.0.1"), Timeout: 50 * time.Millisecond})

	res, err := c.Post(t.Context(), rcv.URL, nil, nil)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("Post = %+v, %v, want 200: the status arrived before the body stalled", res, err)
	}
	// The answer was not read to its end: the caller is told, as a timeout.
	if !errors.Is(res.Unfinished, context.DeadlineExceeded) {
		t.Fatalf("Unfinished = %v, want the deadline", res.Unfinished)
	}
}

// TestPostBodyCutShort: a body that ends before its Content-Length (the
// receiver hung up mid-answer) is reported unfinished, not as the
// deadline.
func TestPostBodyCutShort(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, "127.0.0.1:0", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	})
	c := New(Config{Allow: allowList(t, "127.0.0.1")})
	res, err := c.Post(t.Context(), rcv.URL, nil, nil)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("Post = %+v, %v, want 200", res, err)
	}
	if res.Unfinished == nil || errors.Is(res.Unfinished, context.DeadlineExceeded) {
		t.Fatalf("Unfinished = %v, want a broken read that is not the deadline", res.Unfinished)
	}
}

// TestPostNeverReplays: the receiver reads a request on a kept-alive
// connection and hangs up without answering. net/http's transport sends
// such a request again on a new connection when it deems it replayable,
// which it does for a POST with an Idempotency-Key or X-Idempotency-Key
// header. The receiver must get it once: hookd's retries are River's.
func TestPostNeverReplays(t *testing.T) {
	t.Parallel()
	for _, header := range []string{"", "Idempotency-Key", "X-Idempotency-Key"} {
		t.Run("header "+header, func(t *testing.T) {
			t.Parallel()
			var got atomic.Int64
			rcv := newReceiver(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.ReadAll(r.Body)
				if got.Add(1) == 1 {
					w.WriteHeader(http.StatusNoContent) // the first: answered, the connection kept
					return
				}
				conn, _, err := http.NewResponseController(w).Hijack()
				if err != nil {
					t.Errorf("hijack: %v", err)
					return
				}
				_ = conn.Close() // every later one: read, then hung up on
			})
			c := New(Config{Allow: allowList(t, "127.0.0.1")})
			h := http.Header{}
			if header != "" {
				h.Set(header, "order-1")
			}
			var reused []bool
			ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{
				GotConn: func(i httptrace.GotConnInfo) { reused = append(reused, i.Reused) },
			})
			if _, err := c.Post(ctx, rcv.URL, h, []byte(`{"n":1}`)); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Post(ctx, rcv.URL, h, []byte(`{"n":2}`)); err == nil {
				t.Fatal("Post of a request the receiver hung up on succeeded")
			}
			if len(reused) < 2 || !reused[1] {
				t.Fatalf("connections %v: the second request must go on the kept-alive one", reused)
			}
			if n := got.Load(); n != 2 {
				t.Fatalf("receiver got %d requests, want 2: the transport sent the second again by itself", n)
			}
		})
	}
}

func TestPostInvalidURL(t *testing.T) {
	t.Parallel()
	c := New(Config{})
	for _, u := range []string{"ftp://example.com/", "/relative", "http://user:pw@example.com/", "http://[::1/", "http://ex ample.com/"} {
		if _, err := c.Post(t.Context(), u, nil, nil); !errors.Is(err, ErrInvalidURL) {
			t.Errorf("Post(%q) = %v, want ErrInvalidURL", u, err)
		}
	}
}

// released returns a release func and a channel closed on its first call;
// a second call fails the test.
func released(t *testing.T) (func(), <-chan struct{}) {
	t.Helper()
	done := make(chan struct{})
	var calls atomic.Int32
	return func() {
		if calls.Add(1) > 1 {
			t.Error("release called more than once")
			return
		}
		close(done)
	}, done
}

func waitReleased(t *testing.T, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the pooled body was never released")
	}
}

// A pooled buffer rewritten after each release carries each request's own
// bytes: the client reads none of it after release.
func TestPostReleasingReusesBuffer(t *testing.T) {
	t.Parallel()
	var got []string
	rcv := newReceiver(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, string(b)) // one request at a time
		w.WriteHeader(http.StatusNoContent)
	})
	c := New(Config{Allow: allowList(t, "127.0.0.1")})
	buf := make([]byte, 0, 64)
	var want []string
	for i := range 20 {
		buf = append(buf[:0], `{"n":`...)
		buf = append(buf, byte('a'+i), '}')
		want = append(want, string(buf))
		release, done := released(t)
		res, err := c.PostReleasing(t.Context(), rcv.URL, nil, buf, release)
		if err != nil || res.StatusCode != http.StatusNoContent {
			t.Fatalf("PostReleasing = %+v, %v", res, err)
		}
		waitReleased(t, done)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("receiver got %v, want %v", got, want)
	}
}

// A 307 makes a second reader of the body; release waits for both.
func TestPostReleasingAcrossRedirect(t *testing.T) {
	t.Parallel()
	target := newReceiver(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = w.Write(b)
	})
	front := newReceiver(t, "127.0.0.2:0", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
	})
	c := New(Config{Allow: allowList(t, "127.0.0.1,127.0.0.2")})
	release, done := released(t)
	res, err := c.PostReleasing(t.Context(), front.URL, nil, []byte(`{"x":1}`), release)
	if err != nil || res.StatusCode != http.StatusOK || target.hits.Load() != 1 {
		t.Fatalf("PostReleasing = %+v, %v (target hits %d), want 200 via redirect", res, err, target.hits.Load())
	}
	waitReleased(t, done)
}

// A receiver that answers without reading a large body: the transport may
// still be writing when the response is back; release comes when it stops.
func TestPostReleasingEarlyAnswer(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, "127.0.0.1:0", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusAccepted)
	})
	c := New(Config{Allow: allowList(t, "127.0.0.1")})
	release, done := released(t)
	res, err := c.PostReleasing(t.Context(), rcv.URL, nil, bytes.Repeat([]byte("z"), 4<<20), release)
	if err == nil && res.StatusCode != http.StatusAccepted {
		t.Fatalf("PostReleasing = %+v, want 202", res)
	}
	waitReleased(t, done)
}

func TestPostReleasingBadURL(t *testing.T) {
	t.Parallel()
	release, done := released(t)
	_, err := New(Config{}).PostReleasing(t.Context(), "http://[::1", nil, []byte(`{}`), release)
	if !errors.Is(err, ErrInvalidURL) {
		t.Fatalf("PostReleasing = %v, want ErrInvalidURL", err)
	}
	waitReleased(t, done)
}
