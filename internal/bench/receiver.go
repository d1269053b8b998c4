package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookd/hookd/webhook"
)

// receiver is the endpoints' server on 127.0.0.1: it verifies every
// signature, records every receipt with its arrival time and answers 200
// after a delay. Endpoint j is path /e/j.
type receiver struct {
	plan  *plan
	delay time.Duration
	srv   *http.Server
	url   string
	// verify[j] checks a request to endpoint j and returns its delivery id
	// (webhook-id or X-Kwork-Delivery) and event data. Set by register
	// before any event is published; read-only afterwards.
	verify []func(h http.Header, body []byte) (id string, data json.RawMessage, err error)
	// inFlight[j] is how many requests endpoint j is serving now.
	inFlight    []atomic.Int32
	maxInFlight atomic.Int32 // the most any endpoint served at once

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced when unique grows
	seed     maphash.Seed
	ids      map[receiptKey]struct{} // (delivery id, endpoint) seen
	pairs    []uint64                // bitset over seq*endpoints+ep
	unique   int                     // pairs received at least once
	requests int
	dups     int // a (delivery id, endpoint) seen again
	redone   int // a pair seen again under another delivery id
	bad      int // signature or body rejected
	stray    int // a pair that must not arrive (another owner's event)
	warm     int // warm-up receipts (counted apart, in no figure)
	latency  []time.Duration
	first    time.Time
	last     time.Time
}

// receiptKey is a receipt's dedupe key: a hash of its delivery id, and the
// endpoint. 64 bits of hash keep a million receipts in a few tens of MB.
type receiptKey struct {
	id uint64
	ep int32
}

func startReceiver(p *plan, delay time.Duration) (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{
		plan: p, delay: delay, url: "http://" + ln.Addr().String(),
		verify:   make([]func(http.Header, []byte) (string, json.RawMessage, error), p.endpoints),
		inFlight: make([]atomic.Int32, p.endpoints),
		changed:  make(chan struct{}),
		seed:     maphash.MakeSeed(),
		ids:      make(map[receiptKey]struct{}, p.expected),
		pairs:    make([]uint64, (p.events*p.endpoints+63)/64),
		latency:  make([]time.Duration, 0, p.expected),
	}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *receiver) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.srv.Shutdown(ctx)
}

func (r *receiver) endpointURL(j int) string { return r.url + "/e/" + strconv.Itoa(j) }

// register gives endpoint j its secret.
func (r *receiver) register(j int, secret string) error {
	if r.plan.profile == ProfileKwork {
		r.verify[j] = func(h http.Header, body []byte) (string, json.RawMessage, error) {
			ev, err := webhook.VerifyWebhook(body, h.Get(webhook.HeaderKworkSignature), secret, webhook.DefaultTolerance)
			return h.Get(webhook.HeaderKworkDelivery), ev.Data, err
		}
		return nil
	}
	v, err := webhook.NewVerifier(secret)
	if err != nil {
		return fmt.Errorf("endpoint %d secret: %w", j, err)
	}
	r.verify[j] = func(h http.Header, body []byte) (string, json.RawMessage, error) {
		ev, err := v.Verify(h, body)
		return h.Get(webhook.HeaderID), ev.Data, err
	}
	return nil
}

// payload is what the bench puts in every event's data.
type payload struct {
	Seq int   `json:"seq"`
	TS  int64 `json:"ts"` // publish time, Unix ns
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	arrived := time.Now()
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	ep, perr := strconv.Atoi(strings.TrimPrefix(req.URL.Path, "/e/"))
	if err != nil || perr != nil || ep < 0 || ep >= len(r.verify) || r.verify[ep] == nil {
		r.count(func() { r.bad++ })
		http.Error(w, "unknown endpoint", http.StatusNotFound)
		return
	}
	n := r.inFlight[ep].Add(1)
	defer r.inFlight[ep].Add(-1)
	for m := r.maxInFlight.Load(); n > m; m = r.maxInFlight.Load() {
		if r.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	if err := r.accept(ep, req.Header, body, arrived); err != nil {
		http.Error(w, fmt.Sprintf("rejected: %v", err), http.StatusBadRequest)
		return
	}
	if r.delay > 0 {
		select {
		case <-time.After(r.delay):
		case <-req.Context().Done():
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}

// accept verifies a message to endpoint ep (a request, or one a broker
// consumer read) and records it; a message that does not verify counts as
// bad.
func (r *receiver) accept(ep int, h http.Header, body []byte, arrived time.Time) error {
	if ep < 0 || ep >= len(r.verify) || r.verify[ep] == nil {
		r.count(func() { r.bad++ })
		return fmt.Errorf("unknown endpoint %d", ep)
	}
	id, data, err := r.verify[ep](h, body)
	var pl payload
	if err == nil {
		err = json.Unmarshal(data, &pl)
	}
	if err == nil && id == "" {
		err = errors.New("no delivery id")
	}
	if err != nil {
		r.count(func() { r.bad++ })
		return err
	}
	r.record(ep, id, pl, arrived)
	return nil
}

func (r *receiver) count(f func()) {
	r.mu.Lock()
	r.requests++
	f()
	r.mu.Unlock()
}

func (r *receiver) record(ep int, id string, pl payload, at time.Time) {
	key := receiptKey{id: maphash.String(r.seed, id), ep: int32(ep)}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	if _, seen := r.ids[key]; seen {
		r.dups++
		return
	}
	r.ids[key] = struct{}{}
	if r.plan.warm(pl.Seq) {
		r.requests-- // not part of the measured run
		r.warm++
		close(r.changed)
		r.changed = make(chan struct{})
		return
	}
	if !r.plan.pairExpected(pl.Seq, ep) {
		r.stray++
		return
	}
	bit := pl.Seq*r.plan.endpoints + ep
	if r.pairs[bit/64]&(1<<(bit%64)) != 0 {
		r.redone++
		return
	}
	r.pairs[bit/64] |= 1 << (bit % 64)
	r.unique++
	r.latency = append(r.latency, at.Sub(time.Unix(0, pl.TS)))
	if r.first.IsZero() {
		r.first = at
	}
	r.last = at
	close(r.changed)
	r.changed = make(chan struct{})
}

// wait returns when every expected pair arrived (false), or when none
// arrived for stall or the whole wait took limit (true). tick is told the
// count every few seconds.
func (r *receiver) wait(ctx context.Context, stall, limit time.Duration, tick func(got int)) (stalled bool) {
	return r.waitCount(ctx, stall, limit, func() int { return r.unique }, r.plan.expected, tick)
}

// waitWarm is wait for the warm-up's deliveries.
func (r *receiver) waitWarm(ctx context.Context, stall, limit time.Duration) (stalled bool) {
	return r.waitCount(ctx, stall, limit, func() int { return r.warm }, r.plan.warmExpected, func(int) {})
}

// waitCount waits until count() (read under r.mu) reaches want.
func (r *receiver) waitCount(ctx context.Context, stall, limit time.Duration, count func() int, want int, tick func(got int)) (stalled bool) {
	deadline := time.After(limit)
	report := time.NewTicker(5 * time.Second)
	defer report.Stop()
	timer := time.NewTimer(stall)
	defer timer.Stop()
	for {
		r.mu.Lock()
		got, changed := count(), r.changed
		r.mu.Unlock()
		if got >= want {
			return false
		}
		select {
		case <-changed:
			timer.Reset(stall)
		case <-report.C:
			tick(got)
		case <-timer.C:
			return true
		case <-deadline:
			return true
		case <-ctx.Done():
			return true
		}
	}
}

// fill puts the receiver's figures into res.
func (r *receiver) fill(res *Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res.Received, res.Requests = r.unique, r.requests
	res.Duplicates, res.Redone = r.dups, r.redone
	res.BadSignatures, res.Stray = r.bad, r.stray
	res.Lost = r.plan.expected - r.unique
	res.FirstReceipt, res.LastReceipt = r.first, r.last
	res.MaxInFlight = int(r.maxInFlight.Load())
	res.Latency = percentiles(r.latency)
}

// percentiles of durations (not modified).
func percentiles(durations []time.Duration) Percentiles {
	lat := slices.Clone(durations)
	slices.Sort(lat)
	p := Percentiles{P50: quantile(lat, 0.50), P95: quantile(lat, 0.95), P99: quantile(lat, 0.99)}
	if len(lat) > 0 {
		p.Max = lat[len(lat)-1]
	}
	return p
}

// quantile of sorted values (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
