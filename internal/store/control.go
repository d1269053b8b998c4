package store

import (
	"context"
	"fmt"
)

// DisableEndpoint disables an enabled endpoint with reason at now (unix
// microseconds): what a receiver's webhook-delivery: disable does. It
// says whether this call disabled it (false: it was disabled already, or
// is gone).
func (q *Q) DisableEndpoint(ctx context.Context, id, reason string, now int64) (bool, error) {
	n, err := q.exec(ctx, `UPDATE hookd_endpoints SET enabled = false, disabled_reason = $2, updated_at = $3 WHERE id = $1 AND enabled = true`, id, reason, now)
	if err != nil {
		return false, fmt.Errorf("disable endpoint %s: %w", id, err)
	}
	return n == 1, nil
}
