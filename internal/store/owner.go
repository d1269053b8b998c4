package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/owner"
)

const ownerCols = `id, profile, attributes, created_at`

func scanOwner(r row) (*owner.Owner, error) {
	var o owner.Owner
	var attrs string
	var created int64
	if err := r.Scan(&o.ID, &o.Profile, &attrs, &created); err != nil {
		return nil, err
	}
	o.CreatedAt = fromTS(created)
	if err := json.Unmarshal([]byte(attrs), &o.Attributes); err != nil {
		return nil, fmt.Errorf("owner %s attributes: %w", o.ID, err)
	}
	if o.Attributes == nil {
		o.Attributes = map[string]string{}
	}
	return &o, nil
}

// CreateOwner inserts o; Conflict if the id is taken.
func (q *Q) CreateOwner(ctx context.Context, o *owner.Owner) error {
	attrs, err := json.Marshal(o.Attributes)
	if err != nil {
		return err
	}
	n, err := q.exec(ctx, `INSERT INTO hookd_owners (`+ownerCols+`) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING`,
		o.ID, o.Profile, string(attrs), ts(o.CreatedAt))
	if err != nil {
		return fmt.Errorf("create owner: %w", err)
	}
	if n == 0 {
		return apperr.New(apperr.Conflict, "owner %q already exists", o.ID)
	}
	return nil
}

// GetOwner returns one owner, or a NotFound error.
func (q *Q) GetOwner(ctx context.Context, id string) (*owner.Owner, error) {
	o, err := scanOwner(q.queryRow(ctx, `SELECT `+ownerCols+` FROM hookd_owners WHERE id = $1`, id))
	if NotFound(err) {
		return nil, apperr.New(apperr.NotFound, "owner %q not found", id)
	}
	return o, err
}

// ListOwners returns every owner, oldest first.
func (q *Q) ListOwners(ctx context.Context) ([]*owner.Owner, error) {
	out, err := collect(ctx, q, scanOwner, `SELECT `+ownerCols+` FROM hookd_owners ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("list owners: %w", err)
	}
	return out, nil
}

// UpdateOwner replaces an owner's profile and attributes.
func (q *Q) UpdateOwner(ctx context.Context, o *owner.Owner) error {
	attrs, err := json.Marshal(o.Attributes)
	if err != nil {
		return err
	}
	n, err := q.exec(ctx, `UPDATE hookd_owners SET profile = $2, attributes = $3 WHERE id = $1`, o.ID, o.Profile, string(attrs))
	if err != nil {
		return fmt.Errorf("update owner: %w", err)
	}
	if n == 0 {
		return apperr.New(apperr.NotFound, "owner %q not found", o.ID)
	}
	return nil
}

// DeleteOwner deletes an owner with its keys, endpoints, events, deliveries
// and event types; run it in a transaction. Keys and endpoints go by their
// foreign keys; events and deliveries have none on PostgreSQL (migration
// 011), so they are deleted here. The deliveries go first, by their
// endpoints (the delivery log's indexes lead with endpoint_id; a delivery
// a fanout writes after this is dropped by its job, DropOrphanDelivery).
// The events go after the owner's row: a publish holds that row locked
// while it writes (ReadPublishRules), so the owner's delete waits for it,
// and the events' delete then sees what it wrote.
func (q *Q) DeleteOwner(ctx context.Context, id string) error {
	for _, stmt := range []string{
		`DELETE FROM hookd_event_types WHERE owner_id = $1`,
		`DELETE FROM hookd_deliveries WHERE endpoint_id IN (SELECT e.id FROM hookd_endpoints e WHERE e.owner_id = $1)`,
	} {
		if _, err := q.exec(ctx, stmt, id); err != nil {
			return fmt.Errorf("delete owner: %w", err)
		}
	}
	n, err := q.exec(ctx, `DELETE FROM hookd_owners WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("delete owner: %w", err)
	}
	if n == 0 {
		return apperr.New(apperr.NotFound, "owner %q not found", id)
	}
	if _, err := q.exec(ctx, `DELETE FROM hookd_events WHERE owner_id = $1`, id); err != nil {
		return fmt.Errorf("delete owner: %w", err)
	}
	if q.db.d.eventKeys() {
		if _, err := q.exec(ctx, `DELETE FROM hookd_event_keys WHERE owner_id = $1`, id); err != nil {
			return fmt.Errorf("delete owner: %w", err)
		}
	}
	return nil
}
