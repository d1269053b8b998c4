package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/scope"
)

const grantCols = `id, owner_id, description, allow, deny, published_only, expires_at, revoked_at, created_at, updated_at`

func scanGrant(r row) (*scope.Grant, error) {
	var g scope.Grant
	var allow, deny string
	var expires, revoked *int64
	var created, updated int64
	if err := r.Scan(&g.ID, &g.OwnerID, &g.Description, &allow, &deny, &g.PublishedOnly, &expires, &revoked, &created, &updated); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(allow), &g.Allow); err != nil {
		return nil, fmt.Errorf("grant %s allow: %w", g.ID, err)
	}
	if err := json.Unmarshal([]byte(deny), &g.Deny); err != nil {
		return nil, fmt.Errorf("grant %s deny: %w", g.ID, err)
	}
	g.ExpiresAt, g.RevokedAt = fromTSPtr(expires), fromTSPtr(revoked)
	g.CreatedAt, g.UpdatedAt = fromTS(created), fromTS(updated)
	return &g, nil
}

// globsJSON encodes a grant's allow and deny lists for their TEXT columns.
func globsJSON(g *scope.Grant) (allow, deny string, err error) {
	a, err := json.Marshal(nonNil(g.Allow))
	if err != nil {
		return "", "", err
	}
	d, err := json.Marshal(nonNil(g.Deny))
	if err != nil {
		return "", "", err
	}
	return string(a), string(d), nil
}

func notFoundGrant(id string) error {
	return apperr.New(apperr.NotFound, "grant %q not found", id)
}

// CreateGrant inserts g.
func (q *Q) CreateGrant(ctx context.Context, g *scope.Grant) error {
	allow, deny, err := globsJSON(g)
	if err != nil {
		return err
	}
	if _, err := q.exec(ctx, `INSERT INTO hookd_grants (`+grantCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		g.ID, g.OwnerID, g.Description, allow, deny, g.PublishedOnly, tsPtr(g.ExpiresAt), tsPtr(g.RevokedAt), ts(g.CreatedAt), ts(g.UpdatedAt)); err != nil {
		return fmt.Errorf("create grant: %w", err)
	}
	return nil
}

// GetGrant returns one of an owner's grants.
func (q *Q) GetGrant(ctx context.Context, ownerID, id string) (*scope.Grant, error) {
	g, err := scanGrant(q.queryRow(ctx, `SELECT `+grantCols+` FROM hookd_grants WHERE id = $1 AND owner_id = $2`, id, ownerID))
	if NotFound(err) {
		return nil, notFoundGrant(id)
	}
	if err != nil {
		return nil, fmt.Errorf("get grant: %w", err)
	}
	return g, nil
}

// ListGrants returns an owner's grants, oldest first.
func (q *Q) ListGrants(ctx context.Context, ownerID string) ([]*scope.Grant, error) {
	return q.grants(ctx, `SELECT `+grantCols+` FROM hookd_grants WHERE owner_id = $1 ORDER BY created_at, id`, ownerID)
}

// GrantsByID returns those of ids that are grants of the owner, by id; a
// missing id was deleted (or never was).
func (q *Q) GrantsByID(ctx context.Context, ownerID string, ids []string) (map[string]*scope.Grant, error) {
	out := map[string]*scope.Grant{}
	if len(ids) == 0 {
		return out, nil
	}
	gs, err := q.grants(ctx, `SELECT `+grantCols+` FROM hookd_grants WHERE owner_id = $1 AND id IN (`+placeholders(2, len(ids))+`)`, append([]any{ownerID}, anys(ids)...)...)
	if err != nil {
		return nil, err
	}
	for _, g := range gs {
		out[g.ID] = g
	}
	return out, nil
}

func (q *Q) grants(ctx context.Context, sql string, args ...any) ([]*scope.Grant, error) {
	out, err := collect(ctx, q, scanGrant, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("list grants: %w", err)
	}
	return out, nil
}

// UpdateGrant writes g's mutable fields (description, allow, deny,
// published_only, expires_at, revoked_at, updated_at).
func (q *Q) UpdateGrant(ctx context.Context, g *scope.Grant) error {
	allow, deny, err := globsJSON(g)
	if err != nil {
		return err
	}
	n, err := q.exec(ctx, `UPDATE hookd_grants SET description = $3, allow = $4, deny = $5, published_only = $6, expires_at = $7, revoked_at = $8, updated_at = $9
		WHERE id = $1 AND owner_id = $2`,
		g.ID, g.OwnerID, g.Description, allow, deny, g.PublishedOnly, tsPtr(g.ExpiresAt), tsPtr(g.RevokedAt), ts(g.UpdatedAt))
	if err != nil {
		return fmt.Errorf("update grant: %w", err)
	}
	if n == 0 {
		return notFoundGrant(g.ID)
	}
	return nil
}

// DeleteGrant deletes one of an owner's grants. Endpoints that name it
// keep the id and admit nothing of scoped types until given another.
func (q *Q) DeleteGrant(ctx context.Context, ownerID, id string) error {
	n, err := q.exec(ctx, `DELETE FROM hookd_grants WHERE id = $1 AND owner_id = $2`, id, ownerID)
	if err != nil {
		return fmt.Errorf("delete grant: %w", err)
	}
	if n == 0 {
		return notFoundGrant(id)
	}
	return nil
}
