package store

import (
	"context"
	"fmt"
)

// TakeRate takes the right to send to a rate-limited endpoint now, for
// every process at once: granted if the endpoint's next free time has
// come, which then moves to now + interval (unix microseconds). Refused,
// wait is how long until the next free time. The take is one upsert …
// RETURNING, atomic on both engines: of concurrent takers on PostgreSQL
// (queued on the row) exactly one gets a free time.
func (q *Q) TakeRate(ctx context.Context, endpointID string, now, interval int64) (ok bool, wait int64, err error) {
	var next int64
	err = q.queryRow(ctx, `INSERT INTO hookd_endpoint_rates AS r (endpoint_id, next_at) VALUES ($1, $3)
		ON CONFLICT (endpoint_id) DO UPDATE SET next_at = $3 WHERE r.next_at <= $2
		RETURNING next_at`, endpointID, now, now+interval).Scan(&next)
	if err == nil {
		return true, 0, nil
	}
	if !NotFound(err) {
		return false, 0, fmt.Errorf("take rate: %w", err)
	}
	if err := q.queryRow(ctx, `SELECT next_at FROM hookd_endpoint_rates WHERE endpoint_id = $1`, endpointID).Scan(&next); err != nil {
		if NotFound(err) { // the endpoint was deleted meanwhile
			return false, interval, nil
		}
		return false, 0, fmt.Errorf("take rate: %w", err)
	}
	return false, max(next-now, 1), nil
}

// RestampRate moves a granted send's next free time from grantedUntil to
// until, if nobody has been granted since: a take that returned late (it
// waited for a connection) stamps its send with the time it really goes,
// so the next one keeps a whole interval from it. false: someone else was
// granted meanwhile, and the caller must take again.
func (q *Q) RestampRate(ctx context.Context, endpointID string, grantedUntil, until int64) (bool, error) {
	n, err := q.exec(ctx, `UPDATE hookd_endpoint_rates SET next_at = $3 WHERE endpoint_id = $1 AND next_at = $2`, endpointID, grantedUntil, until)
	if err != nil {
		return false, fmt.Errorf("restamp rate: %w", err)
	}
	return n == 1, nil
}
