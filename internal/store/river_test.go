package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/riverqueue/river"

	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/store"
)

type outboxArgs struct {
	EventID string `json:"event_id"`
}

func (outboxArgs) Kind() string { return "store_test.outbox" }

// TestInsertJobsInTx is the transactional outbox at the store level: a row
// and its River job inserted in one InTx exist together if it commits and
// not at all if it rolls back.
func TestInsertJobsInTx(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mkOwner(t, db, "acme")
		jobs := func() int { return count(t, db, `SELECT count(*) FROM river_job WHERE kind = $1`, outboxArgs{}.Kind()) }
		events := func() int { return count(t, db, `SELECT count(*) FROM hookd_events`) }
		publish := func(fail error) error {
			return db.InTx(ctx, func(q *store.Q) error {
				ev := newEvent("acme", "", t0)
				ev.ID = event.NewID("evt_", t0)
				if _, _, err := q.InsertEvent(ctx, ev); err != nil {
					return err
				}
				if _, err := q.InsertJobs(ctx, []river.InsertManyParams{{Args: outboxArgs{EventID: ev.ID}}}); err != nil {
					return err
				}
				return fail
			})
		}

		// Before a River client exists InsertJobs says so (and the row rolls back).
		if err := publish(nil); err == nil {
			t.Fatal("InsertJobs without a River client succeeded")
		}
		if n := events(); n != 0 {
			t.Fatalf("%d events after a failed publish", n)
		}

		if _, err := db.NewRiver(&river.Config{}); err != nil { // insert-only: no workers
			t.Fatal(err)
		}
		if _, err := db.Q().InsertJobs(ctx, []river.InsertManyParams{{Args: outboxArgs{}}}); err == nil {
			t.Fatal("InsertJobs outside a transaction succeeded")
		}

		boom := errors.New("business change failed")
		if err := publish(boom); !errors.Is(err, boom) {
			t.Fatalf("InTx returned %v, want the callback's error", err)
		}
		if e, j := events(), jobs(); e != 0 || j != 0 {
			t.Fatalf("after rollback: %d events, %d jobs; want neither", e, j)
		}

		must(t, publish(nil))
		if e, j := events(), jobs(); e != 1 || j != 1 {
			t.Fatalf("after commit: %d events, %d jobs; want one of each", e, j)
		}
	})
}
