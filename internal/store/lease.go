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

// skipLocked makes concurrent takers on PostgreSQL pass over rows another
// taker is updating (a lease slot, a fresh delivery) and take the next free
// one, instead of queueing on the same row and finding it gone. SQLite has
// one writer at a time and no such clause.
func (q *Q) skipLocked() string {
	if q.db.Backend == Postgres {
		return ` FOR UPDATE SKIP LOCKED`
	}
	return ``
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
func (q *Q) ClaimDelivery(ctx context.Context, id string, attempts int, now, until int64) (bool, error) {
	n, err := q.exec(ctx, `UPDATE hookd_deliveries SET claimed_until = $4
		WHERE id = $1 AND `+stillPending+` AND attempts = $2 AND (claimed_until IS NULL OR claimed_until <= $3)`, id, attempts, now, until)
	if err != nil {
		return false, fmt.Errorf("claim delivery: %w", err)
	}
	return n == 1, nil
}

// ClaimFresh claims up to limit of the endpoint's oldest fresh deliveries
// (pending, never attempted, due, unclaimed) until `until` and returns
// their ids: what a lease holder drains next. Concurrent claimers (the
// holders of a kwork subscription's slots) get disjoint sets.
//
// after ("" for none) skips ids up to and including it: a drain passes the
// last id it read, so its next read starts past the deliveries it already
// sent, whose index entries stay behind, dead, until vacuum (under a long
// backlog, re-reading them from the head made each read slower).
func (q *Q) ClaimFresh(ctx context.Context, endpointID, after string, limit int, now, until int64) ([]string, error) {
	// The candidates are picked once, in a materialized CTE: PostgreSQL may
	// re-run an IN (… LIMIT … SKIP LOCKED) subquery per row and so claim
	// more than limit.
	rs, err := q.query(ctx, `WITH c AS MATERIALIZED (SELECT id FROM hookd_deliveries WHERE endpoint_id = $1 AND id > $5 AND `+freshAt2+`
		            ORDER BY id LIMIT $4`+q.skipLocked()+`)
		UPDATE hookd_deliveries SET claimed_until = $3
		WHERE id IN (SELECT id FROM c) AND (claimed_until IS NULL OR claimed_until <= $2) AND `+stillPending+` AND attempts = 0
		RETURNING id`, endpointID, now, until, limit, after)
	if err != nil {
		return nil, fmt.Errorf("claim fresh deliveries: %w", err)
	}
	defer rs.Close()
	var ids []string
	for rs.Next() {
		var id string
		if err := rs.Scan(&id); err != nil {
			return nil, fmt.Errorf("claim fresh deliveries: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rs.Err()
}

// ReleaseClaims gives up claims on deliveries that were not sent, so their
// own jobs (or another drain) can send them at once.
func (q *Q) ReleaseClaims(ctx context.Context, deliveryIDs []string) error {
	if len(deliveryIDs) == 0 {
		return nil
	}
	_, err := q.exec(ctx, `UPDATE hookd_deliveries SET claimed_until = NULL WHERE `+stillPending+` AND id IN (`+placeholders(1, len(deliveryIDs))+`)`, anys(deliveryIDs)...)
	if err != nil {
		return fmt.Errorf("release claims: %w", err)
	}
	return nil
}

// BusyEndpoints returns which of the endpoints have every lease slot held
// at now: a job enqueued for one of them now would only meet the lease
// busy and snooze.
func (q *Q) BusyEndpoints(ctx context.Context, endpointIDs []string, now int64) (map[string]bool, error) {
	busy := map[string]bool{}
	for len(endpointIDs) > 0 {
		chunk := endpointIDs[:min(len(endpointIDs), 1000)]
		endpointIDs = endpointIDs[len(chunk):]
		rs, err := q.query(ctx, `SELECT endpoint_id FROM hookd_endpoint_leases WHERE endpoint_id IN (`+placeholders(2, len(chunk))+`)
			GROUP BY endpoint_id HAVING min(busy_until) > $1`, append([]any{now}, anys(chunk)...)...)
		if err != nil {
			return nil, fmt.Errorf("busy endpoints: %w", err)
		}
		for rs.Next() {
			var id string
			if err := rs.Scan(&id); err != nil {
				rs.Close()
				return nil, fmt.Errorf("busy endpoints: %w", err)
			}
			busy[id] = true
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return nil, fmt.Errorf("busy endpoints: %w", err)
		}
	}
	return busy, nil
}
