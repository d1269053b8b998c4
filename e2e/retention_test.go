package e2e_test

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/hookd/hookd/internal/app"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/delivery/hookstest"
	"github.com/hookd/hookd/internal/store"
)

// TestRetentionPassOutlivesJobTimeout: a retention pass is not bound by the
// job timeout that bounds a delivery attempt. One held at its start for
// twice the job timeout (as a long VACUUM or a backlog of rows holds it)
// goes on and completes; bound by the job timeout, its context ended
// first and the job failed with the deadline, to begin again at the next
// pass.
func TestRetentionPassOutlivesJobTimeout(t *testing.T) {
	t.Parallel()
	const jobTimeout = 500 * time.Millisecond
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend, setupOpts{mutate: func(c *app.Config) {
			c.HTTPTimeout, c.JobTimeout = 200*time.Millisecond, jobTimeout
		}})
		held := make(chan bool, 1) // whether the pass's context outlived the hold
		hookstest.Set(t, b.h.Delivery, &delivery.Hooks{BeforePrune: func(ctx context.Context) {
			outlived := false
			select {
			case <-time.After(2 * jobTimeout):
				outlived = true
			case <-ctx.Done():
			}
			select { // the first pass's answer (the one run at start may come too)
			case held <- outlived:
			default:
			}
		}})
		var id int64
		err := b.h.DB.InTx(context.Background(), store.TxOptions{}, func(q *store.Q) error {
			res, err := q.InsertJobs(context.Background(), []river.InsertManyParams{{Args: delivery.PruneArgs{}}})
			if err == nil {
				id = res[0].Job.ID
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if outlived := <-held; !outlived {
			t.Fatalf("the retention pass's context ended within %v, twice its job timeout (%v): the pass is bound by the job timeout", 2*jobTimeout, jobTimeout)
		}
		j := b.waitJob(id, func(j *rivertype.JobRow) bool {
			return j.State == rivertype.JobStateCompleted || j.State == rivertype.JobStateDiscarded || len(j.Errors) > 0
		})
		if j.State != rivertype.JobStateCompleted || len(j.Errors) > 0 {
			t.Fatalf("retention job %s after %d attempts, errors %v; want completed at once", j.State, j.Attempt, j.Errors)
		}
	})
}
