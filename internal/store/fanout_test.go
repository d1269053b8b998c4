package store_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/store"
)

// TestAwaitingFanout: an event with a fanout job awaits fanout until it is
// marked fanned out; a fanout sees the owner's waiting events oldest first,
// without the one it runs for, up to a limit, with their jobs' ids.
func TestAwaitingFanout(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		q := db.Q()
		mkOwner(t, db, "acme")
		mkOwner(t, db, "beta")
		var ids []string
		for i := range 4 {
			ids = append(ids, mkAwaiting(t, db, "acme", int64(100+i)).ID)
		}
		mkEvent(t, db, "acme") // no fanout job: an internal event, or from before
		mkAwaiting(t, db, "beta", 200)

		evs, js, err := q.AwaitingFanout(ctx, "acme", ids[0], 2)
		must(t, err)
		if len(evs) != 2 || evs[0].ID != ids[1] || evs[1].ID != ids[2] || !slices.Equal(js, []int64{101, 102}) {
			t.Fatalf("awaiting = %v %v; want %v with jobs 101, 102", eventIDs(evs), js, ids[1:3])
		}
		if evs[0].OwnerID != "acme" || evs[0].Type == "" || len(evs[0].Data) == 0 {
			t.Fatalf("event not read whole: %+v", evs[0])
		}
		must(t, q.MarkFannedOut(ctx, ids[:3]))
		evs, js, err = q.AwaitingFanout(ctx, "acme", "", 10)
		must(t, err)
		if len(evs) != 1 || evs[0].ID != ids[3] || js[0] != 103 {
			t.Fatalf("after marking: awaiting %v %v; want only %s", eventIDs(evs), js, ids[3])
		}
		must(t, q.MarkFannedOut(ctx, nil))
	})
}

// TestAwaitingFanoutConcurrent: fanouts of one owner taking waiting events
// along at once, each in its own transaction, never take the same event.
func TestAwaitingFanoutConcurrent(t *testing.T) {
	t.Parallel()
	const fanouts, events = 4, 40
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mkOwner(t, db, "acme")
		for i := range events {
			mkAwaiting(t, db, "acme", int64(i+1))
		}
		var mu sync.Mutex
		taken := map[string]int{}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range fanouts {
			wg.Go(func() {
				<-start
				for {
					var got []*event.Event
					err := db.InTx(ctx, func(q *store.Q) error {
						var err error
						if got, _, err = q.AwaitingFanout(ctx, "acme", "", 3); err != nil {
							return err
						}
						time.Sleep(time.Millisecond) // hold the rows a moment, as a fanout does
						return q.MarkFannedOut(ctx, eventIDs(got))
					})
					if err != nil {
						t.Errorf("fanout: %v", err)
						return
					}
					if len(got) == 0 {
						return
					}
					mu.Lock()
					for _, e := range got {
						taken[e.ID]++
					}
					mu.Unlock()
				}
			})
		}
		close(start)
		wg.Wait()
		if len(taken) != events {
			t.Fatalf("%d of %d events fanned out", len(taken), events)
		}
		for id, n := range taken {
			if n != 1 {
				t.Fatalf("event %s taken by %d fanouts", id, n)
			}
		}
	})
}

// mkAwaiting inserts an event awaiting fanout by job.
func mkAwaiting(t testing.TB, db *store.DB, ownerID string, job int64) *event.Event {
	t.Helper()
	e := newEvent(ownerID, "", t0)
	e.FanoutJob = job
	if _, _, err := db.Q().InsertEvent(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	return e
}

func eventIDs(evs []*event.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

// TestInsertEvents: a batch is written a few hundred per statement; an
// idempotency key used before, or earlier in the same batch, writes
// nothing and answers with the first event's id.
func TestInsertEvents(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mkOwner(t, db, "acme")
		earlier := newEvent("acme", "k-old", t0)
		if _, _, err := db.Q().InsertEvent(ctx, earlier); err != nil {
			t.Fatal(err)
		}
		var evs []*event.Event
		for i := range 450 { // three statements
			key := ""
			switch i {
			case 10, 300:
				key = "k-new" // 300 repeats 10, in another statement
			case 20:
				key = "k-old"
			}
			evs = append(evs, newEvent("acme", key, t0.Add(time.Duration(i)*time.Millisecond)))
		}
		res, err := db.Q().InsertEvents(ctx, evs)
		must(t, err)
		if len(res) != len(evs) {
			t.Fatalf("%d results for %d events", len(res), len(evs))
		}
		for i, r := range res {
			want := store.Inserted{ID: evs[i].ID, Inserted: true}
			switch i {
			case 300:
				want = store.Inserted{ID: evs[10].ID}
			case 20:
				want = store.Inserted{ID: earlier.ID}
			}
			if r != want {
				t.Fatalf("event %d: %+v, want %+v", i, r, want)
			}
		}
		if n := count(t, db, `SELECT count(*) FROM hookd_events`); n != 1+450-2 {
			t.Fatalf("%d events stored, want %d", n, 1+450-2)
		}
	})
}

// TestLockEvent: a fanout that finds its event held by another fanout's
// transaction is told so at once (PostgreSQL) instead of waiting; SQLite
// has one writer at a time, so the event is always its own.
func TestLockEvent(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mkOwner(t, db, "acme")
		e := mkEvent(t, db, "acme")
		ok, err := db.Q().LockEvent(ctx, e.ID)
		must(t, err)
		if !ok {
			t.Fatal("a free event was not locked")
		}
		if db.Pool() == nil {
			return
		}
		held := make(chan struct{})
		release := make(chan struct{})
		done := make(chan error)
		go func() {
			done <- db.InTx(ctx, func(q *store.Q) error {
				if ok, err := q.LockEvent(ctx, e.ID); err != nil || !ok {
					t.Errorf("first lock: ok %v err %v", ok, err)
				}
				close(held)
				<-release
				return nil
			})
		}()
		<-held
		must(t, db.InTx(ctx, func(q *store.Q) error {
			ok, err := q.LockEvent(ctx, e.ID)
			if err == nil && ok {
				t.Error("an event another transaction holds was locked again")
			}
			return err
		}))
		close(release)
		must(t, <-done)
	})
}
