package delivery

// Fast path of fanout (fanout.go): one fanout of an owner at a time. The
// plain path is each webhook.fanout job fanning its event out in its own
// transaction, beside the owner's other fanouts; here, for an owner with
// few endpoints, a fanout waits for the one running in this process, which
// takes its event along (takeTurn).

import (
	"context"
	"sync"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/store"
)

// fanoutGates let one fanout of an owner run at a time in this process,
// for owners with few endpoints (takeTurn); fanouts of different owners
// run side by side.
//
// A fanout takes along its owner's other events awaiting fanout (SKIP
// LOCKED) and marks them fanned out. When River hands this process several
// jobs of one owner at once (one per single publish, up to the fanout
// queue's workers), fanouts side by side each lock their own event, take
// along little and run a transaction each. Behind the gate the first takes
// along the events of the jobs that wait for it, and those find their event
// fanned out and end without a transaction of their own. Fanouts in other
// processes still meet at the event's row lock, as before.
//
// An owner whose backlog is longer than a batch (thousands of events
// published in batches) to endpoints that take several deliveries at once
// (kwork's lease slots) is the opposite case. Fanouts side by side each
// lock their own event and take along a whole batch of others, different
// ones (SKIP LOCKED). One at a time they wrote more slowly than the
// endpoint's slot holders sent, so the holders let go between batches, a
// fanout seldom found every slot held and deferred nothing, and every
// delivery's job ran only to find its delivery sent: one hot kwork
// endpoint delivered 0.55x as fast at 1.7x the CPU a delivery. So while
// such an owner's last fanout took a whole batch along (backlogged), its
// fanouts do not wait (takeTurn). With one slot an endpoint (standard),
// the one holder's drain stays behind the fanouts and the jobs are
// deferred: there the turns cost nothing under a backlog and save a
// little (one hot standard endpoint 0.93x as fast without them).
type fanoutGates struct {
	mu    sync.Mutex
	gates map[string]*fanoutGate
	// backlog holds the owners whose last fanout (through a gate or
	// beside it) took along a whole batch of others.
	backlog map[string]bool
}

// fanoutGate is one owner's: a token while a fanout runs, and what the
// fanouts that held it fanned out of the events its waiters wait with.
type fanoutGate struct {
	token chan struct{}
	// The fields below are guarded by fanoutGates.mu.
	users   int             // holding or waiting
	waiting map[string]int  // event id → fanouts waiting with it
	fanned  map[string]bool // events a holder fanned out while one waited
}

// enter waits until no other fanout of ownerID runs in this process, for
// the fanout of eventID. It reports whether it waited, and whether a
// fanout it waited for fanned that event out: then there is nothing left
// to do (leave still follows). onWait (if not nil) runs when it starts
// waiting. An error is ctx's, and then it holds nothing.
func (g *fanoutGates) enter(ctx context.Context, ownerID, eventID string, onWait func()) (waited, fannedOut bool, err error) {
	g.mu.Lock()
	if g.gates == nil {
		g.gates = map[string]*fanoutGate{}
	}
	og := g.gates[ownerID]
	if og == nil {
		og = &fanoutGate{token: make(chan struct{}, 1), waiting: map[string]int{}, fanned: map[string]bool{}}
		g.gates[ownerID] = og
	}
	og.users++
	g.mu.Unlock()
	select {
	case og.token <- struct{}{}:
		return false, false, nil // nobody ahead
	default:
	}
	g.mu.Lock()
	og.waiting[eventID]++
	g.mu.Unlock()
	if onWait != nil {
		onWait()
	}
	select {
	case og.token <- struct{}{}:
	case <-ctx.Done():
		g.mu.Lock()
		og.unwait(eventID)
		g.drop(ownerID, og)
		g.mu.Unlock()
		return true, false, ctx.Err()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	fannedOut = og.fanned[eventID]
	og.unwait(eventID)
	return true, fannedOut, nil
}

// leave ends the fanout of ownerID that entered; f is what it fanned out
// (nothing if it failed or found its event taken along).
func (g *fanoutGates) leave(ownerID string, f fanned) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.note(ownerID, f)
	og := g.gates[ownerID]
	for _, id := range f.done {
		if og.waiting[id] > 0 {
			og.fanned[id] = true
		}
	}
	<-og.token
	g.drop(ownerID, og)
}

// backlogged says whether ownerID's last fanout took along a whole
// batch: then its fanouts run side by side, without entering.
func (g *fanoutGates) backlogged(ownerID string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.backlog[ownerID]
}

// ran records what a fanout of ownerID that did not enter (backlogged)
// fanned out.
func (g *fanoutGates) ran(ownerID string, f fanned) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.note(ownerID, f)
}

// note keeps whether ownerID's backlog is longer than a batch, by what its
// latest fanout took along (g.mu held). A fanout that fanned nothing out
// (it failed, or its event was taken along) says nothing of it.
func (g *fanoutGates) note(ownerID string, f fanned) {
	switch {
	case len(f.done) == 0:
	case f.fullBatch:
		if g.backlog == nil {
			g.backlog = map[string]bool{}
		}
		g.backlog[ownerID] = true
	default:
		delete(g.backlog, ownerID)
	}
}

// unwait removes one waiter of eventID (g.mu held).
func (og *fanoutGate) unwait(eventID string) {
	if og.waiting[eventID]--; og.waiting[eventID] <= 0 {
		delete(og.waiting, eventID)
		delete(og.fanned, eventID)
	}
}

// drop counts one user of og out and forgets og with its last (g.mu held).
func (g *fanoutGates) drop(ownerID string, og *fanoutGate) {
	if og.users--; og.users == 0 {
		delete(g.gates, ownerID)
	}
}

// takeTurn makes the fanout of an owner with few endpoints wait while
// another fanout of that owner runs in this process (fanoutGates), since
// that one can take its event along. Few: so few that one fanout can take
// along a whole batch of others (FanoutBatch events of FanoutPairs
// deliveries at most: 10 endpoints by default). The fanouts of an owner
// with more run side by side as before: one takes along fewer events than
// may wait for it, and the rest would queue. So do the fanouts of an
// owner whose endpoints take several deliveries at once (kwork's lease
// slots) while its backlog is more than a batch (the last fanout took a
// whole batch along; fanoutGates.backlogged): each then takes a whole
// batch of its own, and one at a time they fanned out too slowly to keep
// the slots held (fanout_gate.go). It returns what
// to fan out: read, or read again when it waited, since the endpoints may
// have changed meanwhile; nil when nothing is left to do (the fanout it
// waited for took the event along, or the event is gone). leave, called
// with what the fanout did, ends the turn.
func (s *Service) takeTurn(ctx context.Context, q *store.Q, eventID string, read *store.FanoutRead) (_ *store.FanoutRead, leave func(fanned), err error) {
	leave = func(fanned) {}
	if len(read.Endpoints)*s.cfg.FanoutBatch > s.cfg.FanoutPairs {
		return read, leave, nil
	}
	ownerID := read.Owner.ID
	if s.fanoutGates.backlogged(ownerID) && s.severalInFlight(read.Owner.Profile, read.Endpoints) {
		return read, func(f fanned) { s.fanoutGates.ran(ownerID, f) }, nil
	}
	waited, fannedOut, err := s.fanoutGates.enter(ctx, ownerID, eventID, s.fanoutWaits(eventID))
	if err != nil {
		return nil, leave, err
	}
	turn := func(f fanned) { s.fanoutGates.leave(ownerID, f) }
	if fannedOut {
		turn(fanned{})
		return nil, leave, nil
	}
	if waited {
		if read, err = q.ReadForFanout(ctx, eventID); err != nil {
			turn(fanned{})
			if apperr.IsNotFound(err) {
				err = nil
			}
			return nil, leave, err
		}
	}
	return read, turn, nil
}

// severalInFlight says whether one of eps, under the owner's profile,
// takes more than one delivery at a time.
func (s *Service) severalInFlight(profileName string, eps []*endpoint.Endpoint) bool {
	p, err := s.cfg.Profiles.Get(profileName)
	if err != nil {
		return false // the fanout cancels its job on this
	}
	for _, ep := range eps {
		if p.MaxInFlight(ep.MaxInFlight) > 1 {
			return true
		}
	}
	return false
}
