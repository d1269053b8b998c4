package store

import (
	"context"
	"fmt"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/owner"
)

const apiKeyCols = `id, COALESCE(owner_id, ''), role, hash, prefix, created_at, revoked_at`

func scanAPIKey(r row) (*owner.APIKey, error) {
	var k owner.APIKey
	var created int64
	var revoked *int64
	if err := r.Scan(&k.ID, &k.OwnerID, &k.Role, &k.Hash, &k.Prefix, &created, &revoked); err != nil {
		return nil, err
	}
	k.CreatedAt = fromTS(created)
	k.RevokedAt = fromTSPtr(revoked)
	return &k, nil
}

// CreateAPIKey stores a key (its hash only). OwnerID empty: an operator key.
func (q *Q) CreateAPIKey(ctx context.Context, k *owner.APIKey) error {
	var ownerID any
	if k.OwnerID != "" {
		ownerID = k.OwnerID
	}
	_, err := q.exec(ctx, `INSERT INTO hookd_api_keys (id, owner_id, role, hash, prefix, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		k.ID, ownerID, string(k.Role), k.Hash, k.Prefix, ts(k.CreatedAt))
	if err != nil {
		return fmt.Errorf("create api key: %w", err)
	}
	return nil
}

// APIKeyByHash finds a key by its hash (revoked keys too: the caller checks).
func (q *Q) APIKeyByHash(ctx context.Context, hash []byte) (*owner.APIKey, error) {
	if q.tx == nil && q.db.d.roundTrips() {
		return q.db.sharedAPIKeyByHash(ctx, hash) // apikey_lookup_cached.go
	}
	k, err := scanAPIKey(q.queryRow(ctx, `SELECT `+apiKeyCols+` FROM hookd_api_keys WHERE hash = $1`, hash))
	if NotFound(err) {
		return nil, apperr.New(apperr.Unauthorized, "API key not recognised")
	}
	return k, err
}

// ListAPIKeys lists an owner's keys ("" lists operator keys).
func (q *Q) ListAPIKeys(ctx context.Context, ownerID string) ([]*owner.APIKey, error) {
	return q.apiKeys(ctx, `WHERE COALESCE(owner_id, '') = $1`, ownerID)
}

// AllAPIKeys lists every key of every owner (the operator's view).
func (q *Q) AllAPIKeys(ctx context.Context) ([]*owner.APIKey, error) {
	return q.apiKeys(ctx, ``)
}

// apiKeys lists the keys where selects, oldest first (never nil).
func (q *Q) apiKeys(ctx context.Context, where string, args ...any) ([]*owner.APIKey, error) {
	out, err := collect(ctx, q, scanAPIKey, `SELECT `+apiKeyCols+` FROM hookd_api_keys `+where+` ORDER BY created_at, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("list api keys: %w", err)
	}
	if out == nil {
		out = []*owner.APIKey{}
	}
	return out, nil
}

// RevokeAPIKey revokes one of ownerID's keys.
func (q *Q) RevokeAPIKey(ctx context.Context, ownerID, id string, at int64) error {
	n, err := q.exec(ctx, `UPDATE hookd_api_keys SET revoked_at = COALESCE(revoked_at, $3) WHERE id = $1 AND COALESCE(owner_id, '') = $2`, id, ownerID, at)
	q.db.forgetKeys()
	if err != nil {
		return fmt.Errorf("revoke api key: %w", err)
	}
	if n == 0 {
		return apperr.New(apperr.NotFound, "API key %q not found", id)
	}
	return nil
}

// RevokeAPIKeyByID revokes a key found by its id alone, whoever owns it
// (the operator's lever on the command line). It returns the key.
func (q *Q) RevokeAPIKeyByID(ctx context.Context, id string, at int64) (*owner.APIKey, error) {
	k, err := scanAPIKey(q.queryRow(ctx, `SELECT `+apiKeyCols+` FROM hookd_api_keys WHERE id = $1`, id))
	if NotFound(err) {
		return nil, apperr.New(apperr.NotFound, "API key %q not found: 'hookd apikey list' shows every key's id", id)
	}
	if err != nil {
		return nil, fmt.Errorf("revoke api key: %w", err)
	}
	_, err = q.exec(ctx, `UPDATE hookd_api_keys SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1`, id, at)
	q.db.forgetKeys()
	if err != nil {
		return nil, fmt.Errorf("revoke api key: %w", err)
	}
	return k, nil
}
