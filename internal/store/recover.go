package store

import (
	"context"
	"fmt"

	"github.com/hookd/hookd/internal/endpoint"
)

// RecoverWindow names the deliveries of one endpoint a recovery re-sends:
// created in [Since, Until) (unix µs), in one of States (failed,
// delivered), with ids past After (a cursor: "" from the start).
type RecoverWindow struct {
	EndpointID   string
	Since, Until int64
	States       []string
	After        string
}

// where is w's condition, with the deliveries retention expired at kept
// left out (they are gone from the log: a recovery does not bring them
// back).
func (w RecoverWindow) where(from int, kept int64) (string, []any) {
	args := []any{w.EndpointID, w.Since, w.Until, w.After}
	return `endpoint_id = $1 AND created_at >= $2 AND created_at < $3 AND id > $4 AND state IN (` + placeholders(from, len(w.States)) + `) AND ` + unexpiredDelivery("", from+len(w.States)),
		append(append(args, anys(w.States)...), kept)
}

// CountRecoverable counts the deliveries in w.
func (q *Q) CountRecoverable(ctx context.Context, w RecoverWindow) (int, error) {
	cond, args := w.where(5, q.db.keptSince())
	var n int
	if err := q.queryRow(ctx, `SELECT count(*) FROM hookd_deliveries WHERE `+cond, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count recoverable deliveries: %w", err)
	}
	return n, nil
}

// RecoverableDeliveries reads up to limit deliveries of w, in id order.
func (q *Q) RecoverableDeliveries(ctx context.Context, w RecoverWindow, limit int) ([]*endpoint.Delivery, error) {
	cond, args := w.where(6, q.db.keptSince())
	out, err := collect(ctx, q, scanDelivery, `SELECT `+deliveryCols+` FROM hookd_deliveries WHERE `+cond+` ORDER BY id LIMIT $5`,
		append(args[:4:4], append([]any{limit}, args[4:]...)...)...)
	if err != nil {
		return nil, fmt.Errorf("recoverable deliveries: %w", err)
	}
	return out, nil
}

// ResetDeliveryFrom puts a finished delivery (failed, or delivered when
// the owner asks to recover those too) back to pending under a new job,
// with a fresh attempt budget.
func (q *Q) ResetDeliveryFrom(ctx context.Context, id string, jobID, now int64) error {
	q.db.freshMissed() // its event may be of any time
	_, err := q.exec(ctx, `UPDATE hookd_deliveries SET state = 'pending', job_id = $2, attempts = 0, finished_at = NULL, next_attempt_at = $3, updated_at = $3
		WHERE id = $1 AND state IN ('failed', 'delivered')`, id, jobID, now)
	if err != nil {
		return fmt.Errorf("reset delivery: %w", err)
	}
	return nil
}

// ExportPage reads up to limit of an endpoint's deliveries past after (a
// delivery id; "" from the start), in id order, with their events and
// owner (what their envelopes are rendered from): state "" for every
// state, Since/Until bound created_at (0: unbounded).
func (q *Q) ExportPage(ctx context.Context, endpointID, state, after string, since, until int64, limit int) ([]*AttemptInput, error) {
	// Only the bounds given are in the statement: an unbounded
	// created_at range let PostgreSQL read the page through the index on
	// (endpoint_id, created_at …) and sort the endpoint's every delivery
	// for each page (0.7 s a page at 100,000), where (endpoint_id, id)
	// reads just the page.
	cond, args := `d.endpoint_id = $1 AND d.id > $2`, []any{endpointID, after, limit}
	if state != "" {
		args = append(args, state)
		cond += fmt.Sprintf(` AND d.state = $%d`, len(args))
	}
	if since != 0 {
		args = append(args, since)
		cond += fmt.Sprintf(` AND d.created_at >= $%d`, len(args))
	}
	if until != 0 {
		args = append(args, until)
		cond += fmt.Sprintf(` AND d.created_at < $%d`, len(args))
	}
	// The page's ids first, then the page with its events and owner: one
	// statement joining them let a fresh table's plan hash every event of
	// the database for each page.
	ids, err := collect(ctx, q, scanOne[string], `SELECT d.id FROM hookd_deliveries d WHERE `+cond+` ORDER BY d.id LIMIT $3`, args...)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	return q.LoadAttempts(ctx, ids)
}
