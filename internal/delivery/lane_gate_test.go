package delivery

import (
	"context"
	"testing"
	"time"
)

// TestOverflowGate: overflow runs only while the healthy lane's jobs and
// the overflow's are fewer than the healthy lane's workers; a healthy
// job never waits; room is handed to the waiters in order as jobs end;
// a waiter that waits too long is not admitted and leaves the queue.
func TestOverflowGate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sh := newShares(map[string]int{QueueDeliver: 4, QueueDeliverSlow: 4}, 0.5)
	if sh.gate.limit != 4 {
		t.Fatalf("gate limit %d, want the healthy lane's 4 workers", sh.gate.limit)
	}
	// Two owners fill the healthy lane's 4 (2 each: their share).
	for _, o := range []string{"a", "a", "b", "b"} {
		if !sh.take(QueueDeliver, o, true) {
			t.Fatalf("owner %s refused within its share", o)
		}
	}
	if sh.admitOverflow(ctx, 10*time.Millisecond) {
		t.Fatal("overflow admitted with the healthy lane full")
	}
	if len(sh.gate.waiters) != 0 {
		t.Fatalf("a waiter that gave up is still queued (%d)", len(sh.gate.waiters))
	}
	// Two waiters, in order; each healthy job that ends admits one.
	admitted := make(chan int, 2)
	for i := range 2 {
		go func() {
			if sh.admitOverflow(ctx, time.Minute) {
				admitted <- i
			}
		}()
		waitFor(t, func() bool { sh.mu.Lock(); defer sh.mu.Unlock(); return len(sh.gate.waiters) == i+1 })
	}
	sh.give(QueueDeliver, "a", true)
	if got := <-admitted; got != 0 {
		t.Fatalf("waiter %d admitted first, want 0 (first come)", got)
	}
	select {
	case got := <-admitted:
		t.Fatalf("waiter %d admitted with no room", got)
	case <-time.After(20 * time.Millisecond):
	}
	sh.give(QueueDeliver, "b", true)
	if got := <-admitted; got != 1 {
		t.Fatalf("waiter %d admitted second, want 1", got)
	}
	// 2 healthy + 2 overflow: full; an ended overflow job makes room.
	sh.doneOverflow()
	if !sh.admitOverflow(ctx, time.Millisecond) {
		t.Fatal("no room after an overflow job ended")
	}
	// A healthy job never waits on the gate: only its owner's share.
	if !sh.take(QueueDeliver, "c", true) {
		t.Fatal("a healthy job refused while overflow ran")
	}
	// Without a share there is no overflow and no gate.
	if open := newShares(map[string]int{QueueDeliver: 4, QueueDeliverSlow: 4}, 1); !open.admitOverflow(ctx, 0) || open.gate.limit != 0 {
		t.Fatal("no share: the gate should be open")
	}
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}
