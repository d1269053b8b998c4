package e2e_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookd/hookd"
	"github.com/hookd/hookd/internal/app"
	"github.com/hookd/hookd/internal/dbtest"
)

// Isolation (docs/design.md, "Isolation"): one owner's dead or slow
// receivers never hold the workers another owner's deliveries need.

// isoWorkers is the healthy lane's workers in these tests: as many as the
// noisy owner has dead endpoints, so without the owner's share and the
// slow lane its first attempts take every worker. isoSlowWorkers is the
// slow lane's. An owner whose endpoints nobody knows yet to be dead holds
// at most isoHold of them at once: its share of the healthy lane, and the
// slow lane, where its overflow runs uncapped until its endpoints are
// known slow (docs/design.md, "Isolation").
const (
	isoWorkers     = 6
	isoSlowWorkers = 2
	isoHold        = isoWorkers/2 + isoSlowWorkers
)

// isoConfig gives the tests an HTTP timeout longer than any of them
// waits, so a dead receiver's attempts hang, each holding its worker,
// until the test releases them: what the tests assert is who got a
// worker meanwhile, not how fast (the figures are the bench's: hookd
// bench --noisy, docs/performance.md).
func isoConfig(share float64) func(*app.Config) {
	return func(c *app.Config) {
		c.Workers, c.SlowWorkers = isoWorkers, isoSlowWorkers
		c.OwnerShare = share
		c.HTTPTimeout, c.JobTimeout, c.LeaseFor = 30*time.Second, 35*time.Second, 40*time.Second
		c.RescueStuckJobsAfter = 90 * time.Second
	}
}

// hangingReceiver answers nothing until the test releases it (then 204)
// or the request is abandoned; it counts requests per webhook-id, those
// hanging now and the most that hung at once.
type hangingReceiver struct {
	*httptest.Server
	hanging, most atomic.Int32
	release       chan struct{}
	releaseOnce   sync.Once
	mu            sync.Mutex
	attempts      map[string]int
}

func newHangingReceiver(t *testing.T) *hangingReceiver {
	hr := &hangingReceiver{attempts: map[string]int{}, release: make(chan struct{})}
	hr.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // so an abandoned request is noticed
		hr.mu.Lock()
		hr.attempts[r.Header.Get("webhook-id")]++
		hr.mu.Unlock()
		n := hr.hanging.Add(1)
		defer hr.hanging.Add(-1)
		for {
			m := hr.most.Load()
			if n <= m || hr.most.CompareAndSwap(m, n) {
				break
			}
		}
		select {
		case <-r.Context().Done():
		case <-hr.release:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	t.Cleanup(func() { hr.free(); hr.Close() })
	return hr
}

// free lets every hanging request, and every later one, answer 204.
func (hr *hangingReceiver) free() { hr.releaseOnce.Do(func() { close(hr.release) }) }

func (hr *hangingReceiver) requests() int {
	hr.mu.Lock()
	defer hr.mu.Unlock()
	n := 0
	for _, c := range hr.attempts {
		n += c
	}
	return n
}

// ownerBundle is b acting as another owner: the same hookd, that owner's
// admin key.
func ownerBundle(b *bundle, owner string) *bundle {
	b.t.Helper()
	key, err := b.h.CreateAPIKey(context.Background(), owner, "admin")
	if err != nil {
		b.t.Fatal(err)
	}
	o := *b
	o.key = key
	return &o
}

// calmLatencies publishes n events as calm, one every gap, to its one
// healthy endpoint, waits for each (up to wait) and returns each one's
// publish → receipt time, sorted.
func calmLatencies(t *testing.T, calm *bundle, rc *receiver, n int, gap, wait time.Duration) []time.Duration {
	t.Helper()
	type sent struct {
		id string
		at time.Time
	}
	var published []sent
	for i := range n {
		at := time.Now()
		published = append(published, sent{calm.publish("calm.ping", fmt.Sprintf(`{"n":%d}`, i)), at})
		time.Sleep(gap) //nolint:forbidigo // the publisher's pace is the scenario (10 events a second), not a wait for hookd
	}
	var out []time.Duration
	for _, p := range published {
		r := rc.waitForEvent(t, p.id, wait)
		out = append(out, r.At.Sub(p.at))
	}
	slices.Sort(out)
	return out
}

// deadOwner is the scenario at a smaller size in the same
// proportion: the noisy owner (acme) has as many dead endpoints as the
// process has healthy-lane workers, two deliveries each, published first;
// calm has one healthy endpoint.
type deadOwner struct {
	b, calm *bundle
	dead    *hangingReceiver
	rc      *receiver
	noisy   []endpointOut
	events  []string
}

// startDeadOwner starts the scenario on processes hookd processes on one
// database (each with isoWorkers healthy-lane workers; the noisy owner has
// as many dead endpoints as all of them together).
func startDeadOwner(t *testing.T, backend dbtest.Backend, share float64, processes int) *deadOwner {
	s := &deadOwner{b: setup(t, backend, setupOpts{mutate: isoConfig(share)})}
	for range processes - 1 {
		setup(t, backend, setupOpts{on: s.b, mutate: isoConfig(share)})
	}
	s.b.registerType("noisy.thing")
	s.dead = newHangingReceiver(t)
	for i := range isoWorkers * processes {
		s.noisy = append(s.noisy, s.b.endpoint(fmt.Sprintf("%s/dead/%d", s.dead.URL, i), "noisy.*"))
	}
	s.calm = ownerBundle(s.b, "calm")
	s.calm.registerType("calm.ping")
	s.rc = newReceiver(t)
	s.calm.endpoint(s.rc.URL, "calm.*")
	for i := range 2 {
		s.events = append(s.events, s.b.publish("noisy.thing", fmt.Sprintf(`{"n":%d}`, i)))
	}
	// Calm starts once noisy's first attempts hang.
	if !eventually(20*time.Second, func() bool { return s.dead.hanging.Load() > 0 }) {
		t.Fatal("noisy's first attempts never reached the dead receiver")
	}
	return s
}

// TestDeadOwnerDoesNotStallOthers: while noisy's attempts hang (none
// ends: hookd's timeout is longer than the test), calm publishes ten
// events at 10/s and every one is delivered; noisy never holds more than
// its share of the workers; once its receiver answers, every noisy
// delivery is delivered. TestDeadOwnerControl shows the scenario takes
// every worker without the share.
func TestDeadOwnerDoesNotStallOthers(t *testing.T) {
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		s := startDeadOwner(t, backend, hookd.DefaultOwnerShare, 1)
		lat := calmLatencies(t, s.calm, s.rc, 10, 100*time.Millisecond, 30*time.Second)
		hanging, tried := s.dead.hanging.Load(), s.dead.requests()
		t.Logf("calm publish → receipt: p50 %s, max %s, beside %d of noisy's attempts hanging", lat[len(lat)/2], lat[len(lat)-1], hanging)
		if int(hanging) != tried {
			t.Fatalf("%d of noisy's %d attempts ended before calm was delivered: calm waited for them, or they were not hanging", tried-int(hanging), tried)
		}
		if most := s.dead.most.Load(); int(most) != isoHold {
			t.Fatalf("noisy held %d workers at most; want its share of the healthy lane and the slow lane, %d of %d", most, isoHold, isoWorkers+isoSlowWorkers)
		}
		checkOperatorSeesNoisy(t, s.b)
		// Every noisy delivery gets its attempt once its receiver
		// answers: nothing was dropped by the snoozes and lanes.
		s.dead.free()
		for _, ep := range s.noisy {
			for _, id := range s.events {
				s.b.waitDelivery(ep.ID, id, 60*time.Second, func(d deliveryOut) bool { return d.State == "delivered" })
			}
		}
	})
}

// TestDeadOwnerAcrossProcesses: two processes on one PostgreSQL
// database, the noisy owner with as many dead endpoints as both have
// workers: it holds at most its share of each process's healthy lane
// and the slow lane, and calm's events are delivered while its attempts
// hang.
func TestDeadOwnerAcrossProcesses(t *testing.T) {
	t.Parallel()
	s := startDeadOwner(t, dbtest.Backends()[1], hookd.DefaultOwnerShare, 2)
	lat := calmLatencies(t, s.calm, s.rc, 10, 100*time.Millisecond, 30*time.Second)
	hanging, tried := s.dead.hanging.Load(), s.dead.requests()
	t.Logf("two processes: calm publish → receipt p50 %s, max %s, beside %d of noisy's attempts hanging", lat[len(lat)/2], lat[len(lat)-1], hanging)
	if int(hanging) != tried {
		t.Fatalf("%d of noisy's %d attempts ended before calm was delivered", tried-int(hanging), tried)
	}
	// At most: a fanout places the jobs past the owner's share in the
	// slow lane by its own process's count, so the other process's share
	// of the healthy lane may stay partly unused.
	if most, bound := int(s.dead.most.Load()), 2*isoHold; most > bound || most <= isoHold {
		t.Fatalf("noisy held %d workers at most across the two processes; want more than one process's hold (%d) and at most each process's share of the healthy lane and its slow lane, %d", most, isoHold, bound)
	}
}

// TestDeadOwnerControl runs the scenario without an owner share
// (OwnerShare 1): noisy's first attempts take every worker, and calm's
// event is not delivered until they end. It is the proof that the
// scenario can fail TestDeadOwnerDoesNotStallOthers.
func TestDeadOwnerControl(t *testing.T) {
	t.Parallel()
	s := startDeadOwner(t, dbtest.Backends()[0], 1, 1)
	if !eventually(20*time.Second, func() bool { return s.dead.hanging.Load() == isoWorkers }) {
		t.Fatalf("without a share noisy holds %d of %d workers; the scenario no longer takes them all, so the isolation test proves nothing", s.dead.hanging.Load(), isoWorkers)
	}
	id := s.calm.publish("calm.ping", `{"n":0}`)
	// Calm's fanout and delivery take milliseconds when a worker is free;
	// none is, for as long as noisy's attempts hang.
	time.Sleep(2 * time.Second) //nolint:forbidigo // waiting for something that must not happen: nothing to signal
	if n := len(s.rc.receipts()); n != 0 {
		t.Fatalf("calm got %d requests while every worker was held: the control no longer stalls", n)
	}
	s.dead.free()
	s.rc.waitForEvent(t, id, 30*time.Second)
}

// TestSlowOwnerDoesNotStallOthers: one owner with more endpoints than the
// process has workers, each answering but slowly (past SlowAfter), beside
// four owners with one healthy endpoint each publishing at 10/s. The slow
// receiver answers nothing until the healthy owners' events have all
// arrived, so none of them can have waited for a slow answer (what is
// asserted is who got a worker, not how fast: the machine's load decides
// that); then every slow delivery arrives, and the slow endpoints end in
// the slow lane.
func TestSlowOwnerDoesNotStallOthers(t *testing.T) {
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		const slowEndpoints, slowest = 2 * isoWorkers, 1200 * time.Millisecond
		b := setup(t, backend, setupOpts{mutate: func(c *app.Config) {
			isoConfig(hookd.DefaultOwnerShare)(c)
			c.SlowWorkers = slowEndpoints
			c.SlowAfter = time.Second
		}})
		b.registerType("bulk.thing")
		release := make(chan struct{})
		var answered atomic.Int32
		slow := newReceiver(t)
		slow.setRespond(func(r *http.Request, _ int) (int, http.Header) {
			began := time.Now()
			select { // answers once released, and never in under 1.2 s
			case <-release:
			case <-r.Context().Done():
				return http.StatusServiceUnavailable, nil
			}
			select {
			case <-time.After(slowest - time.Since(began)):
			case <-r.Context().Done():
			}
			answered.Add(1)
			return http.StatusNoContent, nil
		})
		for i := range slowEndpoints {
			b.endpoint(fmt.Sprintf("%s/slow/%d", slow.URL, i), "bulk.*")
		}
		b.publish("bulk.thing", `{"n":0}`)
		if !eventually(20*time.Second, func() bool { return slow.inFlight.Load() > 0 }) {
			t.Fatal("the slow owner's attempts never started")
		}
		var (
			mu    sync.Mutex
			worst time.Duration
			wg    sync.WaitGroup
		)
		for i := range 4 {
			calm := ownerBundle(b, fmt.Sprintf("healthy%d", i))
			calm.registerType("calm.ping")
			rc := newReceiver(t)
			calm.endpoint(rc.URL, "calm.*")
			wg.Go(func() {
				lat := calmLatencies(t, calm, rc, 5, 100*time.Millisecond, 30*time.Second)
				mu.Lock()
				worst = max(worst, lat[len(lat)-1])
				mu.Unlock()
			})
		}
		wg.Wait()
		t.Logf("healthy owners' slowest publish → receipt: %s, beside the slow owner's %d attempts in flight", worst, slow.inFlight.Load())
		if n := answered.Load(); n != 0 {
			t.Fatalf("%d slow answers came before the healthy owners were served", n)
		}
		close(release)
		slow.waitFor(t, slowEndpoints, 60*time.Second)
		ok := eventually(30*time.Second, func() bool {
			n, err := b.h.DB.Count(context.Background(), `SELECT count(*) FROM hookd_endpoints WHERE owner_id = 'acme' AND slow_since IS NOT NULL`)
			if err != nil {
				t.Fatal(err)
			}
			return n == slowEndpoints
		})
		if !ok {
			t.Fatalf("not every one of the slow owner's %d endpoints is in the slow lane", slowEndpoints)
		}
	})
}

// TestEndpointLeavesSlowLane: an endpoint whose attempt timed out is in
// the slow lane with its waiting deliveries; once it answers fast again
// it leaves it, and so do its deliveries still waiting.
func TestEndpointLeavesSlowLane(t *testing.T) {
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend, setupOpts{mutate: func(c *app.Config) {
			isoConfig(hookd.DefaultOwnerShare)(c)
			c.HTTPTimeout = 1500 * time.Millisecond
			c.SlowAfter = time.Second
		}})
		b.registerType("lane.thing")
		var slowNow atomic.Bool
		slowNow.Store(true)
		rc := newReceiver(t)
		rc.setRespond(func(r *http.Request, _ int) (int, http.Header) {
			if slowNow.Load() {
				<-r.Context().Done() // hangs past hookd's timeout
				return http.StatusServiceUnavailable, nil
			}
			return http.StatusNoContent, nil
		})
		ep := b.endpoint(rc.URL, "lane.*")
		first := b.publish("lane.thing", `{"n":0}`)
		rc.waitFor(t, 1, 10*time.Second)
		second := b.publish("lane.thing", `{"n":1}`)
		inSlowLane := func(eventID string) bool {
			return eventually(10*time.Second, func() bool {
				n, err := b.h.DB.Count(context.Background(), `SELECT count(*) FROM river_job j JOIN hookd_deliveries d ON d.job_id = j.id
					WHERE d.endpoint_id = $1 AND d.event_id = $2 AND j.queue = 'deliver_slow'`, ep.ID, eventID)
				if err != nil {
					t.Fatal(err)
				}
				return n == 1
			})
		}
		// The timeout moves the endpoint, its retry and the delivery
		// waiting behind it to the slow lane.
		if !inSlowLane(first) {
			t.Fatal("the timed-out delivery's retry is not in the slow lane")
		}
		if !inSlowLane(second) {
			t.Fatal("the delivery waiting behind the timeout is not in the slow lane")
		}
		slowNow.Store(false)
		b.waitDelivery(ep.ID, first, 10*time.Second, func(d deliveryOut) bool { return d.Attempts == 1 })
		b.must(202, "POST", "/api/admin/webhooks/"+ep.ID+"/retry_now", nil, nil) // not the 5 s backoff
		rc.waitForEvent(t, second, 30*time.Second)
		b.waitDelivery(ep.ID, first, 30*time.Second, func(d deliveryOut) bool { return d.State == "delivered" })
		b.waitDelivery(ep.ID, second, 30*time.Second, func(d deliveryOut) bool { return d.State == "delivered" })
		n, err := b.h.DB.Count(context.Background(), `SELECT count(*) FROM hookd_endpoints WHERE id = $1 AND slow_since IS NULL`, ep.ID)
		if err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Fatal("the endpoint answered fast again but is still in the slow lane")
		}
	})
}

// checkOperatorSeesNoisy: while noisy's attempts hang, the operator's
// owners.in_flight names noisy (acme) first.
func checkOperatorSeesNoisy(t *testing.T, b *bundle) {
	t.Helper()
	key, err := b.h.CreateAPIKey(context.Background(), "", "operator")
	if err != nil {
		t.Fatal(err)
	}
	op := *b
	op.key = key
	var got struct {
		Data []struct {
			OwnerID  string `json:"owner_id"`
			Lane     string `json:"lane"`
			InFlight int    `json:"in_flight"`
		} `json:"data"`
	}
	op.must(200, "GET", "/api/admin/in_flight?limit=5", nil, &got)
	if len(got.Data) == 0 || got.Data[0].OwnerID != "acme" || got.Data[0].InFlight < 1 {
		t.Fatalf("owners.in_flight = %+v; want the noisy owner (acme) first while its attempts hang", got.Data)
	}
	if code := op.do("GET", "/api/admin/in_flight?limit=500", nil, nil); code != 422 {
		t.Fatalf("owners.in_flight with limit 500 answered %d, want 422", code)
	}
	if code := b.do("GET", "/api/admin/in_flight", nil, nil); code != 403 {
		t.Fatalf("owners.in_flight with an owner's admin key answered %d, want 403", code)
	}
}
