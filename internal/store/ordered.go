package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/riverqueue/river"

	"github.com/hookd/hookd/internal/endpoint"
)

// OrderedHead returns an ordered endpoint's head: its pending delivery of
// the oldest event (nil: none pending).
func (q *Q) OrderedHead(ctx context.Context, endpointID string) (*endpoint.Delivery, error) {
	head, err := scanDelivery(q.queryRow(ctx, `SELECT `+deliveryCols+` FROM hookd_deliveries WHERE endpoint_id = $1 AND state = 'pending'
		ORDER BY event_id LIMIT 1`, endpointID))
	if NotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ordered head: %w", err)
	}
	return head, nil
}

// OldestAwaitingFanout returns the id of the owner's oldest event still
// awaiting its fanout ("" for none): it may yet add deliveries ahead of
// any younger event's.
func (q *Q) OldestAwaitingFanout(ctx context.Context, ownerID string) (string, error) {
	var id string
	err := q.queryRow(ctx, `SELECT id FROM hookd_events WHERE owner_id = $1 AND fanout_job <> 0 ORDER BY id LIMIT 1`, ownerID).Scan(&id)
	if NotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("oldest awaiting fanout: %w", err)
	}
	return id, nil
}

// OrderedAttempts reads up to limit of an ordered endpoint's pending
// deliveries in publish (event id) order, past the event id after ("" for
// none), with everything an attempt needs: the drain of an ordered
// endpoint sends them in this order and stops at the first it may not send.
func (q *Q) OrderedAttempts(ctx context.Context, endpointID, after string, limit int) ([]*AttemptInput, error) {
	return q.attempts(ctx, "ordered attempts", attemptSelect+`d.endpoint_id = $1 AND d.state = 'pending' AND d.event_id > $2
		ORDER BY d.event_id LIMIT $3`, endpointID, after, limit)
}

// WakeJob makes a scheduled job available now (River's JobRetry; a
// running or finished job is left alone, a gone one is not an error).
func (db *DB) WakeJob(ctx context.Context, jobID int64) error {
	if db.jobs == nil || jobID == 0 {
		return nil
	}
	if _, err := db.jobs.JobRetry(ctx, jobID); err != nil && !errors.Is(err, river.ErrNotFound) {
		return fmt.Errorf("wake job %d: %w", jobID, err)
	}
	return nil
}
