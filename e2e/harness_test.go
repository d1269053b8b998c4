package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/app"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/hookdtest"
	"github.com/hookd/hookd/internal/store"
	"github.com/hookd/hookd/webhook"
)

// clock is a test clock: real time plus an offset the test moves forward.
type clock struct{ offset atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *clock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// At is the test clock's reading at real time t (at the current offset).
func (c *clock) At(t time.Time) time.Time { return t.Add(time.Duration(c.offset.Load())) }

// receipt is one request a receiver got.
type receipt struct {
	Path   string
	Header http.Header
	Body   []byte
	At     time.Time
}

// receiver is a real HTTP server on loopback that records every request and
// answers what its respond function says.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	got      []receipt
	notify   chan struct{}
	inFlight atomic.Int32
	maxInFl  atomic.Int32
	respond  func(r *http.Request, n int) (status int, header http.Header)
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{notify: make(chan struct{}, 10000)}
	rc.respond = func(*http.Request, int) (int, http.Header) { return http.StatusNoContent, nil }
	rc.Server = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	n := rc.inFlight.Add(1)
	defer rc.inFlight.Add(-1)
	for {
		m := rc.maxInFl.Load()
		if n <= m || rc.maxInFl.CompareAndSwap(m, n) {
			break
		}
	}
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.got = append(rc.got, receipt{Path: r.URL.Path, Header: r.Header.Clone(), Body: body, At: time.Now()})
	count := len(rc.got)
	respond := rc.respond
	rc.mu.Unlock()
	select {
	case rc.notify <- struct{}{}:
	default:
	}
	status, h := respond(r, count)
	for k, v := range h {
		w.Header()[k] = v
	}
	w.WriteHeader(status)
}

func (rc *receiver) setRespond(f func(r *http.Request, n int) (int, http.Header)) {
	rc.mu.Lock()
	rc.respond = f
	rc.mu.Unlock()
}

func (rc *receiver) receipts() []receipt {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]receipt(nil), rc.got...)
}

// waitSlotsFree waits until no job holds a slot of the endpoint's lease.
// A test that moves the clock past LeaseFor waits for it first: a holder
// still finishing (its drain's look) would otherwise find its slot expired
// under it, and another job could take it and send beside the holder.
func (b *bundle) waitSlotsFree(epID string) {
	b.t.Helper()
	var n int
	ok := eventually(wait, func() bool {
		var err error
		n, err = b.h.DB.Count(context.Background(), `SELECT count(*) FROM hookd_endpoint_leases WHERE endpoint_id = $1 AND holder <> 0`, epID)
		if err != nil {
			b.t.Fatal(err)
		}
		return n == 0
	})
	if !ok {
		b.t.Fatalf("%d slots of %s still held after %s", n, epID, wait)
	}
}

// waitForEvent waits until the receiver has a request for the event
// (webhook-id), failing after d, and returns the first.
func (rc *receiver) waitForEvent(t *testing.T, eventID string, d time.Duration) receipt {
	t.Helper()
	deadline := time.After(d)
	for {
		for _, r := range rc.receipts() {
			if r.Header.Get("webhook-id") == eventID {
				return r
			}
		}
		select {
		case <-rc.notify:
		case <-deadline:
			t.Fatalf("receiver got no request for %s within %s (%d requests)", eventID, d, len(rc.receipts()))
		}
	}
}

// waitFor waits until the receiver has at least n requests, failing after d.
func (rc *receiver) waitFor(t *testing.T, n int, d time.Duration) []receipt {
	t.Helper()
	deadline := time.After(d)
	for {
		if got := rc.receipts(); len(got) >= n {
			return got
		}
		select {
		case <-rc.notify:
		case <-deadline:
			t.Fatalf("receiver got %d requests, want %d within %s", len(rc.receipts()), n, d)
		}
	}
}

// bundle is one running hookd with an admin key and a test clock.
type bundle struct {
	t     *testing.T
	h     hookdtest.Hookd
	api   *httptest.Server
	key   string
	clock *clock
	dbc   store.Config
	// wake fires when hookd logs a line, such as a recorded attempt (nil
	// when the test logs hookd elsewhere).
	wake <-chan struct{}
	// logs is what hookd logged (empty when the test logs it elsewhere).
	logs *hookdtest.Logs
}

type setupOpts struct {
	noWork bool
	mutate func(*app.Config)
	// on, when set, is another process on that bundle's database.
	on *bundle
}

// setup starts hookd on backend with owner "acme" and returns an admin key.
func setup(t *testing.T, backend dbtest.Backend, opts ...setupOpts) *bundle {
	t.Helper()
	var o setupOpts
	if len(opts) > 0 {
		o = opts[0]
	}
	var dbc store.Config
	if o.on != nil {
		dbc = o.on.dbc
	} else {
		dbc = backend.Config(t)
	}
	clk := &clock{}
	cfg := hookdtest.Config(dbc)
	cfg.Work = !o.noWork
	cfg.Now = clk.Now
	cfg.BusySnooze = 100 * time.Millisecond
	logs := hookdtest.NewLogs()
	ours := logs.Logger(slog.LevelInfo)
	cfg.Log = ours
	if o.mutate != nil {
		o.mutate(&cfg)
	}
	var wake <-chan struct{}
	if cfg.Log == ours {
		wake = logs.Wrote()
	}
	h, api := hookdtest.Start(t, cfg)
	ctx := context.Background()
	key, err := h.CreateAPIKey(ctx, "acme", "admin")
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{t: t, h: h, api: api, key: key, clock: clk, dbc: dbc, wake: wake, logs: logs}
}

// do sends a JSON request with the admin key and decodes the answer into out
// (when non-nil); it returns the status.
func (b *bundle) do(method, path string, body any, out any, header ...string) int {
	b.t.Helper()
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		rd = bytes.NewBufferString(v)
	default:
		buf, _ := json.Marshal(v)
		rd = bytes.NewReader(buf)
	}
	req, _ := http.NewRequest(method, b.api.URL+path, rd)
	req.Header.Set("Authorization", "Bearer "+b.key)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			b.t.Fatalf("%s %s: decode %q: %v", method, path, raw, err)
		}
	}
	return resp.StatusCode
}

// must is do that fails the test unless the status is want.
func (b *bundle) must(want int, method, path string, body any, out any, header ...string) {
	b.t.Helper()
	var raw json.RawMessage
	got := b.do(method, path, body, &raw, header...)
	if got != want {
		b.t.Fatalf("%s %s: status %d, want %d: %s", method, path, got, want, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			b.t.Fatalf("decode: %v", err)
		}
	}
}

type endpointOut struct {
	ID             string     `json:"id"`
	URL            string     `json:"url"`
	Secret         string     `json:"secret"`
	State          string     `json:"state"`
	Enabled        bool       `json:"enabled"`
	DisabledReason string     `json:"disabled_reason"`
	FailingSince   *time.Time `json:"failing_since"`
}

type deliveryOut struct {
	ID            string     `json:"id"`
	EventID       string     `json:"event_id"`
	EventType     string     `json:"event_type"`
	JobID         int64      `json:"job_id"`
	JobURL        string     `json:"job_url"`
	State         string     `json:"state"`
	Attempts      int        `json:"attempts"`
	LastStatus    int        `json:"last_status"`
	LastError     string     `json:"last_error"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
}

// registerType makes typ a webhook-exposed type.
func (b *bundle) registerType(typ string) {
	b.t.Helper()
	b.must(200, "PUT", "/api/admin/event_types/"+typ, map[string]string{"exposure": "webhook"}, nil)
}

// endpoint creates an endpoint on url for globs.
func (b *bundle) endpoint(url string, globs ...string) endpointOut {
	b.t.Helper()
	var ep endpointOut
	b.must(201, "POST", "/api/admin/webhooks", map[string]any{"url": url, "event_types": globs}, &ep)
	return ep
}

// publish publishes one event and returns its id.
func (b *bundle) publish(typ string, data string, header ...string) string {
	b.t.Helper()
	var out struct {
		ID string `json:"id"`
	}
	b.must(202, "POST", "/api/v1/events", map[string]any{"type": typ, "subject": "test://x", "data": json.RawMessage(data)}, &out, header...)
	return out.ID
}

func (b *bundle) deliveries(epID string) []deliveryOut {
	b.t.Helper()
	var out struct {
		Data []deliveryOut `json:"data"`
	}
	b.must(200, "GET", "/api/admin/webhooks/"+epID+"/deliveries", nil, &out)
	return out.Data
}

// eventually checks cond every 20 ms until it holds (true) or d has passed
// (false). For state hookd keeps in its database, which changes without a
// signal a test could wait on.
func eventually(d time.Duration, cond func() bool) bool {
	return hookdtest.WaitFor(d, nil, cond)
}

// waitDelivery checks an endpoint's delivery of eventID until cond holds
// (bounded by d): the engine settles after the receiver answers, and logs
// the attempt once it is recorded, so each log line wakes the check.
func (b *bundle) waitDelivery(epID, eventID string, d time.Duration, cond func(deliveryOut) bool) deliveryOut {
	b.t.Helper()
	var last deliveryOut
	ok := hookdtest.WaitFor(d, b.wake, func() bool {
		for _, dl := range b.deliveries(epID) {
			if dl.EventID == eventID {
				last = dl
				return cond(dl)
			}
		}
		return false
	})
	if !ok {
		b.t.Fatalf("delivery of %s to %s never reached the expected state; last: %+v", eventID, epID, last)
	}
	return last
}

func (b *bundle) getEndpoint(id string) endpointOut {
	b.t.Helper()
	var ep endpointOut
	b.must(200, "GET", "/api/admin/webhooks/"+id, nil, &ep)
	return ep
}

// verify checks a receipt's Standard Webhooks signature with secret.
func verify(t *testing.T, secret string, r receipt) webhook.Event {
	t.Helper()
	v, err := webhook.NewVerifier(secret)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := v.Verify(r.Header, r.Body)
	if err != nil {
		t.Fatalf("signature does not verify: %v (headers %v)", err, r.Header)
	}
	return ev
}

// forBackend runs f as a subtest on each engine.
func forBackend(t *testing.T, f func(t *testing.T, backend dbtest.Backend)) {
	for _, backend := range dbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			t.Parallel()
			f(t, backend)
		})
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
