package group_test

import (
	"context"
	"slices"
	"sync"
	"testing"

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
