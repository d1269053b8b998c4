package store

import (
	"context"
	"fmt"

	"github.com/hookd/hookd/internal/event"
)

// PutEventType registers or updates an event type (OwnerID "" for the
// catalog shared by every owner).
func (q *Q) PutEventType(ctx context.Context, t *event.Type) error {
	_, err := q.q.exec(ctx, `INSERT INTO hookd_event_types (owner_id, name, exposure, description, created_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (owner_id, name) DO UPDATE SET exposure = excluded.exposure, description = excluded.description`,
		t.OwnerID, t.Name, string(t.Exposure), t.Description, ts(t.CreatedAt))
	if err != nil {
		return fmt.Errorf("put event type: %w", err)
	}
	return nil
}

// ListEventTypes returns the types an owner sees: its own, then the shared
// catalog's that it has not overridden, by name.
func (q *Q) ListEventTypes(ctx context.Context, ownerID string) ([]*event.Type, error) {
	rs, err := q.q.query(ctx, `SELECT owner_id, name, exposure, description, created_at FROM hookd_event_types t
		WHERE owner_id = $1 OR (owner_id = '' AND NOT EXISTS (SELECT 1 FROM hookd_event_types o WHERE o.owner_id = $1 AND o.name = t.name))
		ORDER BY name`, ownerID)
	if err != nil {
		return nil, fmt.Errorf("list event types: %w", err)
	}
	defer rs.Close()
	var out []*event.Type
	for rs.Next() {
		var t event.Type
		var created int64
		if err := rs.Scan(&t.OwnerID, &t.Name, &t.Exposure, &t.Description, &created); err != nil {
			return nil, err
		}
		t.CreatedAt = fromTS(created)
		out = append(out, &t)
	}
	return out, rs.Err()
}

// Exposure returns a type's exposure for an owner (its own registration
// first, then the shared catalog) and whether it is registered at all.
// Unregistered types are Internal.
func (q *Q) Exposure(ctx context.Context, ownerID, name string) (event.Exposure, bool, error) {
	var exp string
	err := q.q.queryRow(ctx, `SELECT exposure FROM hookd_event_types WHERE name = $2 AND owner_id IN ($1, '') ORDER BY owner_id DESC LIMIT 1`, ownerID, name).Scan(&exp)
	if NotFound(err) {
		return event.Internal, false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("event type exposure: %w", err)
	}
	return event.Exposure(exp), true, nil
}
