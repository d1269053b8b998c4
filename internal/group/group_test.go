package group_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/group"
)

type call struct {
	n, answer int
}

// TestRunner: a lone call runs at once in a group of its own; calls made
// while a group runs go together in the next groups, at most Max each,
// each answered by its own group, none twice, none lost.
func TestRunner(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var sizes []int
	release := make(chan struct{})
	first := make(chan struct{})
	queued := make(chan int, 100)
	r := &group.Runner[*call]{
		Max:    4,
		Queued: func(n int) { queued <- n },
		Run: func(_ context.Context, calls []*call) {
			mu.Lock()
			sizes = append(sizes, len(calls))
			nth := len(sizes)
			mu.Unlock()
			if nth == 1 {
				close(first)
				<-release
			}
			for _, c := range calls {
				c.answer = c.n * 10
			}
		},
	}
	ctx := context.Background()
	lone := &call{n: 1}
	var wg sync.WaitGroup
	wg.Go(func() { r.Do(ctx, lone) })
	<-first
	calls := make([]*call, 10)
	for i := range calls {
		calls[i] = &call{n: i + 2}
		wg.Go(func() { r.Do(ctx, calls[i]) })
	}
	for n := 0; n < len(calls); {
		n = <-queued
	}
	close(release)
	wg.Wait()
	if lone.answer != 10 {
		t.Fatalf("lone call answered %d", lone.answer)
	}
	for _, c := range calls {
		if c.answer != c.n*10 {
			t.Fatalf("call %d answered %d", c.n, c.answer)
		}
	}
	if !slices.Equal(sizes, []int{1, 4, 4, 2}) {
		t.Fatalf("group sizes %v; want [1 4 4 2]", sizes)
	}
	// Idle again: the next call runs alone at once.
	again := &call{n: 7}
	r.Do(ctx, again)
	if again.answer != 70 || sizes[len(sizes)-1] != 1 {
		t.Fatalf("after the queue drained: answer %d, groups %v", again.answer, sizes)
	}
}

// TestRunnerPanic: a group whose Run panics still releases its callers and
// hands the lead on, so later calls run.
func TestRunnerPanic(t *testing.T) {
	t.Parallel()
	boom := true
	r := &group.Runner[*call]{Max: 8, Run: func(_ context.Context, calls []*call) {
		if boom {
			boom = false
			panic("run failed")
		}
		for _, c := range calls {
			c.answer = 1
		}
	}}
	func() {
		defer func() { _ = recover() }()
		r.Do(context.Background(), &call{})
	}()
	c := &call{}
	r.Do(context.Background(), c)
	if c.answer != 1 {
		t.Fatal("the call after a panicking group did not run")
	}
}

// lingerClock is a Runner's clock for the linger tests: it stands still
// but for each group's Run, which takes a set time of it, so the next
// group starts right after the one before; After records the waits asked for,
// says so on waiting, and ends one when the test sends on expire.
type lingerClock struct {
	mu      sync.Mutex
	t       time.Time
	waits   []time.Duration
	waiting chan struct{}
	expire  chan time.Time
}

func newLingerClock() *lingerClock {
	return &lingerClock{waiting: make(chan struct{}, 10), expire: make(chan time.Time)}
}

// waitLinger returns once a leader lingers, and fails the test if none
// does.
func waitLinger(t *testing.T, c *lingerClock) {
	t.Helper()
	select {
	case <-c.waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("no leader lingered")
	}
}

// pause is time passing between groups.
func (c *lingerClock) pause(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func (c *lingerClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *lingerClock) after(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.waiting <- struct{}{}
	return c.expire
}

// lingerFixture is a Runner with Linger 0.5 on a lingerClock, each of
// whose groups runs for the same time, the first until the calls behind
// it have queued; it records its groups' sizes.
type lingerFixture struct {
	r       *group.Runner[*call]
	clock   *lingerClock
	mu      sync.Mutex
	sizes   []int
	started chan struct{}
	release chan struct{}
	queued  chan int
	wg      sync.WaitGroup
}

func newLingerFixture(run time.Duration) *lingerFixture {
	f := &lingerFixture{clock: newLingerClock(), started: make(chan struct{}), release: make(chan struct{}), queued: make(chan int, 100)}
	f.r = &group.Runner[*call]{
		Max:    100,
		Linger: 0.5,
		Now:    f.clock.now,
		After:  f.clock.after,
		Queued: func(n int) { f.queued <- n },
		Run: func(_ context.Context, calls []*call) {
			f.clock.pause(run)
			f.mu.Lock()
			f.sizes = append(f.sizes, len(calls))
			nth := len(f.sizes)
			f.mu.Unlock()
			if nth == 1 {
				close(f.started)
				<-f.release
			}
			for _, c := range calls {
				c.answer = c.n * 10
			}
		},
	}
	return f
}

// firstThen runs first in a group of its own with behind queued behind it,
// lets that group end and returns once first is answered.
func (f *lingerFixture) firstThen(first *call, behind []*call) {
	ctx := context.Background()
	firstDone := make(chan struct{})
	f.wg.Go(func() { f.r.Do(ctx, first); close(firstDone) })
	<-f.started
	for _, c := range behind {
		f.wg.Go(func() { f.r.Do(ctx, c) })
	}
	for n := 0; n < len(behind); {
		n = <-f.queued
	}
	close(f.release)
	<-firstDone
}

// answered fails the test unless every call got its answer.
func answered(t *testing.T, calls ...*call) {
	t.Helper()
	for _, c := range calls {
		if c.answer != c.n*10 {
			t.Fatalf("call %d answered %d", c.n, c.answer)
		}
	}
}

// TestRunnerLingers: when a group ends with three calls queued behind it,
// the next leader waits (half the last group's run time at most) until the
// caller that group answered has come back, and all four go in one group
// instead of three and then one.
func TestRunnerLingers(t *testing.T) {
	t.Parallel()
	f := newLingerFixture(10 * time.Millisecond)
	first, behind := &call{n: 1}, []*call{{n: 2}, {n: 3}, {n: 4}}
	f.firstThen(first, behind)
	waitLinger(t, f.clock)
	// The first caller comes back: the lingering leader takes it along.
	again := &call{n: 5}
	f.r.Do(context.Background(), again)
	f.wg.Wait()
	if !slices.Equal(f.sizes, []int{1, 4}) {
		t.Fatalf("group sizes %v; want [1 4]", f.sizes)
	}
	if !slices.Equal(f.clock.waits, []time.Duration{5 * time.Millisecond}) {
		t.Fatalf("lingered for %v; want one wait of 5ms (half the 10ms group)", f.clock.waits)
	}
	answered(t, append(behind, first, again)...)
}

// TestRunnerLingerEnds: a leader waiting for calls that do not come runs
// its group once the wait is over; the next leader that could wait runs at
// once (the wait brought nobody: callers that do not come back once
// answered), and a lone caller never waits.
func TestRunnerLingerEnds(t *testing.T) {
	t.Parallel()
	f := newLingerFixture(10 * time.Millisecond)
	first, behind := &call{n: 1}, []*call{{n: 2}, {n: 3}}
	f.firstThen(first, behind)
	waitLinger(t, f.clock)
	f.clock.expire <- time.Time{} // the wait is over
	f.wg.Wait()
	answered(t, append(behind, first)...)
	if !slices.Equal(f.sizes, []int{1, 2}) || len(f.clock.waits) != 1 {
		t.Fatalf("group sizes %v, waits %v; want [1 2] after one wait", f.sizes, f.clock.waits)
	}
	// Right after that group of two, a leader could wait for one more.
	next := &call{n: 4}
	done := make(chan struct{})
	go func() { f.r.Do(context.Background(), next); close(done) }()
	select {
	case <-done:
	case <-f.clock.waiting:
		t.Fatal("a leader lingered right after a wait that brought nobody")
	}
	answered(t, next)
	// One caller at a time, after a pause longer than a group's run: the
	// first comes too late to wait for anyone, the others after a group
	// that held only themselves.
	f.clock.pause(20 * time.Millisecond)
	for i := range 3 {
		c := &call{n: 10 + i}
		f.r.Do(context.Background(), c)
		if c.answer != c.n*10 {
			t.Fatalf("lone call %d answered %d", c.n, c.answer)
		}
	}
	if len(f.clock.waits) != 1 {
		t.Fatalf("a lone caller lingered: waits %v", f.clock.waits)
	}
}

// TestRunnerLingerBounded: after a group that ran long, the next leader
// waits at most 5 ms, whatever Linger says.
func TestRunnerLingerBounded(t *testing.T) {
	t.Parallel()
	f := newLingerFixture(time.Second)
	first, behind := &call{n: 1}, []*call{{n: 2}}
	f.firstThen(first, behind)
	waitLinger(t, f.clock)
	f.clock.expire <- time.Time{}
	f.wg.Wait()
	answered(t, first, behind[0])
	if !slices.Equal(f.clock.waits, []time.Duration{5 * time.Millisecond}) {
		t.Fatalf("lingered for %v after a 1s group; want 5ms", f.clock.waits)
	}
}
