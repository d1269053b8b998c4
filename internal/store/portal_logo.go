package store

import (
	"context"
	"fmt"
	"time"

	"github.com/hookd/hookd/internal/apperr"
)

// PortalLogo is an owner's uploaded portal logo.
type PortalLogo struct {
	ContentType string
	Data        []byte
	UpdatedAt   time.Time
}

// PutPortalLogo sets the owner's logo, replacing any.
func (q *Q) PutPortalLogo(ctx context.Context, ownerID string, l *PortalLogo) error {
	_, err := q.exec(ctx, `INSERT INTO hookd_portal_logos (owner_id, content_type, data, updated_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (owner_id) DO UPDATE SET content_type = excluded.content_type, data = excluded.data, updated_at = excluded.updated_at`,
		ownerID, l.ContentType, l.Data, ts(l.UpdatedAt))
	if err != nil {
		return fmt.Errorf("put portal logo: %w", err)
	}
	return nil
}

// DeletePortalLogo removes the owner's logo (none: nothing to do).
func (q *Q) DeletePortalLogo(ctx context.Context, ownerID string) error {
	if _, err := q.exec(ctx, `DELETE FROM hookd_portal_logos WHERE owner_id = $1`, ownerID); err != nil {
		return fmt.Errorf("delete portal logo: %w", err)
	}
	return nil
}

// GetPortalLogo reads the owner's logo: NotFound when it has none.
func (q *Q) GetPortalLogo(ctx context.Context, ownerID string) (*PortalLogo, error) {
	var l PortalLogo
	var at int64
	err := q.queryRow(ctx, `SELECT content_type, data, updated_at FROM hookd_portal_logos WHERE owner_id = $1`, ownerID).Scan(&l.ContentType, &l.Data, &at)
	if NotFound(err) {
		return nil, apperr.New(apperr.NotFound, "owner %q has no uploaded logo", ownerID)
	}
	if err != nil {
		return nil, fmt.Errorf("get portal logo: %w", err)
	}
	l.UpdatedAt = fromTS(at)
	return &l, nil
}

// PortalLogoStamp is when the owner's logo was last put (unix µs; 0 for
// none): the pages' cache-busting version of its URL.
func (q *Q) PortalLogoStamp(ctx context.Context, ownerID string) (int64, error) {
	var at int64
	err := q.queryRow(ctx, `SELECT updated_at FROM hookd_portal_logos WHERE owner_id = $1`, ownerID).Scan(&at)
	if NotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("portal logo stamp: %w", err)
	}
	return at, nil
}
