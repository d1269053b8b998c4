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
	"slices"
	"strconv"
	"sync"
	"time"
)

// rawClient sends the bench's publish requests over plain HTTP/1.1
// keep-alive connections, one per concurrent publisher. It exists because
// the load generator shares the cores it measures: net/http's client costs
// about as much CPU per request as hookd's own HTTP handling, this one
// renders each request into one reused buffer, writes it at once and
// parses only what an answer needs (status, framing, body).
type rawClient struct {
	// addr is the host:port dialled and sent as Host.
	addr   string
	dialer net.Dialer
	// maxIdle is how long a connection may sit idle and still be reused
	// (a server may close idle connections; a request on one it closed
	// would fail, and a POST must not be sent twice).
	maxIdle time.Duration

	mu sync.Mutex
	// idle connections, the most recently used last.
	idle []*rawConn
}

// rawConn is one keep-alive connection with the buffers its requests reuse.
type rawConn struct {
	conn net.Conn
	br   *bufio.Reader
	// req holds the rendered request, body the answer's body.
	req, body []byte
	// closing: the server said Connection: close (or spoke HTTP/1.0).
	closing   bool
	idleSince time.Time
}

const (
	// rawTimeout bounds a request whose context has no earlier deadline,
	// as the net/http client's Timeout does.
	rawTimeout = 2 * time.Minute
	// maxAnswer is the largest answer body read, as client.call reads.
	maxAnswer = 4 << 20
)

// newRawClient returns a client for the HTTP server at addr (host:port).
func newRawClient(addr string) *rawClient {
	return &rawClient{addr: addr, maxIdle: time.Minute}
}

// post sends body as JSON to path with the bearer key: nil when the server
// answered want, a *statusError with the answer's status and body
// otherwise. A connection that failed is closed, not reused.
func (c *rawClient) post(ctx context.Context, path, key string, body []byte, want int) error {
	rc, err := c.take(ctx)
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	rc.render(c.addr, path, key, body)
	status, answer, err := rc.roundTrip(ctx)
	if err != nil {
		rc.discard()
		return fmt.Errorf("POST %s: %w", path, err)
	}
	var se error
	if status != want {
		se = &statusError{method: http.MethodPost, path: path, status: status, body: string(bytes.TrimSpace(answer))}
	}
	c.put(rc)
	return se
}

// take returns an idle connection, or dials a new one when none is idle or
// the most recent has been idle too long (then all the others have too).
func (c *rawClient) take(ctx context.Context) (*rawConn, error) {
	c.mu.Lock()
	var stale []*rawConn
	if n := len(c.idle); n > 0 && time.Since(c.idle[n-1].idleSince) < c.maxIdle {
		rc := c.idle[n-1]
		c.idle = c.idle[:n-1]
		c.mu.Unlock()
		return rc, nil
	}
	stale, c.idle = c.idle, nil
	c.mu.Unlock()
	for _, rc := range stale {
		rc.discard()
	}
	conn, err := c.dialer.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return nil, fmt.Errorf("dial: %w", err)
	}
	return &rawConn{conn: conn, br: bufio.NewReaderSize(conn, 4096)}, nil
}

// put makes rc idle for the next request, or closes it when the server
// said it closes it.
func (c *rawClient) put(rc *rawConn) {
	if rc.closing {
		rc.discard()
		return
	}
	rc.idleSince = time.Now()
	c.mu.Lock()
	c.idle = append(c.idle, rc)
	c.mu.Unlock()
}

// discard closes a connection that will not be used again. Its close error
// says nothing a publish could act on: the request's outcome is already
// known.
func (rc *rawConn) discard() {
	_ = rc.conn.Close()
}

// render writes the POST of body to path with key into rc.req.
func (rc *rawConn) render(host, path, key string, body []byte) {
	b := append(rc.req[:0], "POST "...)
	b = append(b, path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = append(b, "\r\nAuthorization: Bearer "...)
	b = append(b, key...)
	b = append(b, "\r\nContent-Type: application/json\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\n\r\n"...)
	rc.req = append(b, body...)
}

// roundTrip writes rc.req and reads the answer: its status and body (valid
// until rc's next request). The deadline is ctx's, or rawTimeout from now
// if that is earlier; cancelling ctx closes the connection. After an error
// rc must be discarded.
func (rc *rawConn) roundTrip(ctx context.Context) (int, []byte, error) {
	deadline := time.Now().Add(rawTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := rc.conn.SetDeadline(deadline); err != nil {
		return 0, nil, fmt.Errorf("set deadline: %w", err)
	}
	stop := context.AfterFunc(ctx, rc.discard)
	status, body, err := rc.exchange()
	if !stop() {
		return 0, nil, fmt.Errorf("request cancelled: %w", context.Cause(ctx))
	}
	return status, body, err
}

// exchange writes the rendered request and reads its answer.
func (rc *rawConn) exchange() (int, []byte, error) {
	if _, err := rc.conn.Write(rc.req); err != nil {
		return 0, nil, fmt.Errorf("write request: %w", err)
	}
	status, body, err := rc.readAnswer()
	if err != nil {
		return 0, nil, fmt.Errorf("read answer: %w", err)
	}
	return status, body, nil
}

// framing is what an answer's headers say about its body and connection.
type framing struct {
	// length is Content-Length, -1 when absent.
	length  int
	chunked bool
	closing bool
}

// readAnswer reads one answer from rc.br: status line, headers and body.
func (rc *rawConn) readAnswer() (int, []byte, error) {
	line, err := readLine(rc.br)
	if err != nil {
		return 0, nil, err
	}
	status, http10, err := parseStatusLine(line)
	if err != nil {
		return 0, nil, err
	}
	f, err := readHeaders(rc.br)
	if err != nil {
		return 0, nil, err
	}
	rc.closing = f.closing || http10
	body, err := rc.readBody(status, f)
	return status, body, err
}

// readBody reads the body f frames into rc.body. 1xx answers are not
// expected (the request sends no Expect); 204 and 304 have no body.
func (rc *rawConn) readBody(status int, f framing) ([]byte, error) {
	switch {
	case status < 200:
		return nil, fmt.Errorf("informational answer %d not supported", status)
	case status == http.StatusNoContent || status == http.StatusNotModified:
		return rc.body[:0], nil
	case f.chunked:
		body, err := readChunked(rc.br, rc.body[:0])
		rc.body = body
		return body, err
	case f.length >= 0:
		rc.body = slices.Grow(rc.body[:0], f.length)[:f.length]
		if _, err := io.ReadFull(rc.br, rc.body); err != nil {
			return nil, fmt.Errorf("body: %w", err)
		}
		return rc.body, nil
	}
	return nil, errors.New("answer has neither Content-Length nor chunked Transfer-Encoding")
}

// readLine returns the next line without its CRLF (or LF), valid until the
// next read from br.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil, fmt.Errorf("line longer than %d bytes", br.Size())
	}
	if err != nil {
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// parseStatusLine reads "HTTP/1.x NNN reason": the status and whether the
// server speaks HTTP/1.0 (which closes the connection after the answer).
func parseStatusLine(line []byte) (status int, http10 bool, err error) {
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' || len(line) > 12 && line[12] != ' ' {
		return 0, false, fmt.Errorf("malformed status line %q", line)
	}
	for _, d := range line[9:12] {
		if d < '0' || d > '9' {
			return 0, false, fmt.Errorf("malformed status line %q", line)
		}
		status = status*10 + int(d-'0')
	}
	return status, line[7] == '0', nil
}

// readHeaders reads the header lines up to the blank one and returns the
// body's framing and whether the server closes the connection.
func readHeaders(br *bufio.Reader) (framing, error) {
	f := framing{length: -1}
	for {
		line, err := readLine(br)
		if err != nil {
			return f, fmt.Errorf("headers: %w", err)
		}
		if len(line) == 0 {
			return f, nil
		}
		if err := f.header(line); err != nil {
			return f, err
		}
	}
}

// header notes what one header line says about framing.
func (f *framing) header(line []byte) error {
	name, value, ok := bytes.Cut(line, []byte(":"))
	if !ok {
		return fmt.Errorf("malformed header line %q", line)
	}
	value = bytes.TrimSpace(value)
	switch {
	case bytes.EqualFold(name, []byte("Content-Length")):
		n, err := strconv.Atoi(string(value))
		if err != nil || n < 0 || f.length >= 0 && n != f.length {
			return fmt.Errorf("bad Content-Length %q", value)
		}
		if n > maxAnswer {
			return fmt.Errorf("answer of %d bytes exceeds %d", n, maxAnswer)
		}
		f.length = n
	case bytes.EqualFold(name, []byte("Transfer-Encoding")):
		if !bytes.EqualFold(value, []byte("chunked")) {
			return fmt.Errorf("unsupported Transfer-Encoding %q", value)
		}
		f.chunked = true
	case bytes.EqualFold(name, []byte("Connection")):
		f.closing = f.closing || hasToken(value, "close")
	}
	return nil
}

// hasToken reports whether the comma-separated list has token (any case).
func hasToken(list []byte, token string) bool {
	for item := range bytes.SplitSeq(list, []byte(",")) {
		if bytes.EqualFold(bytes.TrimSpace(item), []byte(token)) {
			return true
		}
	}
	return false
}

// readChunked appends a chunked body (RFC 9112 §7.1) to body: chunks of a
// hex size line (extensions ignored), data and CRLF, up to the zero-size
// chunk and its trailer lines, which are skipped.
func readChunked(br *bufio.Reader, body []byte) ([]byte, error) {
	for {
		line, err := readLine(br)
		if err != nil {
			return body, fmt.Errorf("chunk size: %w", err)
		}
		sizeText, _, _ := bytes.Cut(line, []byte(";"))
		size, err := strconv.ParseUint(string(bytes.TrimSpace(sizeText)), 16, 32)
		if err != nil {
			return body, fmt.Errorf("bad chunk size line %q", line)
		}
		if size == 0 {
			return body, skipTrailers(br)
		}
		if len(body)+int(size) > maxAnswer {
			return body, fmt.Errorf("chunked answer exceeds %d bytes", maxAnswer)
		}
		if body, err = readChunk(br, body, int(size)); err != nil {
			return body, err
		}
	}
}

// readChunk appends one chunk's size bytes of data to body and reads the
// CRLF after it.
func readChunk(br *bufio.Reader, body []byte, size int) ([]byte, error) {
	n := len(body)
	body = slices.Grow(body, size)[:n+size]
	if _, err := io.ReadFull(br, body[n:]); err != nil {
		return body, fmt.Errorf("chunk data: %w", err)
	}
	end, err := readLine(br)
	switch {
	case err != nil:
		// Wrapped: the loop generator reads a cut-short answer as
		// incomplete by its io.EOF.
		return body, fmt.Errorf("chunk data not followed by CRLF: %w", err)
	case len(end) != 0:
		return body, fmt.Errorf("chunk data not followed by CRLF but %q", end)
	}
	return body, nil
}

// skipTrailers reads the trailer lines after the last chunk, up to the
// blank line that ends the answer.
func skipTrailers(br *bufio.Reader) error {
	for {
		line, err := readLine(br)
		if err != nil {
			return fmt.Errorf("trailers: %w", err)
		}
		if len(line) == 0 {
			return nil
		}
	}
}
