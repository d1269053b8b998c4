// Package group runs concurrent calls in groups, for work whose cost is
// mostly per round trip or per commit rather than per item: the first call
// to arrive runs at once, alone; the calls arriving while a group runs
// queue and go together in the next group, led (run) by the first of them.
// A lone caller waits for nothing, and under load every group carries all
// the calls that arrived during the one before it, up to a bound.
//
// With Linger set, a leader may wait a little for the callers the group
// before answered, when groups run back to back: see Linger.
//
// hookd uses it for the group commit of single-event publishes
// (internal/delivery) and for API key lookups (internal/store).
package group

import (
	"context"
	"sync"
	"time"
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

	// Linger is how long, as a fraction of the last group's run time, a
	// leader may wait for more calls before its group runs (0: never; and
	// never more than maxLinger).
	// It waits only when its group starts less than the last group's run
	// time after that group ended (groups run back to back) and fewer
	// calls have queued than were in the runner when it ended (the calls
	// that group answered and those queued behind it), and it stops
	// waiting once that many have queued. So callers that publish again
	// once answered, which under load split into two halves taking turns
	// (one half in a group while the other is answered and comes back),
	// go together in one group of all of them; a lone caller, whose last
	// group held only itself, waits for nothing. Callers that do not come
	// back once answered (requests arriving on their own clock, in
	// bursts) would make every wait a loss: a wait that brought fewer
	// than half the calls it waited for makes the next leaders skip
	// theirs, 1, 2, 4 … up to maxLingerSkips in a row, until one pays.
	Linger float64
	// Now and After are the clock (nil: time.Now, time.After); tests set
	// them.
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time

	mu      sync.Mutex
	queue   []*waiter[T]
	running bool // a group runs; while true, queue[0] leads the next
	// arrived is signalled when a call queues while a leader lingers.
	arrived   chan struct{}
	lingering bool
	// The last group: its run time, when it ended, and the calls in the
	// runner then (its own and those queued).
	lastRun time.Duration
	lastEnd time.Time
	lastIn  int
	// skips is how many leaders in a row the last wait that did not pay
	// made skip theirs, skip how many of those are still to come.
	skips, skip int
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
	if r.lingering {
		select {
		case r.arrived <- struct{}{}:
		default: // already signalled
		}
	}
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
	r.linger()
	n := min(len(r.queue), max(1, r.Max))
	group := make([]*waiter[T], n)
	copy(group, r.queue)
	r.queue = append(r.queue[:0:0], r.queue[n:]...)
	r.mu.Unlock()

	calls := make([]T, n)
	for i, m := range group {
		calls[i] = m.v
	}
	start := r.now()
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
		r.lastEnd = r.now()
		r.lastRun, r.lastIn = r.lastEnd.Sub(start), n+len(r.queue)
		if len(r.queue) == 0 {
			r.running = false
		} else {
			r.queue[0].wake <- struct{}{} // not done: it leads
		}
		r.mu.Unlock()
	}()
	r.Run(ctx, calls)
}

// maxLinger bounds a leader's wait: a group that ran long (a database
// stalled) must not make the next one's callers wait long too.
const maxLinger = 5 * time.Millisecond

// maxLingerSkips bounds the leaders in a row that skip their wait after
// waits that did not pay, so a runner whose callers start coming back
// lingers again soon.
const maxLingerSkips = 64

// linger waits, with r.mu held (and released while it waits), for as many
// calls to queue as were in the runner when the last group ended, at most
// Linger times that group's run time or maxLinger (see Linger).
func (r *Runner[T]) linger() {
	want := min(r.lastIn, max(1, r.Max))
	if r.Linger <= 0 || len(r.queue) >= want || r.now().Sub(r.lastEnd) >= r.lastRun {
		return
	}
	if r.skip > 0 {
		r.skip--
		return
	}
	had := len(r.queue)
	defer func() {
		if 2*(len(r.queue)-had) >= want-had {
			r.skips = 0
			return
		}
		r.skips = min(max(1, 2*r.skips), maxLingerSkips)
		r.skip = r.skips
	}()
	if r.arrived == nil {
		r.arrived = make(chan struct{}, 1)
	}
	after := r.After
	if after == nil {
		after = time.After
	}
	timeout := after(min(time.Duration(r.Linger*float64(r.lastRun)), maxLinger))
	r.lingering = true
	defer func() { r.lingering = false }()
	for len(r.queue) < want {
		r.mu.Unlock()
		select {
		case <-r.arrived:
			r.mu.Lock()
		case <-timeout:
			r.mu.Lock()
			return
		}
	}
}

func (r *Runner[T]) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
