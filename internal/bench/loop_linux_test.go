//go:build linux

package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// loopPlan is a plan of owners' keys for publishLoop, without a hookd.
func loopPlan(owners int) *plan {
	p := &plan{owners: owners, profile: ProfileStandard}
	for k := range owners {
		p.keys = append(p.keys, fmt.Sprintf("key_%d", k))
	}
	return p
}

// singles is one batch a seq, from 0 to n-1, owner seq%owners.
func singles(n, owners int) []batch {
	out := make([]batch, n)
	for seq := range n {
		out[seq] = batch{owner: seq % owners, seqs: []int{seq}}
	}
	return out
}

// seqsOf decodes the seqs a publish request carries (one event, or a
// batch's events) and checks its key is its owner's: owner k's event type
// is bench.event<k>.
func seqsOf(r *http.Request) ([]int, error) {
	type ev struct {
		Type string `json:"type"`
		Data struct {
			Seq int   `json:"seq"`
			TS  int64 `json:"ts"`
		} `json:"data"`
	}
	var evs []ev
	switch r.URL.Path {
	case "/api/v1/events":
		var e ev
		if err := json.NewDecoder(r.Body).Decode(&e); err != nil {
			return nil, err
		}
		evs = []ev{e}
	case "/api/v1/events/batch":
		var b struct{ Events []ev }
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
			return nil, err
		}
		evs = b.Events
	default:
		return nil, fmt.Errorf("path %s", r.URL.Path)
	}
	var seqs []int
	for _, e := range evs {
		var k int
		if _, err := fmt.Sscanf(e.Type, "bench.event%d", &k); err != nil || r.Header.Get("Authorization") != fmt.Sprintf("Bearer key_%d", k) {
			return nil, fmt.Errorf("event type %q with %q", e.Type, r.Header.Get("Authorization"))
		}
		if e.Data.TS <= 0 || r.Header.Get("Content-Type") != "application/json" {
			return nil, fmt.Errorf("ts %d, content type %q", e.Data.TS, r.Header.Get("Content-Type"))
		}
		seqs = append(seqs, e.Data.Seq)
	}
	return seqs, nil
}

// seen counts the requests a test server got for each seq.
type seen struct {
	mu   sync.Mutex
	seqs map[int]int
}

func (s *seen) add(seqs []int) (first bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seqs == nil {
		s.seqs = make(map[int]int)
	}
	first = true
	for _, seq := range seqs {
		s.seqs[seq]++
		first = first && s.seqs[seq] == 1
	}
	return first
}

// handler records each request's seqs in s and lets answer answer it
// (first: none of them was seen before); a malformed request gets a 400.
func (s *seen) handler(answer func(w http.ResponseWriter, seqs []int, first bool)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seqs, err := seqsOf(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		answer(w, seqs, s.add(seqs))
	})
}

func (s *seen) count(seq int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seqs[seq]
}

// TestLoopPublishes: every batch is sent once, on its owner's key, with
// single events through POST /api/v1/events and larger batches through the
// batch endpoint, over exactly as many keep-alive connections as requests
// in flight; each 202 is timed.
func TestLoopPublishes(t *testing.T) {
	t.Parallel()
	var got seen
	c, tp := serve(t, got.handler(func(w http.ResponseWriter, seqs []int, _ bool) {
		w.WriteHeader(http.StatusAccepted)
		_, _ = fmt.Fprintf(w, `{"events":%d}`, len(seqs))
	}), 0)
	p := loopPlan(3)
	work := singles(600, 3)
	work = append(work, batch{owner: 1, seqs: []int{600, 601, 602}}, batch{owner: 2, seqs: []int{603, 604}})
	times := &requestTimes{}
	if err := publishLoop(t.Context(), c.addr, p, times, work, 8); err != nil {
		t.Fatal(err)
	}
	for seq := range 605 {
		if n := got.count(seq); n != 1 {
			t.Fatalf("seq %d sent %d times, want 1", seq, n)
		}
	}
	if len(times.all) != len(work) {
		t.Errorf("%d request times for %d requests", len(times.all), len(work))
	}
	if n := tp.accepted(); n != 8 {
		t.Errorf("server accepted %d connections for 8 in flight, want 8", n)
	}
}

// TestLoopRetries: a 503 or 429 sends the batch again with a fresh time,
// and a batch that keeps failing ends the run after five tries with the
// last answer; any other status ends it at once.
func TestLoopRetries(t *testing.T) {
	t.Parallel()
	var got seen
	c, _ := serve(t, got.handler(func(w http.ResponseWriter, seqs []int, first bool) {
		switch seq := seqs[0]; {
		case seq == 1000:
			http.Error(w, "always busy", http.StatusServiceUnavailable)
		case seq == 2000:
			http.Error(w, "  no such type  ", http.StatusUnprocessableEntity)
		case first && seq%7 == 0:
			http.Error(w, "busy", http.StatusServiceUnavailable)
		case first && seq%11 == 0:
			http.Error(w, "slow down", http.StatusTooManyRequests)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}), 0)
	p := loopPlan(2)
	times := &requestTimes{}
	if err := publishLoop(t.Context(), c.addr, p, times, singles(100, 2), 4); err != nil {
		t.Fatal(err)
	}
	for seq := range 100 {
		want := 1
		if seq%7 == 0 || seq%11 == 0 {
			want = 2
		}
		if n := got.count(seq); n != want {
			t.Errorf("seq %d sent %d times, want %d", seq, n, want)
		}
	}
	if len(times.all) != 100 {
		t.Errorf("%d request times, want 100 (the accepted ones)", len(times.all))
	}

	began := time.Now()
	err := publishLoop(t.Context(), c.addr, p, &requestTimes{}, []batch{{owner: 0, seqs: []int{1000}}}, 4)
	wantStatusError(t, err, "/api/v1/events", http.StatusServiceUnavailable, "always busy")
	if n := got.count(1000); n != 5 {
		t.Errorf("a batch answered 503 every time was sent %d times, want 5", n)
	}
	if d := time.Since(began); d < time.Second {
		t.Errorf("five tries took %v, want at least 1s (100+200+300+400 ms apart)", d)
	}
	err = publishLoop(t.Context(), c.addr, p, &requestTimes{}, []batch{{owner: 0, seqs: []int{2000, 2002}}}, 4)
	wantStatusError(t, err, "/api/v1/events/batch", http.StatusUnprocessableEntity, "no such type")
	if n := got.count(2000); n != 1 {
		t.Errorf("a batch answered 422 was sent %d times, want 1", n)
	}
}

// TestLoopConnectionClose: after an answer with Connection: close the
// connection's next request goes on a new one; chunked answers with
// trailers are read whole and keep theirs.
func TestLoopConnectionClose(t *testing.T) {
	t.Parallel()
	var got seen
	c, tp := serve(t, got.handler(func(w http.ResponseWriter, seqs []int, _ bool) {
		switch seqs[0] % 10 {
		case 3:
			w.Header().Set("Connection", "close")
			w.WriteHeader(http.StatusAccepted)
		case 5:
			w.Header().Set("Trailer", "X-Done")
			w.WriteHeader(http.StatusAccepted)
			for range 3 {
				_, _ = io.WriteString(w, strings.Repeat("x", 5000))
				w.(http.Flusher).Flush()
			}
			w.Header().Set("X-Done", "yes")
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}), 0)
	if err := publishLoop(t.Context(), c.addr, loopPlan(1), &requestTimes{}, singles(50, 1), 2); err != nil {
		t.Fatal(err)
	}
	for seq := range 50 {
		if n := got.count(seq); n != 1 {
			t.Errorf("seq %d sent %d times, want 1", seq, n)
		}
	}
	if !strings.Contains(tp.written(), "Transfer-Encoding: chunked") {
		t.Error("the server chunked no answer; the test no longer covers chunked answers")
	}
	// 2 connections, and one more for each of the 5 answers that closed
	// one, but perhaps the last: a publisher whose connection closed opens
	// another only for its next request, and the other may have taken
	// the last ones.
	if n := tp.accepted(); n < 6 || n > 7 {
		t.Errorf("server accepted %d connections, want 7 (or 6: no request left after the last close)", n)
	}
}

// TestLoopAnswersInParts: answers that arrive in several reads, chunked
// or framed by Content-Length and cut anywhere (a chunk's data, its CRLF,
// a size line, the headers), are waited for and read whole; before, an
// answer cut after a chunk's data failed the run (a batch of 1,000
// events' answer is chunked).
func TestLoopAnswersInParts(t *testing.T) {
	t.Parallel()
	const body = `{"ids":["evt_1","evt_2","evt_3"]}`
	answers := map[string]string{
		"chunked": "HTTP/1.1 202 Accepted\r\nTransfer-Encoding: chunked\r\n\r\n" +
			"a\r\n" + body[:10] + "\r\n" + fmt.Sprintf("%x", len(body)-10) + "\r\n" + body[10:] + "\r\n0\r\nX-T: 1\r\n\r\n",
		"length": "HTTP/1.1 202 Accepted\r\nContent-Length: " + fmt.Sprint(len(body)) + "\r\n\r\n" + body,
	}
	for name, answer := range answers {
		// Every cut point of the answer, in two writes 5 ms apart.
		for cut := 1; cut < len(answer); cut += 3 {
			t.Run(fmt.Sprintf("%s/%d", name, cut), func(t *testing.T) {
				t.Parallel()
				addr := rawServer(t, answerEach(func(conn net.Conn) bool {
					_, _ = io.WriteString(conn, answer[:cut])
					time.Sleep(5 * time.Millisecond)
					_, _ = io.WriteString(conn, answer[cut:])
					return true
				}))
				times := &requestTimes{}
				if err := publishLoop(t.Context(), addr, loopPlan(1), times, singles(3, 1), 1); err != nil {
					t.Fatalf("cut at %d (%q | %q): %v", cut, answer[:cut], answer[cut:], err)
				}
				if len(times.all) != 3 {
					t.Errorf("%d answers read, want 3", len(times.all))
				}
			})
		}
	}
}

// rawServer accepts connections on loopback and runs handle on each.
func rawServer(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	return rawServerOn(t, "127.0.0.1:0", handle)
}

// rawServerOn is rawServer listening on addr.
func rawServerOn(t *testing.T, addr string, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer conn.Close()
				handle(conn)
			})
		}
	})
	return ln.Addr().String()
}

// answerEach is a rawServer handler that reads each request on a
// connection, whole, and has answer write its answer; the connection
// closes when answer returns false or the client closes it.
func answerEach(answer func(conn net.Conn) (keepOpen bool)) func(net.Conn) {
	return func(conn net.Conn) {
		br := bufio.NewReader(conn)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, req.Body)
			if !answer(conn) {
				return
			}
		}
	}
}

// TestLoopIPv6: a target on ::1 is dialled as IPv6.
func TestLoopIPv6(t *testing.T) {
	t.Parallel()
	if ln, err := net.Listen("tcp6", "[::1]:0"); err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	} else {
		_ = ln.Close()
	}
	var requests sync.WaitGroup
	requests.Add(2)
	addr := rawServerOn(t, "[::1]:0", answerEach(func(conn net.Conn) bool {
		_, _ = io.WriteString(conn, "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
		requests.Done()
		return true
	}))
	if err := publishLoop(t.Context(), addr, loopPlan(1), &requestTimes{}, singles(2, 1), 1); err != nil {
		t.Fatal(err)
	}
	requests.Wait()
}

// TestLoopLargeRequest: a request larger than the socket takes at once is
// written in parts as the server reads it, and arrives whole.
func TestLoopLargeRequest(t *testing.T) {
	t.Parallel()
	p := loopPlan(1)
	p.keys[0] = "key_" + strings.Repeat("k", 8<<20)
	got := make(chan string, 1)
	addr := rawServer(t, func(conn net.Conn) {
		// Let the client fill the socket's buffers before reading.
		time.Sleep(100 * time.Millisecond)
		req, err := http.ReadRequest(bufio.NewReader(conn))
		if err != nil {
			got <- err.Error()
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		got <- req.Header.Get("Authorization")
		_, _ = io.WriteString(conn, "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
	})
	if err := publishLoop(t.Context(), addr, p, &requestTimes{}, singles(1, 1), 1); err != nil {
		t.Fatal(err)
	}
	if auth := <-got; auth != "Bearer "+p.keys[0] {
		t.Errorf("the server read an Authorization of %d bytes (%.40q…), want %d", len(auth), auth, len("Bearer ")+len(p.keys[0]))
	}
}

// TestLoopBrokenAnswers: a connection closed before its answer is complete,
// or bytes beyond the one answer asked for, end the run with an error
// rather than a request sent again.
func TestLoopBrokenAnswers(t *testing.T) {
	t.Parallel()
	for name, answer := range map[string]string{
		"closed before the answer": "HTTP/1.1 202 Accepted\r\nContent-Length: 10\r\n\r\n{\"id\":",
		"bytes after it":           "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\nHTTP/1.1 202 Accepted\r\n",
		"malformed":                "HTTP/1.1 2x2 Accepted\r\n\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			requests := 0
			addr := rawServer(t, answerEach(func(conn net.Conn) bool {
				mu.Lock()
				requests++
				mu.Unlock()
				_, _ = io.WriteString(conn, answer)
				return name != "closed before the answer"
			}))
			err := publishLoop(t.Context(), addr, loopPlan(1), &requestTimes{}, singles(3, 1), 1)
			if err == nil || !strings.Contains(err.Error(), "read answer") {
				t.Errorf("err = %v, want a read answer error", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if requests != 1 {
				t.Errorf("the server got %d requests, want 1: the run must stop at the broken answer", requests)
			}
		})
	}
}

// TestLoopContext: cancelling the context ends a run whose requests the
// server does not answer, promptly.
func TestLoopContext(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	c, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusAccepted)
	}), 0)
	t.Cleanup(func() { close(release) })
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	began := time.Now()
	if err := publishLoop(ctx, c.addr, loopPlan(1), &requestTimes{}, singles(4, 1), 4); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("the run took %v to stop, want about 150ms", d)
	}
}
