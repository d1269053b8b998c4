package mcpserver

import (
	"context"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Stdio is the transport of `hookd mcp`: newline-delimited JSON-RPC on r
// and w, served one message at a time. The next message is read only once
// every request read so far has been answered, so answers come in the
// order of the requests, and the end of r (a client that wrote its
// requests and closed stdin) reaches the session only after all of them
// were answered.
//
// Without this the SDK's connection, on reading EOF, cancels every request
// still queued: a client piping initialize, initialized and tools/list and
// then closing stdin got no answer to tools/list about half the time (and
// the SDK logged "initialized before initialize" when initialize itself
// was cancelled). hookd's tools make no calls back to the client, so
// serving one request at a time costs nothing but their concurrency.
func Stdio(r io.Reader, w io.Writer) mcp.Transport {
	return inOrderTransport{&mcp.IOTransport{Reader: io.NopCloser(r), Writer: nopWriteCloser{w}}}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

type inOrderTransport struct{ t mcp.Transport }

func (t inOrderTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &inOrderConn{Connection: c, changed: make(chan struct{})}, nil
}

// inOrderConn counts the requests read and not yet answered.
type inOrderConn struct {
	mcp.Connection
	mu      sync.Mutex
	pending int
	closed  bool
	changed chan struct{} // closed (and replaced) when pending or closed changes
}

func (c *inOrderConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := c.waitAnswered(ctx); err != nil {
		return nil, err
	}
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		return nil, err
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.ID.IsValid() {
		c.update(func() { c.pending++ })
	}
	return msg, nil
}

func (c *inOrderConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if _, ok := msg.(*jsonrpc.Response); ok {
		c.update(func() { c.pending-- })
	}
	return err
}

func (c *inOrderConn) Close() error {
	c.update(func() { c.closed = true })
	return c.Connection.Close()
}

// waitAnswered waits until no request is unanswered (or the connection is
// closed, or ctx ends).
func (c *inOrderConn) waitAnswered(ctx context.Context) error {
	for {
		c.mu.Lock()
		done, changed := c.pending <= 0 || c.closed, c.changed
		c.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *inOrderConn) update(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f()
	close(c.changed)
	c.changed = make(chan struct{})
}
