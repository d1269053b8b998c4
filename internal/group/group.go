// Package group runs concurrent calls in groups, for work whose cost is
// mostly per round trip or per commit rather than per item: the first call
// to arrive runs at once, alone; the calls arriving while a group runs
// queue and go together in the next group, led (run) by the first of them.
// A lone caller waits for nothing, and under load every group carries all
// the calls that arrived during the one before it, up to a bound.
//
// hookd uses it for the group commit of single-event publishes
// (internal/delivery) and for API key lookups (internal/store).
package group

import (
	"context"
	"sync"
)

// Runner runs calls of type T in groups.
type Runner[T any] struct {
	// Max bounds a group (at least 1).
	Max int
	// Run runs one group; it must answer every call in it (T carries the
	// answer: give it a "not run" error before Do, for a Run that panics).
	// ctx is the leading caller's.
	Run func(ctx context.Context, calls []T)
	// Queued, if set, is called when a call queues behind a running group,
	// with the number now queued (tests use it to know a group has formed).
	Queued func(queued int)

	mu      sync.Mutex
	queue   []*waiter[T]
	running bool // a group runs; while true, queue[0] leads the next
}

type waiter[T any] struct {
	v T
	// wake is signalled once: the call's group ran (done is set), or the
	// call leads the next group.
	wake chan struct{}
	done bool
}

// Do runs v in a group and returns once that group has run.
func (r *Runner[T]) Do(ctx context.Context, v T) {
	w := &waiter[T]{v: v, wake: make(chan struct{}, 1)}
	r.mu.Lock()
	r.queue = append(r.queue, w)
	if r.running {
		queued := len(r.queue)
		r.mu.Unlock()
		if r.Queued != nil {
			r.Queued(queued)
		}
		<-w.wake
		if w.done {
			return
		}
		// Woken to lead: the group before has run.
	} else {
		r.running = true
		r.mu.Unlock()
	}
	r.lead(ctx, w)
}

// lead runs the next group, which starts with w (the queue's head), wakes
// its other calls, and hands the lead to the first call queued meanwhile.
func (r *Runner[T]) lead(ctx context.Context, w *waiter[T]) {
	r.mu.Lock()
	n := min(len(r.queue), max(1, r.Max))
	group := make([]*waiter[T], n)
	copy(group, r.queue)
	r.queue = append(r.queue[:0:0], r.queue[n:]...)
	r.mu.Unlock()

	calls := make([]T, n)
	for i, m := range group {
		calls[i] = m.v
	}
	// Even if Run panics (net/http recovers a handler's panic), the
	// group's callers return and the next group gets its leader.
	defer func() {
		for _, m := range group {
			if m != w {
				m.done = true
				m.wake <- struct{}{}
			}
		}
		r.mu.Lock()
		if len(r.queue) == 0 {
			r.running = false
		} else {
			r.queue[0].wake <- struct{}{} // not done: it leads
		}
		r.mu.Unlock()
	}()
	r.Run(ctx, calls)
}
