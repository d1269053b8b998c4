package scaleout

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
)

// The move of one owner from cluster A to cluster B, as the operator's
// tools run it (docs/scale-out.md, "Moving an owner"). Every step is
// idempotent, so a mover that dies anywhere starts again from the first:
//
//  1. copy: the owner's configuration (endpoints with their sealed
//     secrets, keys, types) is written to B, its endpoints held there:
//     B takes deliveries and sends none.
//  2. fence: A refuses the owner's publishes from now on, answering 421
//     with B's address; a request the router sent before the switch is
//     refused, never accepted on the cluster being left.
//  3. keys: A's idempotency keys of the owner are copied to B. After the
//     fence A takes no new one, so the copy is complete: a producer's
//     retry of a publish A accepted is answered with A's event on B.
//  4. switch: the directory sends the owner to B.
//  5. hand over: each of the owner's pending deliveries on A is claimed
//     (taken from A's workers; one in flight is waited for), copied to B
//     (kept if B has it already), and deleted on A.
//  6. release: B's endpoints are let go. An ordered endpoint's deliveries
//     handed over are older than any B took, so it goes on in order.
//  7. history: the owner's finished deliveries and events are copied to B
//     for its log, then the owner is removed from A.
const (
	stepCopy = iota
	stepFence
	stepKeys
	stepSwitch
	stepHandOver
	stepRelease
	stepHistory
	stepDone
)

// MoveConfig sets a simulated move.
type MoveConfig struct {
	Seed      uint64
	Endpoints int // the owner's endpoints; the first is ordered
	Publishes int // the producer's publishes, each with its own idempotency key
	// Resend is the chance a producer sends a publish again with the same
	// key (it lost the answer), at any later moment.
	Resend float64
	// Fail is the chance a delivery attempt fails and is retried.
	Fail float64
	// Crash is the chance the mover dies after any of its steps and
	// starts again from the first.
	Crash float64
	// Stale is the chance a publish goes where the router sent it before
	// the switch (a request in flight, or a router not yet told).
	Stale float64
	// Naive runs a move without the fence, the claim and the hold: the
	// directory is switched and the pending deliveries copied. The model
	// must catch what that breaks, or it proves nothing.
	Naive bool
}

// MoveResult is what the receivers saw.
type MoveResult struct {
	Events        int // distinct events accepted
	Deliveries    int // sends that reached a receiver
	Lost          int // (endpoint, event) pairs never delivered
	Duplicated    int // (endpoint, event) pairs delivered more than once
	DoubleEvents  int // idempotency keys that made more than one event
	OutOfOrder    int // ordered endpoint's sends behind a later event
	Refused       int // publishes answered 421 and sent again by the router
	MoverRestarts int
	Ticks         int
	// HeldMax is the most deliveries B held at once, waiting for the hand
	// over: the owner's delay during the move, in deliveries.
	HeldMax int
}

// OK reports whether the receivers saw every event once, in order.
func (r MoveResult) OK() bool {
	return r.Lost == 0 && r.Duplicated == 0 && r.DoubleEvents == 0 && r.OutOfOrder == 0
}

func (r MoveResult) String() string {
	return fmt.Sprintf("events %d, deliveries %d, lost %d, duplicated %d, double events %d, out of order %d, refused %d, mover restarts %d, ticks %d, held at most %d",
		r.Events, r.Deliveries, r.Lost, r.Duplicated, r.DoubleEvents, r.OutOfOrder, r.Refused, r.MoverRestarts, r.Ticks, r.HeldMax)
}

type dkey struct {
	ep  int
	seq int // the event's order of acceptance: ids are time-ordered
}

type pending struct{ inFlight bool }

type cluster struct {
	hasOwner bool
	fenced   bool
	held     bool
	keys     map[string]int // idempotency key → event
	pending  map[dkey]*pending
	done     map[dkey]bool
}

func newCluster(owner bool) *cluster {
	return &cluster{hasOwner: owner, keys: map[string]int{}, pending: map[dkey]*pending{}, done: map[dkey]bool{}}
}

type world struct {
	cfg      MoveConfig
	r        *rand.Rand
	a, b     *cluster
	dir, old *cluster // the directory's cluster for the owner, and the one before the switch
	events   int
	seqOf    map[string][]int // key → events made for it (more than one is a defect)
	queue    []string         // publishes to send (keys), resends included
	sent     map[dkey]int
	order    []int // the ordered endpoint's sends, by event
	step     int
	res      MoveResult
}

// SimulateMove runs one move under load and reports what receivers saw.
func SimulateMove(cfg MoveConfig) MoveResult {
	w := &world{cfg: cfg, r: rng(cfg.Seed), a: newCluster(true), b: newCluster(false), seqOf: map[string][]int{}, sent: map[dkey]int{}}
	w.dir, w.old = w.a, w.a
	for i := range cfg.Publishes {
		w.queue = append(w.queue, "key-"+strconv.Itoa(i))
	}
	const maxTicks = 1_000_000
	for w.res.Ticks = 0; w.res.Ticks < maxTicks && !w.quiet(); w.res.Ticks++ {
		switch n := w.r.IntN(10); {
		case n < 3:
			w.publish()
		case n < 5:
			w.moverStep()
		default:
			w.work(w.a)
			w.work(w.b)
		}
		w.res.HeldMax = max(w.res.HeldMax, w.heldOnB())
	}
	w.tally()
	return w.res
}

func (w *world) quiet() bool {
	return len(w.queue) == 0 && w.step == stepDone && len(w.a.pending) == 0 && len(w.b.pending) == 0
}

func (w *world) heldOnB() int {
	if !w.b.held {
		return 0
	}
	return len(w.b.pending)
}

// publish sends the next queued publish where the router says.
func (w *world) publish() {
	if len(w.queue) == 0 {
		return
	}
	i := w.r.IntN(len(w.queue))
	key := w.queue[i]
	c := w.dir
	if w.r.Float64() < w.cfg.Stale {
		c = w.old
	}
	if !c.hasOwner || c.fenced {
		w.res.Refused++ // 421: the router asks the directory again; the publish stays queued
		return
	}
	w.queue = slices.Delete(w.queue, i, i+1)
	if _, ok := c.keys[key]; ok {
		return // the earlier event's answer
	}
	seq := w.events
	w.events++
	c.keys[key] = seq
	w.seqOf[key] = append(w.seqOf[key], seq)
	for ep := range w.cfg.Endpoints {
		c.pending[dkey{ep, seq}] = &pending{}
	}
	if w.r.Float64() < w.cfg.Resend {
		w.queue = append(w.queue, key)
	}
}

// work runs one step of one of c's workers: start an attempt, or finish one.
func (w *world) work(c *cluster) {
	keys := c.sorted()
	if c.held { // no attempt starts; one in flight ends
		keys = slices.DeleteFunc(keys, func(k dkey) bool { return !c.pending[k].inFlight })
	}
	if len(keys) == 0 {
		return
	}
	k := keys[w.r.IntN(len(keys))]
	if k.ep == 0 {
		k, _ = c.head() // the ordered endpoint: its oldest, one at a time
	}
	p := c.pending[k]
	if !p.inFlight {
		if !c.held {
			p.inFlight = true
		}
		return
	}
	if w.r.Float64() < w.cfg.Fail {
		p.inFlight = false // a retry, later
		return
	}
	w.send(k)
	delete(c.pending, k)
	c.done[k] = true
}

// send is a request that reached its receiver.
func (w *world) send(k dkey) {
	w.sent[k]++
	w.res.Deliveries++
	if k.ep == 0 {
		w.order = append(w.order, k.seq)
	}
}

// sorted returns c's pending deliveries by endpoint, then event: map
// order would make a seed's run unrepeatable.
func (c *cluster) sorted() []dkey {
	keys := make([]dkey, 0, len(c.pending))
	for k := range c.pending {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y dkey) int {
		if x.ep != y.ep {
			return x.ep - y.ep
		}
		return x.seq - y.seq
	})
	return keys
}

// head is the ordered endpoint's oldest pending delivery on c.
func (c *cluster) head() (dkey, bool) {
	keys := c.sorted()
	if len(keys) == 0 || keys[0].ep != 0 {
		return dkey{}, false
	}
	return keys[0], true
}

// moverStep runs the mover's next step, or dies after it.
func (w *world) moverStep() {
	if w.step == stepDone {
		return
	}
	if w.cfg.Naive {
		w.naiveStep()
		return
	}
	switch w.step {
	case stepCopy:
		w.b.hasOwner, w.b.held = true, true
		w.step++
	case stepFence:
		w.a.fenced = true
		w.step++
	case stepKeys:
		for k, v := range w.a.keys {
			w.b.keys[k] = v
		}
		w.step++
	case stepSwitch:
		w.old, w.dir = w.a, w.b
		w.step++
	case stepHandOver:
		if !w.handOver() {
			return // waits for a delivery in flight on A
		}
		if len(w.a.pending) == 0 {
			w.step++
		}
	case stepRelease:
		w.b.held = false
		w.step++
	case stepHistory:
		for k := range w.a.done {
			w.b.done[k] = true
		}
		w.step++
	}
	if w.step != stepDone && w.r.Float64() < w.cfg.Crash {
		w.step = stepCopy // the mover's memory is gone; what it wrote stays
		w.res.MoverRestarts++
	}
}

// handOver moves A's pending deliveries of the owner to B, one
// idempotent sub-step a call: hold A (no attempt starts there; one in
// flight ends), then copy each (kept if B has it) and delete it on A. It
// reports false while an attempt is in flight on A.
func (w *world) handOver() bool {
	w.a.held = true
	keys := w.a.sorted()
	for _, k := range keys {
		if w.a.pending[k].inFlight {
			return false
		}
	}
	if len(keys) == 0 {
		return true
	}
	k := keys[0]
	if _, copied := w.b.pending[k]; !copied && !w.b.done[k] {
		w.b.pending[k] = &pending{}
		return true
	}
	delete(w.a.pending, k)
	return true
}

// naiveStep: copy the configuration and keys, switch, copy the pending
// deliveries, delete them on A. No fence, no claim, no hold.
func (w *world) naiveStep() {
	switch w.step {
	case stepCopy:
		w.b.hasOwner = true
		for k, v := range w.a.keys {
			w.b.keys[k] = v
		}
		w.old, w.dir = w.a, w.b
		w.step = stepHandOver
	case stepHandOver:
		keys := w.a.sorted()
		if len(keys) == 0 {
			w.a.hasOwner = false
			w.step = stepDone
			return
		}
		k := keys[0]
		p := w.a.pending[k]
		w.b.pending[k] = &pending{}
		delete(w.a.pending, k)
		if p.inFlight && w.r.Float64() >= w.cfg.Fail {
			w.send(k) // the request was on the wire: deleting the row does not stop it
		}
	}
}

func (w *world) tally() {
	w.res.Events = w.events
	for seq := range w.events {
		for ep := range w.cfg.Endpoints {
			switch n := w.sent[dkey{ep, seq}]; {
			case n == 0:
				w.res.Lost++
			case n > 1:
				w.res.Duplicated++
			}
		}
	}
	for _, seqs := range w.seqOf {
		if len(seqs) > 1 {
			w.res.DoubleEvents++
		}
	}
	for i := 1; i < len(w.order); i++ {
		if w.order[i] < w.order[i-1] {
			w.res.OutOfOrder++
		}
	}
	if !w.quiet() {
		w.res.Lost += len(w.a.pending) + len(w.b.pending) // never converged: name it as lost
	}
}
