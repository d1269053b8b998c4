package store

import (
	"context"
	"fmt"

	"github.com/hookd/hookd/internal/endpoint"
)

// writeCode stores e's filter and transformation (migration 023) beside
// the statement that creates or updates e, in its transaction. A new
// endpoint without code writes nothing: both columns default to empty.
func (q *Q) writeCode(ctx context.Context, e *endpoint.Endpoint, creating bool) error {
	if creating && e.Code == (endpoint.Code{}) {
		return nil
	}
	if _, err := q.exec(ctx, `UPDATE hookd_endpoints SET filter_code = $2, transform_code = $3 WHERE id = $1`, e.ID, e.Filter, e.Transformation); err != nil {
		return fmt.Errorf("endpoint %s code: %w", e.ID, err)
	}
	return nil
}
