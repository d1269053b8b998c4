package store

import (
	"context"
	"fmt"
	"strconv"

	"github.com/hookd/hookd/internal/endpoint"
)

// Attempt is the outcome of one delivery attempt, as recorded.
type Attempt struct {
	DeliveryID string
	// EventID, when set, is the delivery's event: the update then reads
	// one time partition (store/partition.go), not each partition's index.
	EventID string
	// Sent is true when a request was made (an attempt was spent).
	Sent          bool
	Status        int
	Error         string
	State         endpoint.DeliveryState
	NextAttemptAt *int64
	JobID         int64
	Now           int64
}

// ofEvent is the condition that a delivery's event is eventID, its
// parameter appended to args ("" for no event: no condition). Naming the
// event lets a statement that finds a delivery by its own id read one
// time partition on PostgreSQL.
func ofEvent(args *[]any, eventID string) string {
	if eventID == "" {
		return ""
	}
	*args = append(*args, eventID)
	return ` AND event_id = $` + strconv.Itoa(len(*args))
}

// RecordAttempt updates a delivery after an attempt or a snooze.
func (q *Q) RecordAttempt(ctx context.Context, a Attempt) error {
	var finished *int64
	if a.State != endpoint.Pending {
		finished = &a.Now
	}
	sent := 0
	if a.Sent {
		sent = 1
	}
	args := []any{a.DeliveryID, sent, a.Status, a.Error, string(a.State), a.NextAttemptAt, finished, a.Now, a.JobID}
	_, err := q.exec(ctx, q.routed(`UPDATE hookd_deliveries SET claimed_until = NULL, attempts = attempts + $2, last_status = $3, last_error = $4, state = $5,
		next_attempt_at = $6, finished_at = $7, updated_at = $8, job_id = CASE WHEN CAST($9 AS BIGINT) = 0 THEN job_id ELSE CAST($9 AS BIGINT) END WHERE id = $1`+
		ofEvent(&args, a.EventID), a.EventID), args...)
	if err != nil {
		return fmt.Errorf("record attempt: %w", q.db.routeMissed(err))
	}
	return nil
}
