package store

import "context"

// Exec runs a statement in q (for tests that need a write of their own
// inside a store transaction).
func (q *Q) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	return q.exec(ctx, sql, args...)
}
