package store

import (
	"context"
	"fmt"

	"github.com/hookd/hookd/internal/endpoint"
)

// Attempt is the outcome of one delivery attempt, as recorded.
type Attempt struct {
	DeliveryID string
	// Sent is true when a request was made (an attempt was spent).
	Sent          bool
	Status        int
	Error         string
	State         endpoint.DeliveryState
	NextAttemptAt *int64
	JobID         int64
	Now           int64
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
	_, err := q.exec(ctx, `UPDATE hookd_deliveries SET claimed_until = NULL, attempts = attempts + $2, last_status = $3, last_error = $4, state = $5,
		next_attempt_at = $6, finished_at = $7, updated_at = $8, job_id = CASE WHEN CAST($9 AS BIGINT) = 0 THEN job_id ELSE CAST($9 AS BIGINT) END WHERE id = $1`,
		a.DeliveryID, sent, a.Status, a.Error, string(a.State), a.NextAttemptAt, finished, a.Now, a.JobID)
	if err != nil {
		return fmt.Errorf("record attempt: %w", err)
	}
	return nil
}
