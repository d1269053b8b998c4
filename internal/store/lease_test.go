package store_test

import (
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookd/hookd/internal/dbtest"
)

func TestLease(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		ep := s.endpoint("acme", 1)
		other := s.endpoint("acme", 1)
		now, until := ts(t0), ts(t0.Add(20*time.Second))

		take := func(holder, now int64) (int, bool) {
			t.Helper()
			slot, ok, err := s.q.TakeLease(s.ctx, ep.ID, holder, now, until)
			must(t, err)
			return slot, ok
		}
		if slot, ok := take(1, now); !ok || slot != 0 {
			t.Fatalf("first take = slot %d ok %v, want slot 0", slot, ok)
		}
		if _, ok := take(2, now+1); ok {
			t.Fatal("a second holder took a busy lease")
		}
		// Re-entrant: the holder's job retrying (after a settle that could
		// not release, e.g. on a dropped connection) gets its own slot back
		// instead of waiting out its own lease.
		if slot, ok := take(1, now+1); !ok || slot != 0 {
			t.Fatalf("the holder re-taking its lease = slot %d ok %v, want slot 0", slot, ok)
		}
		// Another endpoint's lease is independent.
		if _, ok, err := s.q.TakeLease(s.ctx, other.ID, 2, now, until); err != nil || !ok {
			t.Fatalf("other endpoint: ok %v err %v", ok, err)
		}

		// Release checks the holder: someone else's release frees nothing.
		must(t, s.q.ReleaseLease(s.ctx, ep.ID, 0, 2))
		if _, ok := take(3, now+2); ok {
			t.Fatal("a non-holder's release freed the lease")
		}
		must(t, s.q.ReleaseLease(s.ctx, ep.ID, 0, 1))
		if _, ok := take(3, now+3); !ok {
			t.Fatal("lease not free after its holder released it")
		}

		// Expiry: a lease past busy_until is taken by another holder (its
		// holder died), and the late holder's release does not free it.
		if _, ok := take(4, until-1); ok {
			t.Fatal("taken one microsecond before it expired")
		}
		slot, ok, err := s.q.TakeLease(s.ctx, ep.ID, 4, until, until+20e6)
		must(t, err)
		if !ok || slot != 0 {
			t.Fatalf("expired lease: slot %d ok %v, want taken", slot, ok)
		}
		must(t, s.q.ReleaseLease(s.ctx, ep.ID, 0, 3)) // the dead holder comes back late
		if _, ok := take(5, until+1); ok {
			t.Fatal("the expired holder's release freed the new holder's lease")
		}
	})
}

func TestLeaseSlots(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		ep := s.endpoint("acme", 3)
		now, until := ts(t0), ts(t0.Add(time.Minute))
		for i := range 3 {
			slot, ok, err := s.q.TakeLease(s.ctx, ep.ID, int64(10+i), now, until)
			must(t, err)
			if !ok || slot != i {
				t.Fatalf("take %d: slot %d ok %v, want slot %d", i, slot, ok, i)
			}
		}
		if _, ok, err := s.q.TakeLease(s.ctx, ep.ID, 13, now, until); err != nil || ok {
			t.Fatalf("a 4th take of 3 slots: ok %v err %v", ok, err)
		}
		must(t, s.q.ReleaseLease(s.ctx, ep.ID, 1, 11))
		slot, ok, err := s.q.TakeLease(s.ctx, ep.ID, 14, now, until)
		must(t, err)
		if !ok || slot != 1 {
			t.Fatalf("after releasing slot 1: slot %d ok %v", slot, ok)
		}
	})
}

// TestLeaseConcurrentTakers: N takers race for one free slot at the same
// instant, round after round. On PostgreSQL each taker runs on its own pool
// connection (the store's non-transactional queries acquire one each), so
// the row lock, not the client, decides: exactly one wins every round.
func TestLeaseConcurrentTakers(t *testing.T) {
	t.Parallel()
	const takers, rounds = 8, 25
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		ep := s.endpoint("acme", 1)
		if p := s.db.Pool(); p != nil {
			// Hold every taker's connection open before the race, so no
			// taker waits on the pool rather than on the row.
			conns := make([]*pgxpool.Conn, takers)
			for i := range conns {
				c, err := p.Acquire(s.ctx)
				must(t, err)
				conns[i] = c
			}
			for _, c := range conns {
				c.Release()
			}
			if n := p.Stat().TotalConns(); n < takers {
				t.Fatalf("pool has %d connections, want at least %d", n, takers)
			}
		}
		for round := range rounds {
			now := ts(t0.Add(time.Duration(round) * time.Minute))
			until := now + time.Minute.Microseconds()/2
			var wg sync.WaitGroup
			start := make(chan struct{})
			type take struct {
				holder int64
				slot   int
				ok     bool
				err    error
			}
			res := make([]take, takers)
			for i := range takers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					h := int64(round*takers + i + 1)
					slot, ok, err := s.q.TakeLease(s.ctx, ep.ID, h, now, until)
					res[i] = take{h, slot, ok, err}
				}()
			}
			close(start)
			wg.Wait()
			var winners []take
			for _, r := range res {
				if r.err != nil {
					t.Fatalf("round %d: TakeLease: %v", round, r.err)
				}
				if r.ok {
					winners = append(winners, r)
				}
			}
			if len(winners) != 1 {
				t.Fatalf("round %d: %d takers won one slot, want exactly 1", round, len(winners))
			}
			must(t, s.q.ReleaseLease(s.ctx, ep.ID, winners[0].slot, winners[0].holder))
		}
	})
}

// TestLeaseConcurrentSlots: with several slots, concurrent takers never
// share one, and none sees "busy" while a slot is free: N slots, N taken.
func TestLeaseConcurrentSlots(t *testing.T) {
	t.Parallel()
	const takers, slots, rounds = 8, 3, 20
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		ep := s.endpoint("acme", slots)
		for round := range rounds {
			now := ts(t0.Add(time.Duration(round) * time.Minute))
			var mu sync.Mutex
			bySlot := map[int][]int64{}
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range takers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					h := int64(round*takers + i + 1)
					slot, ok, err := s.q.TakeLease(s.ctx, ep.ID, h, now, now+30e6)
					if err != nil {
						t.Errorf("TakeLease: %v", err)
						return
					}
					if ok {
						mu.Lock()
						bySlot[slot] = append(bySlot[slot], h)
						mu.Unlock()
					}
				}()
			}
			close(start)
			wg.Wait()
			if len(bySlot) != slots {
				t.Fatalf("round %d: %d takers won %d of %d free slots; want every slot taken (takers skip slots being taken)", round, takers, len(bySlot), slots)
			}
			for slot, holders := range bySlot {
				if len(holders) != 1 || slot < 0 || slot >= slots {
					t.Fatalf("round %d: slot %d taken by %v", round, slot, holders)
				}
				must(t, s.q.ReleaseLease(s.ctx, ep.ID, slot, holders[0]))
			}
		}
	})
}

// BenchmarkLease: take + release of one endpoint's lease, the two queries
// every standard-profile delivery adds.
func BenchmarkLease(b *testing.B) {
	for _, e := range dbtest.Backends() {
		b.Run(e.Name, func(b *testing.B) {
			s := newBundle(b, dbtest.Open(b, e.Config(b)))
			s.owner("acme")
			ep := s.endpoint("acme", 1)
			ctx, q := s.ctx, s.q
			b.ReportAllocs()
			now := time.Now().UnixMicro()
			var holder int64
			for b.Loop() {
				holder++
				slot, ok, err := q.TakeLease(ctx, ep.ID, holder, now, now+20e6)
				if err != nil || !ok {
					b.Fatalf("take: ok %v err %v", ok, err)
				}
				if err := q.ReleaseLease(ctx, ep.ID, slot, holder); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestBusyEndpoints: an endpoint is busy while every one of its slots is
// held; one free (or expired) slot makes it not busy.
func TestBusyEndpoints(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		one := s.endpoint("acme", 1)
		two := s.endpoint("acme", 2)
		idle := s.endpoint("acme", 1)
		now, until := ts(t0), ts(t0.Add(20*time.Second))
		take := func(id string, holder int64) {
			t.Helper()
			if _, ok, err := s.q.TakeLease(s.ctx, id, holder, now, until); err != nil || !ok {
				t.Fatalf("take lease of %s: %v %v", id, ok, err)
			}
		}
		take(one.ID, 1)
		take(two.ID, 2) // one of two slots
		ids := []string{one.ID, two.ID, idle.ID, "ep_gone"}
		busy, err := s.q.BusyEndpoints(s.ctx, ids, now)
		must(t, err)
		if !busy[one.ID] || busy[two.ID] || busy[idle.ID] || len(busy) != 1 {
			t.Fatalf("busy = %v, want only %s (its only slot held)", busy, one.ID)
		}
		take(two.ID, 3) // both slots now
		if busy, err = s.q.BusyEndpoints(s.ctx, ids, now); err != nil || !busy[one.ID] || !busy[two.ID] || len(busy) != 2 {
			t.Fatalf("busy = %v, want %s and %s", busy, one.ID, two.ID)
		}
		if busy, err = s.q.BusyEndpoints(s.ctx, ids, until); err != nil || len(busy) != 0 {
			t.Fatalf("busy at the leases' end = %v, want none", busy)
		}
		must(t, s.q.ReleaseLease(s.ctx, one.ID, 0, 1))
		if busy, err = s.q.BusyEndpoints(s.ctx, ids, now); err != nil || busy[one.ID] {
			t.Fatalf("busy = %v after %s's release", busy, one.ID)
		}
	})
}
