package delivery

import (
	"context"
	"time"
)

// The overflow gate. A burst's tail placed in the slow lane (place) runs
// there on the slow lane's idle workers, uncounted while its endpoints
// are fast (counts). Left at that, a process whose owners all burst at
// once runs both lanes full: twice its workers in flight on a machine
// whose bound is the CPU, and each delivery costs more (issue 40: 0.94×
// the deliveries of the build before the lanes, 1.06× the CPU a
// delivery). So an overflow job waits, before it takes its endpoint's
// lease, until the healthy lane's jobs and the overflow's together are
// fewer than the healthy lane's workers: the process then runs what it
// ran before the lanes, while a slow endpoint's jobs (counted) and every
// job of the healthy lane never wait here. Waiters are admitted one at a
// time, first come first served, as room opens (give hands it over);
// one that has waited overflowWait snoozes instead, spending no attempt,
// so River's job timeout is never spent waiting.

// overflowWait is the longest an overflow job waits for room.
const overflowWait = 2 * time.Second

// gate is the overflow's admission, under shares.mu.
type gate struct {
	limit    int // the healthy lane's workers; 0: no gate
	running  int // overflow jobs admitted and not done
	healthy  int // jobs in flight in the healthy lane
	waiters  []chan struct{}
	admitted int // total admissions, for tests
}

// roomLocked reports whether one more overflow job may run.
func (g *gate) roomLocked() bool {
	return g.limit == 0 || g.healthy+g.running < g.limit
}

// wakeLocked admits waiters, first come first served, while there is
// room.
func (g *gate) wakeLocked() {
	for len(g.waiters) > 0 && g.roomLocked() {
		w := g.waiters[0]
		g.waiters = g.waiters[1:]
		g.running++
		g.admitted++
		close(w)
	}
}

// admitOverflow waits for room for an overflow job, at most wait; it
// reports whether the job was admitted (then it must call doneOverflow
// when it ends).
func (sh *shares) admitOverflow(ctx context.Context, wait time.Duration) bool {
	sh.mu.Lock()
	g := &sh.gate
	if g.roomLocked() && len(g.waiters) == 0 {
		g.running++
		g.admitted++
		sh.mu.Unlock()
		return true
	}
	me := make(chan struct{})
	g.waiters = append(g.waiters, me)
	sh.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-me:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	select {
	case <-me: // admitted as it gave up: it runs
		return true
	default:
	}
	for i, w := range g.waiters {
		if w == me {
			g.waiters = append(g.waiters[:i], g.waiters[i+1:]...)
			break
		}
	}
	return false
}

// doneOverflow ends an admitted overflow job and hands its room on.
func (sh *shares) doneOverflow() {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.gate.running--
	sh.gate.wakeLocked()
}
