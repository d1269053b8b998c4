package store

import (
	"context"
	"fmt"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/endpoint"
)

const deliveryCols = `id, owner_id, endpoint_id, event_id, event_type, job_id, state, attempts, last_status, last_error, next_attempt_at, created_at, updated_at, finished_at`

func scanDelivery(r row) (*endpoint.Delivery, error) {
	var d endpoint.Delivery
	var next, finished *int64
	var created, updated int64
	if err := r.Scan(&d.ID, &d.OwnerID, &d.EndpointID, &d.EventID, &d.EventType, &d.JobID, &d.State, &d.Attempts, &d.LastStatus, &d.LastError, &next, &created, &updated, &finished); err != nil {
		return nil, err
	}
	d.NextAttemptAt = fromTSPtr(next)
	d.CreatedAt = fromTS(created)
	d.UpdatedAt = fromTS(updated)
	d.FinishedAt = fromTSPtr(finished)
	return &d, nil
}

// FindDelivery returns the delivery of one event to one endpoint.
func (q *Q) FindDelivery(ctx context.Context, endpointID, eventID string) (*endpoint.Delivery, error) {
	d, err := scanDelivery(q.queryRow(ctx, q.routed(`SELECT `+deliveryCols+` FROM hookd_deliveries WHERE endpoint_id = $1 AND event_id = $2 AND `+unexpiredDelivery("", 3), eventID),
		endpointID, eventID, q.db.keptSince()))
	if NotFound(err) {
		return nil, apperr.New(apperr.NotFound, "no delivery of event %q to endpoint %q", eventID, endpointID)
	}
	return d, err
}

// deliveryPendingSQL is DeliveryPending's statement ($1 the endpoint, $2
// the event).
const deliveryPendingSQL = `SELECT d.state, d.job_id, NOT EXISTS (SELECT 1 FROM hookd_endpoints e WHERE e.id = d.endpoint_id)
		FROM hookd_deliveries d WHERE d.endpoint_id = $1 AND d.event_id = $2`

// DeliveryPending reports whether the delivery of an event to an endpoint
// is still pending for job jobID (not settled, not another job's): the
// short read a job makes when it finds the endpoint busy. NotFound when the
// delivery is gone, or its endpoint is (then the delivery is dropped:
// DropOrphanDelivery).
func (q *Q) DeliveryPending(ctx context.Context, endpointID, eventID string, jobID int64) (bool, error) {
	var state string
	var job int64
	var orphan bool
	err := q.queryRow(ctx, q.routed(deliveryPendingSQL, eventID), endpointID, eventID).Scan(&state, &job, &orphan)
	if orphan {
		err = q.DropOrphanDelivery(ctx, endpointID, eventID)
	}
	if NotFound(err) || (orphan && err == nil) {
		return false, apperr.New(apperr.NotFound, "no delivery of event %q to endpoint %q", eventID, endpointID)
	}
	if err != nil {
		return false, fmt.Errorf("delivery pending: %w", q.db.routeMissed(err))
	}
	return state == string(endpoint.Pending) && (job == 0 || job == jobID), nil
}

// DropOrphanDelivery deletes the delivery of an event to an endpoint if the
// endpoint is gone. Deliveries have no foreign key to their endpoint on
// PostgreSQL (migration 011): DeleteEndpoint deletes an endpoint's
// deliveries, but a fanout that read the endpoint before it went may write
// one after, and the job of that delivery, finding no endpoint, drops it.
func (q *Q) DropOrphanDelivery(ctx context.Context, endpointID, eventID string) error {
	_, err := q.exec(ctx, q.routed(`DELETE FROM hookd_deliveries WHERE endpoint_id = $1 AND event_id = $2
		AND NOT EXISTS (SELECT 1 FROM hookd_endpoints e WHERE e.id = $1)`, eventID), endpointID, eventID)
	if err != nil {
		return fmt.Errorf("drop orphan delivery: %w", err)
	}
	return nil
}

// stillPending is "state = 'pending'" for statements that pick rows by id:
// written so PostgreSQL cannot use the partial index of pending rows for
// it. With statistics lagging a burst of fanout it did, scanning every
// pending row of the table (~12–20 ms) to update 32 of them by id.
const stillPending = `state NOT IN ('delivered', 'failed')`

// FailedDeliveries returns up to limit failed deliveries of an endpoint,
// oldest first (what redeliver re-enqueues), but none retention expired.
func (q *Q) FailedDeliveries(ctx context.Context, endpointID string, limit int) ([]*endpoint.Delivery, error) {
	out, err := collect(ctx, q, scanDelivery, `SELECT `+deliveryCols+` FROM hookd_deliveries WHERE endpoint_id = $1 AND state = 'failed' AND `+unexpiredDelivery("", 3)+` ORDER BY id LIMIT $2`,
		endpointID, limit, q.db.keptSince())
	if err != nil {
		return nil, fmt.Errorf("failed deliveries: %w", err)
	}
	return out, nil
}

// ResetDelivery puts a failed delivery back to pending under a new job,
// with a fresh attempt budget (attempts counts the current job's attempts).
func (q *Q) ResetDelivery(ctx context.Context, id string, jobID, now int64) error {
	q.db.freshMissed() // its event may be of any time
	_, err := q.exec(ctx, `UPDATE hookd_deliveries SET state = 'pending', job_id = $2, attempts = 0, finished_at = NULL, next_attempt_at = $3, updated_at = $3 WHERE id = $1 AND state = 'failed'`, id, jobID, now)
	if err != nil {
		return fmt.Errorf("reset delivery: %w", err)
	}
	return nil
}

// PruneDeliveries deletes up to limit deliveries that finished before
// cutoff, except those of the events in spare (zero: none spared): the
// partitions retention leaves to their drop (DropExpiredPartitions), whose
// expired rows the reads hide until then (retention.go).
func (q *Q) PruneDeliveries(ctx context.Context, cutoff int64, spare IDRange, limit int) (int64, error) {
	cond, bounds := spare.outside("event_id", 3)
	n, err := q.exec(ctx, `DELETE FROM hookd_deliveries WHERE id IN (SELECT id FROM hookd_deliveries WHERE finished_at < $1`+cond+` ORDER BY finished_at LIMIT $2)`,
		append([]any{cutoff, limit}, bounds...)...)
	if err != nil {
		return 0, fmt.Errorf("prune deliveries: %w", err)
	}
	return n, nil
}

// Reclaim makes the space of the rows retention deleted reusable, after
// a pass: on PostgreSQL a VACUUM of the pruned tables, on SQLite nothing
// (its free list does it).
func (db *DB) Reclaim(ctx context.Context) error {
	if err := db.d.reclaim(ctx); err != nil {
		return fmt.Errorf("reclaim pruned space: %w", err)
	}
	return nil
}

// OwnsJob reports whether River job jobID, whose arguments name
// (endpointID, eventID), is the current job of a delivery of ownerID's.
// The pair makes it one lookup by the deliveries' unique key: job_id has no
// index (it would cost every delivery write), and scanning for it grew with
// the table.
func (q *Q) OwnsJob(ctx context.Context, ownerID string, jobID int64, endpointID, eventID string) (bool, error) {
	var one int
	err := q.queryRow(ctx, q.routed(`SELECT 1 FROM hookd_deliveries WHERE endpoint_id = $1 AND event_id = $2 AND owner_id = $3 AND job_id = $4`, eventID),
		endpointID, eventID, ownerID, jobID).Scan(&one)
	if NotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("owns job: %w", err)
	}
	return true, nil
}
