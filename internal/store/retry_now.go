package store

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// RetryNow makes every pending delivery of the endpoint that waits for a
// later time (a retry's backoff, a Retry-After snooze, a failing
// endpoint's cooldown) due at now: hookd's record first, then its River
// job (JobRetry: available at once; a running job is left alone). It
// returns how many deliveries it brought forward. Deliveries already due
// are left as they are: a drain or their own job sends them. A job still
// running (its attempt just ended, River not yet told) keeps the time its
// outcome sets; a second call brings it forward.
func (db *DB) RetryNow(ctx context.Context, endpointID string, now int64) (int, error) {
	// A transaction of its own, for the op's audit record (InTx).
	var moved []int64
	err := db.InTx(ctx, TxOptions{}, func(q *Q) error {
		var err error
		moved, err = collect(ctx, q.querier, scanOne[int64], `UPDATE hookd_deliveries SET next_attempt_at = $2, updated_at = $2
		WHERE endpoint_id = $1 AND state = 'pending' AND next_attempt_at > $2 RETURNING job_id`, endpointID, now)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("retry now: %w", err)
	}
	n := len(moved)
	jobs := slices.DeleteFunc(moved, func(id int64) bool { return id == 0 })
	if db.jobs == nil || len(jobs) == 0 {
		return n, nil
	}
	queues := map[string]bool{}
	for _, id := range jobs {
		job, err := db.jobs.JobRetry(ctx, id)
		if errors.Is(err, river.ErrNotFound) {
			continue // finished meanwhile, or deleted by a drain that sent it
		}
		if err != nil {
			return n, fmt.Errorf("retry now: job %d: %w (the deliveries are due; their jobs run when scheduled unless you call retry_now again)", id, err)
		}
		if job.State == rivertype.JobStateAvailable {
			queues[job.Queue] = true
		}
	}
	if db.notifyQueue != nil {
		for q := range queues {
			if err := db.notifyQueue(ctx, q); err != nil {
				return n, fmt.Errorf("retry now: notify queue %s: %w", q, err)
			}
		}
	}
	return n, nil
}
