package delivery

import (
	"context"
	"errors"
	"testing"
)

// TestFanoutGatesForget: a waiter whose context ends holds nothing, a
// holder's done marks only the events someone waits with, and the gates
// forget an owner once nobody holds or waits.
func TestFanoutGatesForget(t *testing.T) {
	t.Parallel()
	var g fanoutGates
	bg := context.Background()
	if waited, _, err := g.enter(bg, "acme", "e1", nil); waited || err != nil {
		t.Fatalf("first enter: waited %v, %v", waited, err)
	}
	if waited, _, err := g.enter(bg, "other", "e9", nil); waited || err != nil {
		t.Fatalf("another owner's enter: waited %v, %v", waited, err)
	}
	g.leave("other", fanned{done: []string{"e9"}})

	ctx, cancel := context.WithCancel(bg)
	waits := make(chan struct{})
	gaveUp := make(chan error, 1)
	go func() {
		_, _, err := g.enter(ctx, "acme", "e2", func() { close(waits) })
		gaveUp <- err
	}()
	<-waits
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled waiter returned %v", err)
	}

	entered := make(chan [2]bool, 1)
	waits = make(chan struct{})
	go func() {
		waited, fannedOut, err := g.enter(bg, "acme", "e3", func() { close(waits) })
		if err != nil {
			t.Error(err)
		}
		entered <- [2]bool{waited, fannedOut}
	}()
	<-waits
	g.leave("acme", fanned{done: []string{"e1", "e2", "e3"}})
	if got := <-entered; got != [2]bool{true, true} {
		t.Fatalf("waiter of a fanned-out event: waited, fanned out = %v, want both", got)
	}
	g.mu.Lock()
	og := g.gates["acme"]
	if len(og.fanned) != 0 || len(og.waiting) != 0 {
		t.Errorf("fanned %v, waiting %v after the waiter entered: want none (e2's waiter gave up)", og.fanned, og.waiting)
	}
	g.mu.Unlock()
	g.leave("acme", fanned{})
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.gates) != 0 {
		t.Fatalf("gates of %d owners left, want none", len(g.gates))
	}
}

// TestFanoutGatesBacklog: an owner is backlogged after a fanout that took
// a whole batch along, through its gate or beside it, and no longer after
// one that took less; a fanout that fanned nothing out changes neither.
func TestFanoutGatesBacklog(t *testing.T) {
	t.Parallel()
	var g fanoutGates
	bg := context.Background()
	if g.backlogged("acme") {
		t.Fatal("a new owner is backlogged")
	}
	if _, _, err := g.enter(bg, "acme", "e1", nil); err != nil {
		t.Fatal(err)
	}
	g.leave("acme", fanned{done: []string{"e1", "e2"}, fullBatch: true})
	if !g.backlogged("acme") || g.backlogged("other") {
		t.Fatalf("after a whole batch: acme backlogged %v, other %v; want true, false", g.backlogged("acme"), g.backlogged("other"))
	}
	g.ran("acme", fanned{}) // failed, or found its event taken along
	if !g.backlogged("acme") {
		t.Fatal("a fanout that fanned nothing out ended the backlog")
	}
	g.ran("acme", fanned{done: []string{"e3"}})
	if g.backlogged("acme") {
		t.Fatal("still backlogged after a fanout that took less than a batch")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.gates) != 0 || len(g.backlog) != 0 {
		t.Fatalf("gates %v, backlog %v left; want none", g.gates, g.backlog)
	}
}
