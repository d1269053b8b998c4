package store

import (
	"context"
	"fmt"
)

// The delivery lanes (internal/delivery/lane.go) are River queues; an
// endpoint's slow_since says which one its deliveries belong in. Moving a
// job to another lane is one more place hookd reaches past River's client
// (see the list above deleteJobsStmt in river.go): it rewrites river_job's
// queue column, which River reads only when it fetches (a job's
// completion, retry and snooze set its state and times by id, never its
// queue). Checked against River v0.51.2 (both drivers' river_job has a
// text queue column; JobSetStateIfRunning and the completer leave it
// alone). Guarded by the root package's TestEndpointLeavesSlowLane: a
// running job moved to the slow lane comes back there for its retry, and
// River works the moved jobs in their new queue.

// SetEndpointSlow records whether the endpoint's attempts are slow: since
// is when they began to be (unix µs), nil when they are fast again.
func (q *Q) SetEndpointSlow(ctx context.Context, endpointID string, since *int64) error {
	if _, err := q.exec(ctx, `UPDATE hookd_endpoints SET slow_since = $2 WHERE id = $1`, endpointID, since); err != nil {
		return fmt.Errorf("set endpoint lane: %w", err)
	}
	return nil
}

// MoveEndpointJobs moves the River jobs of the endpoint's pending
// deliveries that are not in queue to it, running ones included (a
// running job's retry or snooze then comes back in queue), and says how
// many it moved.
func (q *Q) MoveEndpointJobs(ctx context.Context, endpointID, queue string) (int64, error) {
	n, err := q.exec(ctx, `UPDATE river_job SET queue = $2
		WHERE queue <> $2 AND state IN ('available', 'scheduled', 'retryable', 'running')
		AND id IN (SELECT job_id FROM hookd_deliveries WHERE endpoint_id = $1 AND state = 'pending')`, endpointID, queue)
	if err != nil {
		return 0, fmt.Errorf("move endpoint %s jobs to %s: %w", endpointID, queue, err)
	}
	return n, nil
}

// MoveJob moves one River job to queue: a deliver job that finds itself
// in the wrong lane, before it snoozes to run in the right one.
func (q *Q) MoveJob(ctx context.Context, jobID int64, queue string) error {
	if _, err := q.exec(ctx, `UPDATE river_job SET queue = $2 WHERE id = $1`, jobID, queue); err != nil {
		return fmt.Errorf("move job %d to %s: %w", jobID, queue, err)
	}
	return nil
}

// OwnerInFlight is one owner's lease slots held now in one lane, by every
// process: its deliveries in flight (a slot is held for one attempt, or
// for a drain of several in a row).
type OwnerInFlight struct {
	OwnerID  string `json:"owner_id"`
	Lane     string `json:"lane"`
	InFlight int    `json:"in_flight"`
}

// InFlightByOwner returns the limit owners (and lanes) holding the most
// lease slots at now (unix µs), most first: the operator's view of who
// holds the workers, across processes.
func (q *Q) InFlightByOwner(ctx context.Context, now int64, limit int) ([]OwnerInFlight, error) {
	out, err := collect(ctx, q, func(r row) (o OwnerInFlight, err error) {
		err = r.Scan(&o.OwnerID, &o.Lane, &o.InFlight)
		return o, err
	}, `SELECT e.owner_id, CASE WHEN e.slow_since IS NULL THEN 'deliver' ELSE 'deliver_slow' END, count(*)
		FROM hookd_endpoint_leases l JOIN hookd_endpoints e ON e.id = l.endpoint_id
		WHERE l.holder <> 0 AND l.busy_until > $1
		GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2 LIMIT $2`, now, limit)
	if err != nil {
		return nil, fmt.Errorf("in flight by owner: %w", err)
	}
	return nonNil(out), nil
}
