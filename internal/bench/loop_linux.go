//go:build linux

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
	"runtime"
	"slices"
	"syscall"
	"time"
)

// loopSupported: the event-loop load generator runs on this system.
const loopSupported = true

// publishLoop sends the batches of work with conns requests in flight,
// each connection taking the next batch as soon as its answer is read, the
// way wrk and pgbench drive their connections: one goroutine, locked to
// its own thread, owns every connection and waits for all of them in one
// epoll_wait. A goroutine per connection (the conns generator) costs Go's
// scheduler a park and a wake-up per request, often a futex wake of
// another thread, on the two cores the run measures; this loop costs a
// read, a write and a share of one epoll_wait (docs/performance.md).
//
// It answers as sendBatch does: a 5xx or 429 sends the batch again, up to
// five times, 100 ms × attempt later, with a fresh time; any other answer
// but 202, or a broken connection, ends the run with its error (a POST is
// never sent twice on a guess). times gets each 202's send → answer.
func publishLoop(ctx context.Context, addr string, p *plan, times *requestTimes, work []batch, conns int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ta, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return fmt.Errorf("load generator: %w", err)
	}
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("load generator: epoll_create1: %w", err)
	}
	l := &loop{ep: ep, addr: ta, host: addr, p: p, times: times, work: work}
	defer l.close()
	for range min(conns, len(work)) {
		c, err := l.dial()
		if err != nil {
			return err
		}
		if err := l.next(c, time.Now()); err != nil {
			return err
		}
	}
	return l.run(ctx)
}

// loop is publishLoop's state.
type loop struct {
	ep   int
	addr *net.TCPAddr
	host string
	p    *plan
	// times gets each accepted request's time.
	times *requestTimes
	// work is every batch to send; work[sent:] have not been sent yet.
	work []batch
	sent int
	// retries are batches answered 5xx or 429, to send again at their
	// time, the soonest first.
	retries []retry
	// checked is when due last looked for requests out too long.
	checked time.Time
	// conns by file descriptor; busy counts those with a request out.
	conns map[int]*loopConn
	busy  int
}

// retry is a batch to send again at a time, as its attempt'th try.
type retry struct {
	at      time.Time
	b       batch
	attempt int
}

// loopConn is one keep-alive connection and the request it has out.
type loopConn struct {
	fd int
	// b is the batch out (attempt its try, path where, sentAt when it
	// went); out the rendered request, written up to off.
	b       batch
	attempt int
	path    string
	sentAt  time.Time
	out     []byte
	off     int
	// waitOut: epoll reports c writable too, for the rest of out.
	waitOut bool
	// in holds what was read of the answer; rd and rc parse it with the
	// conns generator's parser (rc.br reads rd).
	in []byte
	rd bytes.Reader
	rc rawConn
}

// dial opens a connection to the target and adds it to the epoll set.
func (l *loop) dial() (*loopConn, error) {
	family, sa := syscall.AF_INET, syscall.Sockaddr(nil)
	if ip4 := l.addr.IP.To4(); ip4 != nil {
		s := &syscall.SockaddrInet4{Port: l.addr.Port}
		copy(s.Addr[:], ip4)
		sa = s
	} else {
		family = syscall.AF_INET6
		s := &syscall.SockaddrInet6{Port: l.addr.Port}
		copy(s.Addr[:], l.addr.IP.To16())
		sa = s
	}
	// A blocking connect (the target is on this machine), then
	// non-blocking reads and writes.
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("load generator: socket: %w", err)
	}
	if err := errors.Join(
		syscall.Connect(fd, sa),
		syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1),
		syscall.SetNonblock(fd, true),
		syscall.EpollCtl(l.ep, syscall.EPOLL_CTL_ADD, fd, &syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(fd)}),
	); err != nil {
		_ = syscall.Close(fd)
		return nil, fmt.Errorf("load generator: connect to %s: %w", l.host, err)
	}
	c := &loopConn{fd: fd, in: make([]byte, 0, 16<<10)}
	c.rc.br = bufio.NewReaderSize(&c.rd, 4096)
	if l.conns == nil {
		l.conns = make(map[int]*loopConn)
	}
	l.conns[fd] = c
	return c, nil
}

// drop closes c (which leaves the epoll set with it).
func (l *loop) drop(c *loopConn) {
	delete(l.conns, c.fd)
	_ = syscall.Close(c.fd)
}

func (l *loop) close() {
	for _, c := range l.conns {
		l.drop(c)
	}
	_ = syscall.Close(l.ep)
}

// next sends c the next batch due: a retry whose time has come, else the
// next unsent one. With nothing due, c stays idle.
func (l *loop) next(c *loopConn, now time.Time) error {
	switch {
	case len(l.retries) > 0 && !l.retries[0].at.After(now):
		r := l.retries[0]
		l.retries = l.retries[1:]
		return l.send(c, r.b, r.attempt, now)
	case l.sent < len(l.work):
		l.sent++
		return l.send(c, l.work[l.sent-1], 1, now)
	}
	return nil
}

// send renders b as sendBatch does and writes it on c.
func (l *loop) send(c *loopConn, b batch, attempt int, now time.Time) error {
	path, body := request(l.p, b, now)
	c.rc.render(l.host, path, l.p.keys[b.owner], body)
	c.b, c.attempt, c.path, c.sentAt, c.out, c.off = b, attempt, path, now, c.rc.req, 0
	l.busy++
	return l.write(c)
}

// write writes what is left of c's request. When the socket takes only
// part of it, epoll reports c writable too until the rest is out; a single
// publish's request fits at once and costs no epoll_ctl.
func (l *loop) write(c *loopConn) error {
	for c.off < len(c.out) {
		n, err := syscall.Write(c.fd, c.out[c.off:])
		switch {
		case errors.Is(err, syscall.EAGAIN):
			if c.waitOut {
				return nil
			}
			c.waitOut = true
			return l.watch(c, syscall.EPOLLIN|syscall.EPOLLRDHUP|syscall.EPOLLOUT)
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return fmt.Errorf("POST: write request: %w", err)
		}
		c.off += n
	}
	if c.waitOut {
		c.waitOut = false
		return l.watch(c, syscall.EPOLLIN|syscall.EPOLLRDHUP)
	}
	return nil
}

// watch sets the events epoll reports for c.
func (l *loop) watch(c *loopConn, events uint32) error {
	if err := syscall.EpollCtl(l.ep, syscall.EPOLL_CTL_MOD, c.fd, &syscall.EpollEvent{Events: events, Fd: int32(c.fd)}); err != nil {
		return fmt.Errorf("load generator: epoll_ctl: %w", err)
	}
	return nil
}

// run waits for answers until every batch was accepted, ctx ends or a
// request fails.
func (l *loop) run(ctx context.Context) error {
	events := make([]syscall.EpollEvent, 64)
	for l.busy > 0 || len(l.retries) > 0 {
		if err := context.Cause(ctx); err != nil {
			return err
		}
		n, err := syscall.EpollWait(l.ep, events, l.waitMillis(time.Now()))
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("load generator: epoll_wait: %w", err)
		}
		now := time.Now()
		for _, ev := range events[:n] {
			c := l.conns[int(ev.Fd)]
			if c == nil {
				continue
			}
			if err := l.ready(c, ev.Events, now); err != nil {
				return err
			}
		}
		if err := l.due(now); err != nil {
			return err
		}
	}
	return nil
}

// waitMillis is how long epoll_wait may block: until the first retry is
// due, and at most 100 ms, so that a cancelled ctx or a request past
// rawTimeout is seen.
func (l *loop) waitMillis(now time.Time) int {
	wait := 100 * time.Millisecond
	if len(l.retries) > 0 {
		wait = min(wait, max(0, l.retries[0].at.Sub(now)))
	}
	return int((wait + time.Millisecond - 1) / time.Millisecond)
}

// due fails a request out longer than rawTimeout (looking every 100 ms)
// and hands retries whose time has come to idle connections, dialling one
// when none is left.
func (l *loop) due(now time.Time) error {
	if now.Sub(l.checked) >= 100*time.Millisecond {
		l.checked = now
		for _, c := range l.conns {
			if !c.sentAt.IsZero() && now.Sub(c.sentAt) > rawTimeout {
				return fmt.Errorf("POST: no answer within %v", rawTimeout)
			}
		}
	}
	if len(l.retries) == 0 || l.retries[0].at.After(now) {
		return nil
	}
	var idle []*loopConn
	for _, c := range l.conns {
		if c.sentAt.IsZero() {
			idle = append(idle, c)
		}
	}
	for len(l.retries) > 0 && !l.retries[0].at.After(now) {
		var c *loopConn
		switch {
		case len(idle) > 0:
			c, idle = idle[0], idle[1:]
		case l.busy > 0:
			return nil // a busy connection takes it when it is answered
		default:
			var err error
			if c, err = l.dial(); err != nil {
				return err
			}
		}
		if err := l.next(c, now); err != nil {
			return err
		}
	}
	return nil
}

// ready handles what epoll reported for c: the rest of its request's
// write, or its answer.
func (l *loop) ready(c *loopConn, events uint32, now time.Time) error {
	if events&syscall.EPOLLOUT != 0 && c.waitOut {
		if err := l.write(c); err != nil {
			return err
		}
	}
	if events&(syscall.EPOLLIN|syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) == 0 {
		return nil
	}
	eof, err := c.read()
	if err != nil {
		return err
	}
	if c.sentAt.IsZero() {
		if len(c.in) > 0 {
			return fmt.Errorf("load generator: %d bytes from the server with no request out", len(c.in))
		}
		if eof {
			l.drop(c) // an idle connection the server closed
		}
		return nil
	}
	status, body, complete, err := c.answer()
	switch {
	case err != nil:
		return err
	case !complete && eof:
		return errors.New("POST: read answer: connection closed before the answer was complete")
	case !complete:
		return nil
	}
	c.rc.closing = c.rc.closing || eof
	return l.answered(c, status, body, now)
}

// read appends what the socket holds to c.in; eof: the server closed it.
func (c *loopConn) read() (eof bool, err error) {
	for {
		if cap(c.in)-len(c.in) < 4096 {
			c.in = append(c.in, make([]byte, 16<<10)...)[:len(c.in)]
		}
		n, err := syscall.Read(c.fd, c.in[len(c.in):cap(c.in)])
		switch {
		case errors.Is(err, syscall.EAGAIN):
			return false, nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.ECONNRESET):
			return true, nil
		case err != nil:
			return false, fmt.Errorf("POST: read answer: %w", err)
		case n == 0:
			return true, nil
		}
		c.in = c.in[:len(c.in)+n]
	}
}

// answer parses c.in as one answer: complete is false while it is cut
// short. Bytes after it are an error: one request is out at a time.
func (c *loopConn) answer() (status int, body []byte, complete bool, err error) {
	c.rd.Reset(c.in)
	c.rc.br.Reset(&c.rd)
	status, body, err = c.rc.readAnswer()
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return 0, nil, false, nil
	}
	if err != nil {
		return 0, nil, false, fmt.Errorf("POST: read answer: %w", err)
	}
	if rest := c.rd.Len() + c.rc.br.Buffered(); rest > 0 {
		return 0, nil, false, fmt.Errorf("POST: read answer: %d bytes after it", rest)
	}
	return status, body, true, nil
}

// answered records c's answer, schedules a retry or fails, and sends c the
// next batch (on a fresh connection when the server closes this one).
func (l *loop) answered(c *loopConn, status int, body []byte, now time.Time) error {
	b, attempt, took := c.b, c.attempt, now.Sub(c.sentAt)
	c.in, c.sentAt = c.in[:0], time.Time{}
	l.busy--
	switch {
	case status == http.StatusAccepted:
		l.times.add(took)
	case retryable(status, attempt):
		r := retry{at: now.Add(retryAfter(attempt)), b: b, attempt: attempt + 1}
		i, _ := slices.BinarySearchFunc(l.retries, r.at, func(r retry, at time.Time) int { return r.at.Compare(at) })
		l.retries = slices.Insert(l.retries, i, r)
	default:
		return fmt.Errorf("publish: %w", &statusError{method: http.MethodPost, path: c.path, status: status, body: string(bytes.TrimSpace(body))})
	}
	if c.rc.closing {
		l.drop(c)
		if l.sent == len(l.work) {
			return nil
		}
		var err error
		if c, err = l.dial(); err != nil {
			return err
		}
	}
	return l.next(c, now)
}
