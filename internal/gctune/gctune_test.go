package gctune

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

const mib = 1 << 20

// TestPercent: the next collection of a small heap starts at the floor,
// one of a heap past half the floor when it has doubled (100), and a
// nearly empty heap grows at most MaxPercent.
func TestPercent(t *testing.T) {
	for _, c := range []struct {
		live, floor uint64
		want        int
	}{
		{10 * mib, 32 * mib, 220},
		{8 * mib, 32 * mib, 300},
		{16 * mib, 32 * mib, 100},
		{30 * mib, 32 * mib, 100},
		{1 * mib, 32 * mib, MaxPercent},
		{0, 32 * mib, 100},
	} {
		if got := Percent(c.live, c.floor); got != c.want {
			t.Errorf("Percent(%d MiB live, %d MiB floor) = %d, want %d", c.live/mib, c.floor/mib, got, c.want)
		}
	}
}

// TestFloorRetunesAfterEachCollection: with a floor far above this test's
// live heap, every collection sets GOGC above 100 again (what tune sets
// is what the runtime then has), and Stop puts back the GOGC found.
func TestFloorRetunesAfterEachCollection(t *testing.T) {
	was := debug.SetGCPercent(100)
	defer debug.SetGCPercent(was)
	tuned := make(chan int, 16)
	f := start(256*mib, func(p int) {
		select {
		case tuned <- p:
		default:
		}
	})
	if f == nil {
		t.Fatal("no floor started")
	}
	defer f.Stop()
	<-tuned // Start's own tuning
	for i := range 3 {
		runtime.GC()
		select {
		case p := <-tuned:
			if p <= 100 {
				t.Fatalf("collection %d: GOGC %d, want more than 100 for a heap far below the floor", i, p)
			}
			if got := debug.SetGCPercent(p); got != p {
				t.Fatalf("collection %d: tuned to %d, but the runtime has GOGC %d", i, p, got)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("collection %d: the floor was not retuned", i)
		}
	}
	f.Stop()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("after Stop GOGC is %d, want the 100 found", got)
	}
}

// TestNoFloor: a floor of 0, or collection switched off, changes nothing.
func TestNoFloor(t *testing.T) {
	was := debug.SetGCPercent(100)
	defer debug.SetGCPercent(was)
	if f := Start(0); f != nil {
		t.Fatal("a floor of 0 started tuning")
	}
	debug.SetGCPercent(-1)
	f := Start(32 * mib)
	f.Stop() // nil: does nothing
	if f != nil {
		t.Fatal("a floor started with collection off")
	}
	if got := debug.SetGCPercent(100); got != -1 {
		t.Fatalf("GOGC %d, want off (-1) left alone", got)
	}
}
