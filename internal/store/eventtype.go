package store

import (
	"context"
	"fmt"

	"github.com/hookd/hookd/internal/event"
)

// offered is the condition on a hookd_event_types row (named t) that makes
// it one owner $1 sees: its own, or a shared one offered to every owner or
// to the owner's profile.
const offered = `(t.owner_id = $1 OR (t.owner_id = '' AND t.profile IN ('', (SELECT profile FROM hookd_owners WHERE id = $1))))`

// effective adds to offered: a shared type the owner has registered itself
// is the owner's, not the shared one.
const effective = offered + ` AND (t.owner_id <> '' OR NOT EXISTS (SELECT 1 FROM hookd_event_types o WHERE o.owner_id = $1 AND o.name = t.name))`

// PutEventType registers or updates an event type (OwnerID "" for the
// catalog shared by every owner).
func (q *Q) PutEventType(ctx context.Context, t *event.Type) error {
	_, err := q.q.exec(ctx, `INSERT INTO hookd_event_types (owner_id, name, exposure, scoped, profile, description, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (owner_id, name) DO UPDATE SET exposure = excluded.exposure, scoped = excluded.scoped, profile = excluded.profile, description = excluded.description`,
		t.OwnerID, t.Name, string(t.Exposure), t.Scoped, t.Profile, t.Description, ts(t.CreatedAt))
	if err != nil {
		return fmt.Errorf("put event type: %w", err)
	}
	return nil
}

// KeepSharedEventTypes removes every shared type not named in keep: the
// shared catalog is what the latest start loaded.
func (q *Q) KeepSharedEventTypes(ctx context.Context, keep []string) error {
	rs, err := q.q.query(ctx, `SELECT name FROM hookd_event_types WHERE owner_id = ''`)
	if err != nil {
		return fmt.Errorf("shared event types: %w", err)
	}
	want := make(map[string]bool, len(keep))
	for _, n := range keep {
		want[n] = true
	}
	var gone []string
	for rs.Next() {
		var n string
		if err := rs.Scan(&n); err != nil {
			rs.Close()
			return fmt.Errorf("shared event types: %w", err)
		}
		if !want[n] {
			gone = append(gone, n)
		}
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return fmt.Errorf("shared event types: %w", err)
	}
	for _, n := range gone {
		if _, err := q.q.exec(ctx, `DELETE FROM hookd_event_types WHERE owner_id = '' AND name = $1`, n); err != nil {
			return fmt.Errorf("drop shared event type %s: %w", n, err)
		}
	}
	return nil
}

// ListEventTypes returns the types an owner sees: its own, then the shared
// ones offered to it (to every owner, or to its profile) that it has not
// registered itself, by name.
func (q *Q) ListEventTypes(ctx context.Context, ownerID string) ([]*event.Type, error) {
	rs, err := q.q.query(ctx, `SELECT t.owner_id, t.name, t.exposure, t.scoped, t.description, t.created_at FROM hookd_event_types t
		WHERE `+effective+` ORDER BY t.name`, ownerID)
	if err != nil {
		return nil, fmt.Errorf("list event types: %w", err)
	}
	defer rs.Close()
	var out []*event.Type
	for rs.Next() {
		var t event.Type
		var created int64
		if err := rs.Scan(&t.OwnerID, &t.Name, &t.Exposure, &t.Scoped, &t.Description, &created); err != nil {
			return nil, err
		}
		t.CreatedAt = fromTS(created)
		out = append(out, &t)
	}
	return out, rs.Err()
}

// Exposure returns a type's exposure for an owner (its own registration
// first, then the shared ones offered to it) and whether it is registered
// at all. Unregistered types are Internal.
func (q *Q) Exposure(ctx context.Context, ownerID, name string) (event.Exposure, bool, error) {
	var exp string
	err := q.q.queryRow(ctx, `SELECT t.exposure FROM hookd_event_types t WHERE t.name = $2 AND `+offered+` ORDER BY t.owner_id DESC LIMIT 1`, ownerID, name).Scan(&exp)
	if NotFound(err) {
		return event.Internal, false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("event type exposure: %w", err)
	}
	return event.Exposure(exp), true, nil
}

// ScopedTypes returns the names of the types that are scoped for an owner
// (usually none or one): fanout judges scope only for these.
func (q *Q) ScopedTypes(ctx context.Context, ownerID string) (map[string]bool, error) {
	rs, err := q.q.query(ctx, `SELECT t.name FROM hookd_event_types t WHERE t.scoped AND `+effective, ownerID)
	if err != nil {
		return nil, fmt.Errorf("scoped event types: %w", err)
	}
	defer rs.Close()
	out := map[string]bool{}
	for rs.Next() {
		var n string
		if err := rs.Scan(&n); err != nil {
			return nil, fmt.Errorf("scoped event types: %w", err)
		}
		out[n] = true
	}
	return out, rs.Err()
}
