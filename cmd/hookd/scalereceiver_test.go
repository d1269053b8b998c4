package main

// The scale-out receiver: verifies every signature, counts unique pairs and
// duplicates, and watches per-endpoint concurrency.

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/webhook"
)

type scaleReceiver struct {
	srv       *httptest.Server
	mu        sync.Mutex
	verifiers map[string]*webhook.Verifier // by URL path: one per endpoint
	seen      map[string]map[string]int    // path → webhook-id → times received
	inFlight  map[string]int
	maxFlight map[string]int
	requests  int
	badSigs   int
	firstBad  string
}

type scaleSnapshot struct{ unique, requests int }

func newScaleReceiver(t *testing.T) *scaleReceiver {
	r := &scaleReceiver{
		verifiers: map[string]*webhook.Verifier{}, seen: map[string]map[string]int{},
		inFlight: map[string]int{}, maxFlight: map[string]int{},
	}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *scaleReceiver) serve(w http.ResponseWriter, req *http.Request) {
	path := req.URL.Path
	r.mu.Lock()
	r.inFlight[path]++
	r.maxFlight[path] = max(r.maxFlight[path], r.inFlight[path])
	v := r.verifiers[path]
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.inFlight[path]--
		r.mu.Unlock()
	}()

	body, err := io.ReadAll(req.Body)
	if err == nil && v == nil {
		err = fmt.Errorf("no endpoint at %s", path)
	}
	if err == nil {
		_, err = v.Verify(req.Header, body)
	}
	// A receiver does some work: it widens the window in which a second
	// delivery to the same endpoint would be seen overlapping.
	time.Sleep(2 * time.Millisecond)

	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	if err != nil {
		r.badSigs++
		if r.firstBad == "" {
			r.firstBad = fmt.Sprintf("%s %s: %v", path, req.Header.Get("webhook-id"), err)
		}
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if r.seen[path] == nil {
		r.seen[path] = map[string]int{}
	}
	r.seen[path][req.Header.Get("webhook-id")]++
	w.WriteHeader(http.StatusNoContent)
}

// register creates one event type and n endpoints (paths /ep/0 … /ep/n-1).
func (r *scaleReceiver) register(t *testing.T, c *scaleClient, n int) {
	t.Helper()
	c.do(t, http.MethodPut, "/api/admin/event_types/order.created", map[string]any{"exposure": "webhook"}, http.StatusOK)
	for i := range n {
		path := fmt.Sprintf("/ep/%d", i)
		out := c.do(t, http.MethodPost, "/api/admin/webhooks", map[string]any{"url": r.srv.URL + path, "event_types": []string{"*"}}, http.StatusCreated)
		secret, _ := out["secret"].(string)
		v, err := webhook.NewVerifier(secret)
		if err != nil {
			t.Fatalf("endpoint %d secret %q: %v", i, secret, err)
		}
		r.mu.Lock()
		r.verifiers[path] = v
		r.mu.Unlock()
	}
}

func (r *scaleReceiver) snapshot() scaleSnapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := scaleSnapshot{requests: r.requests}
	for _, ids := range r.seen {
		s.unique += len(ids)
	}
	return s
}

// waitFor polls until want distinct pairs arrived, failing the test at the
// deadline or as soon as alive finds a dead process.
func (r *scaleReceiver) waitFor(t *testing.T, want int, d time.Duration, alive func(*testing.T)) {
	t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	last, lastAt := -1, time.Now()
	nextLog := time.Now().Add(10 * time.Second)
	for {
		s := r.snapshot()
		if s.unique >= want {
			return
		}
		if s.unique != last {
			last, lastAt = s.unique, time.Now()
		}
		if time.Now().After(nextLog) {
			t.Logf("… %d of %d pairs (%d requests)", s.unique, want, s.requests)
			nextLog = nextLog.Add(10 * time.Second)
		}
		alive(t)
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d pairs delivered by the deadline (no progress for %v); %d requests, %d bad signatures",
				s.unique, want, time.Since(lastAt).Round(time.Second), s.requests, r.badSigs)
		}
		<-tick.C
	}
}

// check asserts what the receiver saw: every (event, endpoint) pair of
// events [0, events), at most maxDup extra requests, one request in flight
// per endpoint at any time, and no bad signature.
func (r *scaleReceiver) check(t *testing.T, events, maxDup int) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.badSigs > 0 {
		t.Errorf("%d deliveries failed verification; first: %s", r.badSigs, r.firstBad)
	}
	unique := 0
	for path := range r.verifiers {
		ids := r.seen[path]
		if len(ids) != events {
			t.Errorf("%s received %d distinct events, want %d", path, len(ids), events)
		}
		unique += len(ids)
		var dups []string
		for id, n := range ids {
			if n > 1 {
				dups = append(dups, fmt.Sprintf("%s×%d", id, n))
			}
		}
		if len(dups) > 0 {
			t.Logf("%s duplicates (receivers dedupe on webhook-id): %v", path, dups)
		}
		if r.maxFlight[path] != 1 {
			t.Errorf("%s had %d deliveries in flight at once, want 1 (the endpoint lease)", path, r.maxFlight[path])
		}
	}
	if dup := r.requests - unique; dup > maxDup {
		t.Errorf("%d duplicate deliveries, want at most %d", dup, maxDup)
	}
}
