package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// tap is the loopback listener of a test's httptest.Server: it counts the
// connections the server accepted and keeps every byte the server wrote,
// so a test sees keep-alive reuse and the framing the server chose.
type tap struct {
	net.Listener
	mu    sync.Mutex
	conns int
	out   bytes.Buffer
}

// Accept counts the connection and taps its writes.
func (t *tap) Accept() (net.Conn, error) {
	c, err := t.Listener.Accept()
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.conns++
	t.mu.Unlock()
	return &tappedConn{Conn: c, tap: t}, nil
}

// accepted is how many connections the server accepted so far.
func (t *tap) accepted() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.conns
}

// written is everything the server wrote so far.
func (t *tap) written() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.out.String()
}

// tappedConn copies the server's writes into its tap.
type tappedConn struct {
	net.Conn
	tap *tap
}

// Write records b and sends it.
func (c *tappedConn) Write(b []byte) (int, error) {
	c.tap.mu.Lock()
	c.tap.out.Write(b)
	c.tap.mu.Unlock()
	return c.Conn.Write(b)
}

// serve starts h on a tapped loopback httptest.Server (idle: its
// IdleTimeout, 0 for none) and returns a rawClient of it.
func serve(t *testing.T, h http.Handler, idle time.Duration) (*rawClient, *tap) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tp := &tap{Listener: ln}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = tp
	srv.Config.IdleTimeout = idle
	srv.Start()
	t.Cleanup(srv.Close)
	return newRawClient(ln.Addr().String()), tp
}

// wantStatusError fails t unless err is a *statusError of a POST to path
// with status and body.
func wantStatusError(t *testing.T, err error, path string, status int, body string) {
	t.Helper()
	var se *statusError
	if !errors.As(err, &se) {
		t.Fatalf("POST %s: err = %v, want a *statusError %d", path, err, status)
	}
	if se.method != http.MethodPost || se.path != path || se.status != status || se.body != body {
		t.Fatalf("POST %s: statusError{%s %s %d %q}, want {POST %s %d %q}", path, se.method, se.path, se.status, se.body, path, status, body)
	}
}

// TestRawClientKeepAlive: sequential publishes share one connection, and
// the server receives each request as net/http's client would send it.
func TestRawClientKeepAlive(t *testing.T) {
	t.Parallel()
	c, tp := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		switch {
		case err != nil:
			http.Error(w, err.Error(), http.StatusBadRequest)
		case r.Method != http.MethodPost || r.URL.Path != "/api/v1/events" || r.Host != r.Context().Value(http.LocalAddrContextKey).(net.Addr).String():
			http.Error(w, fmt.Sprintf("request %s %s Host %s", r.Method, r.URL.Path, r.Host), http.StatusBadRequest)
		case r.Header.Get("Authorization") != "Bearer key_1" || r.Header.Get("Content-Type") != "application/json":
			http.Error(w, fmt.Sprintf("headers %v", r.Header), http.StatusBadRequest)
		case r.ContentLength != int64(len(body)) || !strings.HasPrefix(string(body), `{"seq":`):
			http.Error(w, fmt.Sprintf("body %d %q", r.ContentLength, body), http.StatusBadRequest)
		default:
			w.WriteHeader(http.StatusAccepted)
			_, _ = w.Write([]byte(`{"id":"evt_1"}`))
		}
	}), 0)
	for i := range 20 {
		if err := c.post(t.Context(), "/api/v1/events", "key_1", fmt.Appendf(nil, `{"seq":%d}`, i), http.StatusAccepted); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if n := tp.accepted(); n != 1 {
		t.Errorf("server accepted %d connections for 20 sequential requests, want 1", n)
	}
	if out := tp.written(); !strings.Contains(out, "Content-Length: 14\r\n") || strings.Contains(out, "chunked") {
		t.Errorf("the answers were not framed by Content-Length:\n%s", out)
	}
}

// TestRawClientChunked: answers the server chunks (it flushes before the
// end) are decoded whole, trailers included, and leave the connection
// ready for the next request.
func TestRawClientChunked(t *testing.T) {
	t.Parallel()
	parts := []string{"first ", strings.Repeat("x", 10000), " last"}
	c, tp := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Parts")
		w.WriteHeader(map[string]int{"/ok": http.StatusAccepted, "/fail": http.StatusInternalServerError}[r.URL.Path])
		for _, p := range parts {
			_, _ = io.WriteString(w, p)
			w.(http.Flusher).Flush()
		}
		w.Header().Set("X-Parts", fmt.Sprint(len(parts)))
	}), 0)
	for _, path := range []string{"/fail", "/ok", "/fail", "/ok"} {
		err := c.post(t.Context(), path, "k", []byte("{}"), http.StatusAccepted)
		if path == "/ok" {
			if err != nil {
				t.Fatalf("POST /ok: %v", err)
			}
			continue
		}
		wantStatusError(t, err, path, http.StatusInternalServerError, strings.Join(parts, ""))
	}
	out := tp.written()
	if strings.Count(out, "Transfer-Encoding: chunked\r\n") != 4 || !strings.Contains(out, "X-Parts: 3\r\n") {
		t.Errorf("the server did not chunk all 4 answers with a trailer:\n%.400s", out)
	}
	if n := tp.accepted(); n != 1 {
		t.Errorf("server accepted %d connections, want 1 (chunked answers keep it alive)", n)
	}
}

// TestRawClientStatusError: an answer other than the expected becomes a
// *statusError with its status and trimmed body, which sendBatch's retry
// reads, and the connection stays in use.
func TestRawClientStatusError(t *testing.T) {
	t.Parallel()
	c, tp := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/busy":
			http.Error(w, "  slow down  ", http.StatusTooManyRequests)
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}), 0)
	wantStatusError(t, c.post(t.Context(), "/busy", "k", nil, http.StatusAccepted), "/busy", http.StatusTooManyRequests, "slow down")
	wantStatusError(t, c.post(t.Context(), "/empty", "k", nil, http.StatusAccepted), "/empty", http.StatusNoContent, "")
	if err := c.post(t.Context(), "/ok", "k", nil, http.StatusAccepted); err != nil {
		t.Fatalf("POST /ok after the other answers: %v", err)
	}
	if n := tp.accepted(); n != 1 {
		t.Errorf("server accepted %d connections, want 1", n)
	}
}

// TestRawClientConnectionClose: after an answer with Connection: close the
// next request dials a new connection and succeeds.
func TestRawClientConnectionClose(t *testing.T) {
	t.Parallel()
	c, tp := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/close" {
			w.Header().Set("Connection", "close")
		}
		w.WriteHeader(http.StatusAccepted)
	}), 0)
	for i, path := range []string{"/close", "/ok", "/ok"} {
		if err := c.post(t.Context(), path, "k", []byte("{}"), http.StatusAccepted); err != nil {
			t.Fatalf("request %d (%s): %v", i, path, err)
		}
	}
	if n := tp.accepted(); n != 2 {
		t.Errorf("server accepted %d connections, want 2 (one closed after its answer, one kept)", n)
	}
}

// TestRawClientIdleServerClose: a connection idle longer than maxIdle is
// not reused, so a server that closed it while idle does not fail the next
// request; reusing it would.
func TestRawClientIdleServerClose(t *testing.T) {
	t.Parallel()
	c, tp := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
	}), 100*time.Millisecond)
	post := func() error { return c.post(t.Context(), "/ok", "k", nil, http.StatusAccepted) }
	c.maxIdle = time.Hour
	if err := post(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := post(); err == nil {
		t.Fatal("a request on a connection the server closed while idle succeeded; this test no longer shows why maxIdle exists")
	}
	c.maxIdle = 50 * time.Millisecond
	if err := post(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := post(); err != nil {
		t.Fatalf("request after the idle connection went stale: %v", err)
	}
	if n := tp.accepted(); n != 3 {
		t.Errorf("server accepted %d connections, want 3", n)
	}
}

// TestRawClientConcurrent: 32 goroutines share the client, each answer
// reaches the request it answers, and no more connections are open than
// requests were in flight.
func TestRawClientConcurrent(t *testing.T) {
	t.Parallel()
	var served atomic.Int64
	c, tp := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		body, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusTeapot)
		_, _ = w.Write(body)
	}), 0)
	const goroutines, each = 32, 50
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				body := fmt.Sprintf(`{"g":%d,"i":%d,"pad":%q}`, g, i, strings.Repeat("p", g*i))
				err := c.post(t.Context(), "/echo", "k", []byte(body), http.StatusAccepted)
				var se *statusError
				if !errors.As(err, &se) || se.status != http.StatusTeapot || se.body != body {
					errs <- fmt.Errorf("goroutine %d request %d: %v, want its own body back", g, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := served.Load(); n != goroutines*each {
		t.Errorf("server served %d requests, want %d", n, goroutines*each)
	}
	if n := tp.accepted(); n < 1 || n > goroutines {
		t.Errorf("server accepted %d connections for %d concurrent clients", n, goroutines)
	}
}

// TestRawClientContext: cancelling the context or reaching its deadline
// ends a request the server has not answered, and the client still works.
func TestRawClientContext(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	c, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hang" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		w.WriteHeader(http.StatusAccepted)
	}), 0)
	t.Cleanup(func() { close(release) })

	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	began := time.Now()
	if err := c.post(ctx, "/hang", "k", nil, http.StatusAccepted); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled request: err = %v, want context.Canceled", err)
	}
	ctx, cancel = context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	err := c.post(ctx, "/hang", "k", nil, http.StatusAccepted)
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("request past its deadline: err = %v, want a deadline error", err)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("the two requests took %v to give up, want about 100ms", d)
	}
	if err := c.post(t.Context(), "/ok", "k", nil, http.StatusAccepted); err != nil {
		t.Fatalf("request after the cancelled ones: %v", err)
	}
}

// TestReadAnswer: the answer parser on exact bytes, each successful case
// followed by a second answer that must read intact (the first consumed
// exactly its own bytes), and the malformed answers it must refuse.
func TestReadAnswer(t *testing.T) {
	t.Parallel()
	const next = "HTTP/1.1 204 No Content\r\n\r\n"
	good := []struct {
		name, in, body string
		status         int
		closing        bool
	}{
		{"length", "HTTP/1.1 202 Accepted\r\ncontent-length: 2\r\n\r\nok", "ok", 202, false},
		{"no reason", "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", "", 200, false},
		{"chunked", "HTTP/1.1 500 Oops\r\nTransfer-Encoding: Chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-T: 1\r\n\r\n", "hello world", 500, false},
		{"chunked over length", "HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n", "ab", 200, false},
		{"close", "HTTP/1.1 202 Accepted\r\nConnection: keep-alive, Close\r\nContent-Length: 1\r\n\r\nx", "x", 202, true},
		{"http/1.0", "HTTP/1.0 202 Accepted\r\nContent-Length: 1\r\n\r\ny", "y", 202, true},
		{"bare LF", "HTTP/1.1 202 Accepted\nContent-Length: 1\n\nz", "z", 202, false},
	}
	for _, g := range good {
		rc := &rawConn{br: bufio.NewReaderSize(strings.NewReader(g.in+next), 64)}
		status, body, err := rc.readAnswer()
		if err != nil || status != g.status || string(body) != g.body || rc.closing != g.closing {
			t.Errorf("%s: %d %q closing %v, %v; want %d %q closing %v", g.name, status, body, rc.closing, err, g.status, g.body, g.closing)
			continue
		}
		if status, _, err := rc.readAnswer(); err != nil || status != 204 {
			t.Errorf("%s: the answer after it read as %d, %v; want 204", g.name, status, err)
		}
	}
	bad := map[string]string{
		"no framing":      "HTTP/1.1 200 OK\r\n\r\nbody",
		"gzip":            "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
		"http/2":          "HTTP/2 200 OK\r\nContent-Length: 0\r\n\r\n",
		"status":          "HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n",
		"negative length": "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
		"two lengths":     "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
		"huge length":     "HTTP/1.1 200 OK\r\nContent-Length: 99999999\r\n\r\n",
		"short body":      "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab",
		"chunk no CRLF":   "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n0\r\n\r\n",
		"chunk size":      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"no last chunk":   "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n",
		"header":          "HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
		"informational":   "HTTP/1.1 100 Continue\r\n\r\n",
		"long line":       "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", 64) + "\r\nContent-Length: 0\r\n\r\n",
	}
	for name, in := range bad {
		rc := &rawConn{br: bufio.NewReaderSize(strings.NewReader(in), 64)}
		if status, body, err := rc.readAnswer(); err == nil {
			t.Errorf("%s: read as %d %q, want an error", name, status, body)
		}
	}
}

// TestRunNetHTTPClient: --generator net-http publishes through net/http and
// the run still completes (TestRun covers the raw client).
func TestRunNetHTTPClient(t *testing.T) {
	t.Parallel()
	res, err := Run(t.Context(), Options{DB: "sqlite", Events: 40, PublishOnly: true, BatchSize: 1, Publishers: 4, Generator: GeneratorNetHTTP})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() || res.PublishLatency.P50 <= 0 {
		t.Errorf("OK %v, publish p50 %v; want a correct run with publish times", res.OK(), res.PublishLatency.P50)
	}
}
