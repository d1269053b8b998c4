package e2e_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/app"
	"github.com/hookd/hookd/internal/dbtest"
)

// tcpProxy forwards loopback connections to a target; cut makes the
// database unreachable (open connections reset, new ones refused) without
// touching the PostgreSQL server other tests share, and restore brings it
// back on the same address.
type tcpProxy struct {
	t      *testing.T
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]bool
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	p := &tcpProxy{t: t, target: target, conns: map[net.Conn]bool{}}
	p.listen("127.0.0.1:0")
	t.Cleanup(p.cut)
	return p
}

func (p *tcpProxy) listen(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		p.t.Fatalf("proxy listen %s: %v", addr, err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.pipe(c)
		}
	}()
}

func (p *tcpProxy) pipe(c net.Conn) {
	up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.ln == nil { // cut meanwhile
		p.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	p.conns[c], p.conns[up] = true, true
	p.mu.Unlock()
	go func() { _, _ = io.Copy(up, c); up.Close() }()
	_, _ = io.Copy(c, up)
	c.Close()
}

func (p *tcpProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

func (p *tcpProxy) restore() { p.listen(p.addr) }

// viaProxy returns rawURL with its host replaced by a proxy to it.
func viaProxy(t *testing.T, rawURL string) (string, *tcpProxy) {
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	p := newTCPProxy(t, u.Host)
	u.Host = p.addr
	return u.String(), p
}

type probe struct {
	status     int
	retryAfter string
	code       string
	message    string
}

func get(t *testing.T, req *http.Request) probe {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	var body struct {
		Error struct{ Code, Message string }
	}
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return probe{resp.StatusCode, resp.Header.Get("Retry-After"), body.Error.Code, body.Error.Message}
}

func TestReadyzAndUnavailableWhilePostgresIsUnreachable(t *testing.T) {
	t.Parallel()
	var proxy *tcpProxy
	b := setup(t, dbtest.Backend{Name: "postgres", Config: dbtest.Postgres}, setupOpts{mutate: func(c *app.Config) {
		c.Database, proxy = viaProxy(t, c.Database)
	}})
	rc := newReceiver(t)
	b.registerType("r.happened")
	ep := b.endpoint(rc.URL, "r.happened")
	readyz := func() probe {
		req, _ := http.NewRequest("GET", b.api.URL+"/readyz", nil)
		return get(t, req)
	}
	publish := func(key string) probe {
		req, _ := http.NewRequest("POST", b.api.URL+"/api/v1/events", strings.NewReader(`{"type":"r.happened","data":{}}`))
		req.Header.Set("Authorization", "Bearer "+b.key)
		req.Header.Set("Idempotency-Key", key)
		return get(t, req)
	}
	if p := readyz(); p.status != 200 {
		t.Fatalf("/readyz before the outage: %+v", p)
	}
	before := b.publish("r.happened", `{}`)

	proxy.cut()
	var p probe
	if !eventually(10*time.Second, func() bool { p = readyz(); return p.status == 503 }) {
		t.Fatalf("/readyz while PostgreSQL is unreachable: %+v, want 503", p)
	}
	if p.code != "unavailable" || !strings.Contains(p.message, "database unreachable") || p.retryAfter == "" {
		t.Errorf("/readyz 503 = %+v, want code unavailable, the reason and Retry-After", p)
	}
	for _, key := range []string{"during-1", "during-2"} {
		if p := publish(key); p.status != 503 || p.code != "unavailable" || p.retryAfter == "" {
			t.Errorf("publish while PostgreSQL is unreachable = %+v, want 503 unavailable with Retry-After", p)
		}
	}

	proxy.restore()
	if !eventually(15*time.Second, func() bool { p = readyz(); return p.status == 200 }) {
		t.Fatalf("/readyz after PostgreSQL came back: %+v, want 200 without a restart", p)
	}
	after := b.publish("r.happened", `{}`)
	for _, id := range []string{before, after} {
		b.waitDelivery(ep.ID, id, 15*time.Second, func(d deliveryOut) bool { return d.State == "delivered" })
	}
	// Nothing of the refused publishes was written.
	n, err := b.h.DB.Count(context.Background(), `SELECT count(*) FROM hookd_events WHERE idempotency_key IN ('during-1', 'during-2')`)
	if err != nil || n != 0 {
		t.Errorf("events written by the refused publishes: %d (%v), want 0", n, err)
	}
	if n, err := b.h.DB.Count(context.Background(), `SELECT count(*) FROM hookd_events`); err != nil || n != 2 {
		t.Errorf("events: %d (%v), want the 2 published while the database answered", n, err)
	}
}
