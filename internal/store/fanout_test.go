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
		jobs := map[string]int64{}
		for i := range 4 {
			e := mkEvent(t, db, "acme")
			ids = append(ids, e.ID)
			jobs[e.ID] = int64(100 + i)
		}
		mkEvent(t, db, "acme") // no fanout job: an internal event, or from before
		beta := mkEvent(t, db, "beta")
		jobs[beta.ID] = 200
		must(t, q.SetFanoutJobs(ctx, jobs))

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
		must(t, q.SetFanoutJobs(ctx, nil))
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
		jobs := map[string]int64{}
		for i := range events {
			jobs[mkEvent(t, db, "acme").ID] = int64(i + 1)
		}
		must(t, db.Q().SetFanoutJobs(ctx, jobs))
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

func eventIDs(evs []*event.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}
