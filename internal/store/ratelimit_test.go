package store_test

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestTakeRate: an endpoint's sends are granted one interval apart
// whoever asks, a refusal says how long to wait, and of concurrent takers
// (on PostgreSQL, separate connections) exactly one is granted. The clock
// is the caller's: every time here is explicit.
func TestTakeRate(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		ep := s.endpoint("acme", 1)
		other := s.endpoint("acme", 1)
		now := ts(t0)
		const iv = 100_000 // 10/s

		take := func(id string, now int64) (bool, int64) {
			t.Helper()
			ok, wait, err := s.q.TakeRate(s.ctx, id, now, iv)
			must(t, err)
			return ok, wait
		}
		if ok, _ := take(ep.ID, now); !ok {
			t.Fatal("first take refused")
		}
		if ok, wait := take(ep.ID, now+30_000); ok || wait != 70_000 {
			t.Fatalf("take 30 ms later = %v wait %d, want refused, wait 70 ms", ok, wait)
		}
		if ok, _ := take(ep.ID, now+iv-1); ok {
			t.Fatal("granted one microsecond early")
		}
		if ok, _ := take(ep.ID, now+iv); !ok {
			t.Fatal("refused at the next free time")
		}
		// Another endpoint has its own limiter.
		if ok, _ := take(other.ID, now); !ok {
			t.Fatal("another endpoint's take refused")
		}
		// Idle for a while: granted at once, and the interval counts from then.
		later := now + 50*iv
		if ok, _ := take(ep.ID, later); !ok {
			t.Fatal("refused after idling")
		}
		if ok, wait := take(ep.ID, later+1); ok || wait != iv-1 {
			t.Fatalf("right after = %v wait %d, want refused, wait %d", ok, wait, iv-1)
		}

		// Concurrent takers at one instant: exactly one granted.
		fresh := s.endpoint("acme", 1)
		var granted atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				ok, wait, err := s.q.TakeRate(s.ctx, fresh.ID, now, iv)
				switch {
				case err != nil:
					t.Error(err)
				case ok:
					granted.Add(1)
				case wait != iv:
					t.Errorf("a refused concurrent taker was told to wait %d, want %d", wait, iv)
				}
			})
		}
		wg.Wait()
		if n := granted.Load(); n != 1 {
			t.Fatalf("%d of 8 concurrent takers granted, want exactly 1", n)
		}
	})
}
