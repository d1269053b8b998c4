package store

import (
	"context"
	"fmt"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/event"
)

const eventCols = `id, owner_id, type, subject, occurred_at, data, tenant, endpoint_id, COALESCE(idempotency_key, ''), created_at`

func scanEvent(r row) (*event.Event, error) {
	var e event.Event
	var occurred, created int64
	var data []byte
	if err := r.Scan(&e.ID, &e.OwnerID, &e.Type, &e.Subject, &occurred, &data, &e.Tenant, &e.EndpointID, &e.IdempotencyKey, &created); err != nil {
		return nil, err
	}
	e.Data = data
	e.OccurredAt = fromTS(occurred)
	e.CreatedAt = fromTS(created)
	return &e, nil
}

// InsertEvent inserts e. With an idempotency key already used by the owner,
// nothing is written and the earlier event's id is returned with
// inserted=false.
func (q *Q) InsertEvent(ctx context.Context, e *event.Event) (id string, inserted bool, err error) {
	var key any
	if e.IdempotencyKey != "" {
		key = e.IdempotencyKey
	}
	n, err := q.q.exec(ctx, `INSERT INTO hookd_events (id, owner_id, type, subject, occurred_at, data, tenant, endpoint_id, idempotency_key, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (owner_id, idempotency_key) DO NOTHING`,
		e.ID, e.OwnerID, e.Type, e.Subject, ts(e.OccurredAt), []byte(e.Data), e.Tenant, e.EndpointID, key, ts(e.CreatedAt))
	if err != nil {
		return "", false, fmt.Errorf("insert event: %w", err)
	}
	if n == 1 {
		return e.ID, true, nil
	}
	err = q.q.queryRow(ctx, `SELECT id FROM hookd_events WHERE owner_id = $1 AND idempotency_key = $2`, e.OwnerID, e.IdempotencyKey).Scan(&id)
	if err != nil {
		return "", false, fmt.Errorf("insert event: idempotency lookup: %w", err)
	}
	return id, false, nil
}

// GetEvent returns one event of an owner ("" for any owner).
func (q *Q) GetEvent(ctx context.Context, ownerID, id string) (*event.Event, error) {
	e, err := scanEvent(q.q.queryRow(ctx, `SELECT `+eventCols+` FROM hookd_events WHERE id = $1 AND ($2 = '' OR owner_id = $2)`, id, ownerID))
	if NotFound(err) {
		return nil, apperr.New(apperr.NotFound, "event %q not found", id)
	}
	return e, err
}

// PruneEvents deletes up to limit events created before cutoff; it returns
// how many it deleted.
func (q *Q) PruneEvents(ctx context.Context, cutoff int64, limit int) (int64, error) {
	n, err := q.q.exec(ctx, `DELETE FROM hookd_events WHERE id IN (SELECT id FROM hookd_events WHERE created_at < $1 ORDER BY created_at LIMIT $2)`, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("prune events: %w", err)
	}
	return n, nil
}
