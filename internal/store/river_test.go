package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/hookd/hookd/internal/dbtest"
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
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		jobs := func() int { return s.count(`SELECT count(*) FROM river_job WHERE kind = $1`, outboxArgs{}.Kind()) }
		events := func() int { return s.count(`SELECT count(*) FROM hookd_events`) }
		publish := func(fail error) error {
			return s.db.InTx(s.ctx, store.TxOptions{}, func(tx *store.Q) error {
				ev := newEvent("acme", "", t0)
				ev.ID = event.NewID("evt_", t0)
				if _, _, err := tx.InsertEvent(s.ctx, ev); err != nil {
					return err
				}
				if _, err := tx.InsertJobs(s.ctx, []river.InsertManyParams{{Args: outboxArgs{EventID: ev.ID}}}); err != nil {
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

		if _, err := s.db.NewRiver(&river.Config{}); err != nil { // insert-only: no workers
			t.Fatal(err)
		}
		if _, err := s.q.InsertJobs(s.ctx, []river.InsertManyParams{{Args: outboxArgs{}}}); err == nil {
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

// TestDeleteJobs: a fanout deletes the River jobs of the events it took
// along, in its transaction; a running job is never deleted.
func TestDeleteJobs(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		ids := s.jobs(3)
		s.exec(`UPDATE river_job SET state = 'running', attempted_at = created_at, attempt = 1 WHERE id = $1`, ids[1])
		must(t, s.db.InTx(s.ctx, store.TxOptions{}, func(tx *store.Q) error { return tx.DeleteJobs(s.ctx, ids) }))
		if n := s.count(`SELECT count(*) FROM river_job WHERE kind = $1`, outboxArgs{}.Kind()); n != 1 {
			t.Fatalf("%d jobs left, want 1 (the running one)", n)
		}
		if n := s.count(`SELECT count(*) FROM river_job WHERE id = $1`, ids[1]); n != 1 {
			t.Fatal("the running job was deleted")
		}
	})
}

// TestWakeNextFreshNotifies guards notifyInsert: on PostgreSQL a job
// WakeNextFresh makes available is worked at once, not at the producers'
// next poll (an hour here). It fails if River changes the insert
// notification its producers listen for (see notifyInsert).
func TestWakeNextFreshNotifies(t *testing.T) {
	t.Parallel()
	cfg := dbtest.Postgres(t)
	cfg.MaxConns = 8 // leave connections for the parallel tests
	db := dbtest.Open(t, cfg)
	ctx := context.Background()
	worked := make(chan string, 2)
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(func(_ context.Context, j *river.Job[outboxArgs]) error {
		worked <- j.Args.EventID
		return nil
	}))
	queue, err := db.NewRiver(&river.Config{
		Queues:            map[string]river.QueueConfig{"wake": {MaxWorkers: 5}},
		Workers:           workers,
		FetchPollInterval: time.Hour,
		FetchCooldown:     time.Millisecond,
	})
	must(t, err)
	must(t, queue.Start(ctx))
	t.Cleanup(func() { must(t, queue.Stop(context.Background())) })
	insert := func(eventID string, at time.Time) int64 {
		var id int64
		must(t, db.InTx(ctx, store.TxOptions{}, func(q *store.Q) error {
			res, err := q.InsertJobs(ctx, []river.InsertManyParams{{Args: outboxArgs{EventID: eventID}, InsertOpts: &river.InsertOpts{Queue: "wake", ScheduledAt: at}}})
			if err == nil {
				id = res[0].Job.ID
			}
			return err
		}))
		return id
	}
	// A job due now is worked once the producer runs: after that it
	// listens (it subscribes before its first fetch), and with fewer jobs
	// than workers fetched it fetches again only when told or at the poll.
	insert("warm-up", time.Time{})
	if got := <-worked; got != "warm-up" {
		t.Fatalf("worked %q first, want the warm-up job", got)
	}

	s := newBundle(t, db)
	s.owner("acme")
	ep := s.endpoint("acme", 1)
	d := newDelivery("acme", ep.ID, s.event("acme").ID, t0)
	d.JobID = insert("woken", time.Now().Add(time.Hour))
	s.deliveries(d)
	// The producer may not have its LISTEN in place yet: wake (and so
	// notify) again until the job runs, well inside the hour's poll.
	deadline := time.After(10 * time.Second)
	for {
		must(t, db.WakeNextFresh(ctx, ep.ID, ts(t0), true))
		select {
		case got := <-worked:
			if got != "woken" {
				t.Fatalf("worked %q, want the woken job", got)
			}
			return
		case <-deadline:
			t.Fatal("the woken job waited for the poll: River's producers no longer hear notifyInsert's notification")
		case <-time.After(200 * time.Millisecond):
		}
	}
}
