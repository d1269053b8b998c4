package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/hookd/hookd/internal/app"
)

// The polling scenario (hookd bench --poll): issue 43's three targets.
//
//   - wake-up: a long-poll waits on a polling endpoint; one event is
//     published; the time from sending the publish to the long-poll's
//     answer (carrying it). On PostgreSQL also with the long-poll on a
//     second hookd on the same database that runs no fanout, so only the
//     NOTIFY of the first one's commit can wake it.
//   - a poll of 100: GET /api/v1/poll/{id}?limit=100 over an endpoint
//     holding 1,000 messages, client-side.
//   - idle long-polls: Idle long-polls waiting at once, spread over 100
//     endpoints, each on a raw connection of its own (no client goroutine
//     in this process); the Go heap and stacks in use before and after,
//     and the process's RSS.

// PollOptions describe a polling run.
type PollOptions struct {
	DB       string // "sqlite" (default) or a postgres:// URL
	Rounds   int    // wake-ups measured per poller (default 200)
	Idle     int    // idle long-polls (default 1,000)
	Log      *slog.Logger
	Progress io.Writer
}

// PollResult is a polling run's figures.
type PollResult struct {
	Engine             string
	Wake, WakeRemote   Percentiles // WakeRemote: PostgreSQL, another process
	Poll100            Percentiles
	Idle               int
	IdleHeap, IdleRSS  int64 // bytes more with Idle long-polls waiting
	LoadStart, LoadEnd string
}

// WriteTo prints the figures, one a line.
func (r *PollResult) WriteTo(w io.Writer) (int64, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "engine             %s\n", r.Engine)
	fmt.Fprintf(&b, "load               %s (start), %s (end)\n", r.LoadStart, r.LoadEnd)
	fmt.Fprintf(&b, "wake-up            p50 %s  p95 %s  p99 %s  max %s (publish sent → long-poll answered, same process)\n", r.Wake.P50, r.Wake.P95, r.Wake.P99, r.Wake.Max)
	if r.WakeRemote.Max > 0 {
		fmt.Fprintf(&b, "wake-up, 2nd node  p50 %s  p95 %s  p99 %s  max %s (the long-poll on another process: NOTIFY)\n", r.WakeRemote.P50, r.WakeRemote.P95, r.WakeRemote.P99, r.WakeRemote.Max)
	}
	fmt.Fprintf(&b, "poll of 100        p50 %s  p95 %s  p99 %s  max %s\n", r.Poll100.P50, r.Poll100.P95, r.Poll100.P99, r.Poll100.Max)
	fmt.Fprintf(&b, "idle long-polls    %d: +%.1f MiB Go heap and stacks, +%.1f MiB RSS\n", r.Idle, float64(r.IdleHeap)/(1<<20), float64(r.IdleRSS)/(1<<20))
	n, err := w.Write(b.Bytes())
	return int64(n), err
}

// pollNode is one hookd of the run, served on loopback.
type pollNode struct {
	h   *app.App
	url string
	srv *http.Server
}

func startPollNode(ctx context.Context, db *database, key []byte, work bool, log *slog.Logger) (*pollNode, error) {
	h, err := app.Open(ctx, app.Config{Database: db.url, Schema: db.schema, MasterKey: key, EgressAllow: loopback, Work: work, Log: log})
	if err != nil {
		return nil, fmt.Errorf("open hookd: %w", err)
	}
	if err := h.Start(ctx); err != nil {
		return nil, errors.Join(err, h.Close())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, errors.Join(err, h.Close())
	}
	n := &pollNode{h: h, url: "http://" + ln.Addr().String(), srv: &http.Server{Handler: h.Handler(), ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = n.srv.Serve(ln) }()
	return n, nil
}

func (n *pollNode) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_ = n.srv.Shutdown(ctx)
	_ = n.h.Stop(ctx)
	_ = n.h.Close()
}

func (n *pollNode) waiting() int { return n.h.Delivery.PollHub().Waiting() }

// RunPoll runs the polling scenario.
func RunPoll(ctx context.Context, o PollOptions) (*PollResult, error) {
	if o.Rounds <= 0 {
		o.Rounds = 200
	}
	if o.Idle <= 0 {
		o.Idle = 1000
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	progress := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, format+"\n", args...)
		}
	}
	db, err := freshDatabase(ctx, o.DB)
	if err != nil {
		return nil, err
	}
	defer db.drop()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	res := &PollResult{Engine: db.engine, Idle: o.Idle, LoadStart: loadAvg()}
	first, err := startPollNode(ctx, db, key, true, o.Log)
	if err != nil {
		return nil, err
	}
	defer first.stop()
	if err := first.h.CreateOwner(ctx, "bench-poll", "standard", nil); err != nil {
		return nil, err
	}
	apiKey, err := first.h.CreateAPIKey(ctx, "bench-poll", "admin")
	if err != nil {
		return nil, err
	}
	c := &pollClient{http: &http.Client{Timeout: 2 * time.Minute}, key: apiKey}
	if err := c.call(ctx, http.MethodPut, first.url+"/api/admin/event_types/bench.polled", apiKey, map[string]string{"exposure": "webhook"}, nil); err != nil {
		return nil, err
	}
	ep, err := c.pollEndpoint(ctx, first.url)
	if err != nil {
		return nil, err
	}

	progress("wake-up: %d rounds", o.Rounds)
	if res.Wake, err = c.wakeRounds(ctx, first, first, ep, o.Rounds); err != nil {
		return nil, err
	}
	if db.engine == "postgres" {
		second, err := startPollNode(ctx, db, key, false, o.Log)
		if err != nil {
			return nil, err
		}
		defer second.stop()
		progress("wake-up on a second process: %d rounds", o.Rounds)
		if res.WakeRemote, err = c.wakeRounds(ctx, first, second, ep, o.Rounds); err != nil {
			return nil, err
		}
	}

	progress("a poll of 100: 1,000 messages")
	if res.Poll100, err = c.poll100(ctx, first.url); err != nil {
		return nil, err
	}

	progress("%d idle long-polls", o.Idle)
	if res.IdleHeap, res.IdleRSS, err = c.idle(ctx, first, o.Idle); err != nil {
		return nil, err
	}
	res.LoadEnd = loadAvg()
	return res, nil
}

type pollClient struct {
	http *http.Client
	key  string
}

type benchPollEndpoint struct {
	ID        string `json:"id"`
	PollToken string `json:"poll_token"`
}

type benchPollPage struct {
	Data []struct {
		EventID string `json:"event_id"`
	} `json:"data"`
	Next string `json:"next"`
}

func (c *pollClient) call(ctx context.Context, method, url, bearer string, in, out any) error {
	var body io.Reader
	if in != nil {
		raw, _ := json.Marshal(in)
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+bearer)
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close() //nolint:errcheck // read below
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %d %.200s", method, url, resp.StatusCode, raw)
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

func (c *pollClient) pollEndpoint(ctx context.Context, base string) (benchPollEndpoint, error) {
	var ep benchPollEndpoint
	err := c.call(ctx, http.MethodPost, base+"/api/admin/webhooks", c.key, map[string]any{"kind": "poll", "event_types": []string{"bench.*"}}, &ep)
	return ep, err
}

func (c *pollClient) publish(ctx context.Context, base string, n int) error {
	if n == 1 {
		return c.call(ctx, http.MethodPost, base+"/api/v1/events", c.key, map[string]any{"type": "bench.polled", "subject": "bench://1", "data": map[string]int{"n": 1}}, nil)
	}
	evs := make([]map[string]any, n)
	for i := range evs {
		evs[i] = map[string]any{"type": "bench.polled", "subject": "bench://1", "data": map[string]int{"n": i}}
	}
	return c.call(ctx, http.MethodPost, base+"/api/v1/events/batch", c.key, map[string]any{"events": evs}, nil)
}

// wakeRounds measures rounds wake-ups: a long-poll on poller, a publish
// on publisher, the time from sending the publish to the poll's answer.
func (c *pollClient) wakeRounds(ctx context.Context, publisher, poller *pollNode, ep benchPollEndpoint, rounds int) (Percentiles, error) {
	var after string
	var page benchPollPage
	if err := c.call(ctx, http.MethodGet, poller.url+"/api/v1/poll/"+ep.ID+"?limit=500", ep.PollToken, nil, &page); err != nil {
		return Percentiles{}, err
	}
	after = page.Next
	lat := make([]time.Duration, 0, rounds)
	for range rounds {
		got := make(chan error, 1)
		var answer benchPollPage
		go func() {
			got <- c.call(ctx, http.MethodGet, poller.url+"/api/v1/poll/"+ep.ID+"?wait=30s&after="+after, ep.PollToken, nil, &answer)
		}()
		for poller.waiting() == 0 { // the poll is waiting: what follows is its wake-up
			time.Sleep(100 * time.Microsecond)
		}
		start := time.Now()
		if err := c.publish(ctx, publisher.url, 1); err != nil {
			return Percentiles{}, err
		}
		if err := <-got; err != nil {
			return Percentiles{}, err
		}
		lat = append(lat, time.Since(start))
		if len(answer.Data) == 0 {
			return Percentiles{}, errors.New("a long-poll woke without the event")
		}
		after = answer.Next
	}
	return percentiles(lat), nil
}

// poll100 fills a fresh endpoint with 1,000 messages and times polls of
// 100 at each of its ten cursors, ten times over.
func (c *pollClient) poll100(ctx context.Context, base string) (Percentiles, error) {
	ep, err := c.pollEndpoint(ctx, base)
	if err != nil {
		return Percentiles{}, err
	}
	for range 10 {
		if err := c.publish(ctx, base, 100); err != nil {
			return Percentiles{}, err
		}
	}
	var cursors []string
	after := ""
	deadline := time.Now().Add(2 * time.Minute)
	for len(cursors) < 10 {
		var page benchPollPage
		if err := c.call(ctx, http.MethodGet, base+"/api/v1/poll/"+ep.ID+"?limit=100&wait=10s&after="+after, ep.PollToken, nil, &page); err != nil {
			return Percentiles{}, err
		}
		if len(page.Data) == 100 {
			cursors, after = append(cursors, after), page.Next
		} else if time.Now().After(deadline) {
			return Percentiles{}, fmt.Errorf("only %d full pages of 100 arrived", len(cursors))
		}
	}
	var lat []time.Duration
	for range 10 {
		for _, cur := range cursors {
			start := time.Now()
			var page benchPollPage
			if err := c.call(ctx, http.MethodGet, base+"/api/v1/poll/"+ep.ID+"?limit=100&after="+cur, ep.PollToken, nil, &page); err != nil {
				return Percentiles{}, err
			}
			lat = append(lat, time.Since(start))
			if len(page.Data) != 100 {
				return Percentiles{}, fmt.Errorf("a poll of 100 answered %d", len(page.Data))
			}
		}
	}
	return percentiles(lat), nil
}

// idle opens n long-polls over 100 endpoints, each on a raw connection
// that only writes its request, and measures the memory they hold once
// all wait.
func (c *pollClient) idle(ctx context.Context, n *pollNode, polls int) (heap, rss int64, err error) {
	eps := make([]benchPollEndpoint, 100)
	for i := range eps {
		if eps[i], err = c.pollEndpoint(ctx, n.url); err != nil {
			return 0, 0, err
		}
	}
	heapBefore, rssBefore := inUse(), readRSS()
	host := strings.TrimPrefix(n.url, "http://")
	conns := make([]net.Conn, 0, polls)
	defer func() {
		for _, conn := range conns {
			_ = conn.Close()
		}
	}()
	for i := range polls {
		ep := eps[i%len(eps)]
		conn, err := net.Dial("tcp", host)
		if err != nil {
			return 0, 0, err
		}
		conns = append(conns, conn)
		if _, err := fmt.Fprintf(conn, "GET /api/v1/poll/%s?wait=60s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", ep.ID, host, ep.PollToken); err != nil {
			return 0, 0, err
		}
	}
	deadline := time.Now().Add(time.Minute)
	for n.waiting() < polls {
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("only %d of %d long-polls waiting", n.waiting(), polls)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return inUse() - heapBefore, readRSS() - rssBefore, nil
}

// inUse is the Go heap and stacks in use, after a collection.
func inUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse + m.StackInuse)
}

// readRSS is this process's resident set now (VmRSS), in bytes.
func readRSS() int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			_, _ = fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return kb << 10
		}
	}
	return 0
}

// loadAvg is the machine's load average (1, 5, 15 min).
func loadAvg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
