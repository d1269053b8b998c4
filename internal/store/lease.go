package store

import (
	"context"
	"fmt"
)

// resizeLeases makes an endpoint have exactly n lease slots (0..n-1).
func (q *Q) resizeLeases(ctx context.Context, endpointID string, n int) error {
	if n < 1 {
		n = 1
	}
	if _, err := q.exec(ctx, `DELETE FROM hookd_endpoint_leases WHERE endpoint_id = $1 AND slot >= $2`, endpointID, n); err != nil {
		return fmt.Errorf("resize leases: %w", err)
	}
	for slot := 0; slot < n; slot++ {
		if _, err := q.exec(ctx, `INSERT INTO hookd_endpoint_leases (endpoint_id, slot) VALUES ($1, $2) ON CONFLICT (endpoint_id, slot) DO NOTHING`, endpointID, slot); err != nil {
			return fmt.Errorf("resize leases: %w", err)
		}
	}
	return nil
}

// TakeLease takes a free slot of the endpoint's lease until `until`
// (or the slot holder already holds: a retried job whose release was lost
// re-enters its own lease rather than waiting it out)
// (UPDATE … SET busy_until … RETURNING): one statement, no transaction held
// during the delivery. ok=false: every slot is busy.
//
// Under concurrency on PostgreSQL takers skip slots another taker is
// locking, so N concurrent takers of an N-slot lease land on N slots; the
// outer WHERE re-checks busy_until under the row lock: never two holders of
// one slot.
func (q *Q) TakeLease(ctx context.Context, endpointID string, holder, now, until int64) (slot int, ok bool, err error) {
	err = q.queryRow(ctx, `UPDATE hookd_endpoint_leases SET busy_until = $4, holder = $2
		WHERE endpoint_id = $1 AND (busy_until <= $3 OR holder = $2)
		  AND slot = (SELECT slot FROM hookd_endpoint_leases WHERE endpoint_id = $1 AND (busy_until <= $3 OR holder = $2) ORDER BY holder = $2 DESC, slot LIMIT 1`+q.skipLocked()+`)
		RETURNING slot`, endpointID, holder, now, until).Scan(&slot)
	if NotFound(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("take lease: %w", err)
	}
	return slot, true, nil
}

// ReleaseLease frees a slot, if holder still holds it.
func (q *Q) ReleaseLease(ctx context.Context, endpointID string, slot int, holder int64) error {
	_, err := q.exec(ctx, `UPDATE hookd_endpoint_leases SET busy_until = 0, holder = 0 WHERE endpoint_id = $1 AND slot = $2 AND holder = $3`, endpointID, slot, holder)
	if err != nil {
		return fmt.Errorf("release lease: %w", err)
	}
	return nil
}

// ClaimDelivery claims a pending delivery for sending until `until`, if it
// still has the attempts the caller read and nobody else holds a claim.
// eventID is the delivery's event ("": not known; see ofEvent).
func (q *Q) ClaimDelivery(ctx context.Context, id, eventID string, attempts int, now, until int64) (bool, error) {
	args := []any{id, attempts, now, until}
	n, err := q.exec(ctx, q.routed(`UPDATE hookd_deliveries SET claimed_until = $4
		WHERE id = $1 AND `+stillPending+` AND attempts = $2 AND (claimed_until IS NULL OR claimed_until <= $3)`+ofEvent(&args, eventID), eventID), args...)
	if err != nil {
		return false, fmt.Errorf("claim delivery: %w", q.db.routeMissed(err))
	}
	return n == 1, nil
}
