package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hookd/hookd/internal/apperr"
)

// PortalGrant is what a portal link carries and the session it starts
// keeps: the owner, the features, read-only, the language and the way back.
type PortalGrant struct {
	OwnerID   string
	Features  []string
	ReadOnly  bool
	Locale    string
	ReturnURL string
	ExpiresAt time.Time
}

const portalCols = `owner_id, features, read_only, locale, return_url, expires_at`

func (g *PortalGrant) scan(row interface{ Scan(...any) error }) error {
	var features string
	var expires int64
	if err := row.Scan(&g.OwnerID, &features, &g.ReadOnly, &g.Locale, &g.ReturnURL, &expires); err != nil {
		return err
	}
	g.Features = strings.Split(features, ",")
	g.ExpiresAt = fromTS(expires)
	return nil
}

// CreatePortalLink stores a link by its token's hash.
func (q *Q) CreatePortalLink(ctx context.Context, hash []byte, g *PortalGrant, created time.Time) error {
	_, err := q.exec(ctx, `INSERT INTO hookd_portal_links (hash, owner_id, features, read_only, locale, return_url, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		hash, g.OwnerID, strings.Join(g.Features, ","), g.ReadOnly, g.Locale, g.ReturnURL, ts(created), ts(g.ExpiresAt))
	if err != nil {
		return fmt.Errorf("create portal link: %w", err)
	}
	return nil
}

// Portal link refusals: the page says which, and nothing else.
var (
	ErrLinkUsed    = apperr.New(apperr.Unauthorized, "this portal link was already used")
	ErrLinkExpired = apperr.New(apperr.Unauthorized, "this portal link has expired")
	ErrLinkUnknown = apperr.New(apperr.Unauthorized, "this portal link is not valid")
)

// TakePortalLink spends a link: one UPDATE marks it used only if it is
// unused and unexpired, so of two requests racing for it exactly one gets
// its grant. The other, and any later one, learns why it was refused.
func (q *Q) TakePortalLink(ctx context.Context, hash []byte, now time.Time) (*PortalGrant, error) {
	var g PortalGrant
	err := g.scan(q.queryRow(ctx, `UPDATE hookd_portal_links SET used_at = $2 WHERE hash = $1 AND used_at IS NULL AND expires_at > $2 RETURNING `+portalCols, hash, ts(now)))
	if err == nil {
		return &g, nil
	}
	if !NotFound(err) {
		return nil, fmt.Errorf("take portal link: %w", err)
	}
	var used *int64
	var expires int64
	err = q.queryRow(ctx, `SELECT used_at, expires_at FROM hookd_portal_links WHERE hash = $1`, hash).Scan(&used, &expires)
	switch {
	case NotFound(err):
		return nil, ErrLinkUnknown
	case err != nil:
		return nil, fmt.Errorf("take portal link: %w", err)
	case used != nil:
		return nil, ErrLinkUsed
	}
	return nil, ErrLinkExpired
}

// CreatePortalSession stores a portal session by its token's hash.
func (q *Q) CreatePortalSession(ctx context.Context, hash []byte, g *PortalGrant, created time.Time) error {
	_, err := q.exec(ctx, `INSERT INTO hookd_portal_sessions (hash, owner_id, features, read_only, locale, return_url, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		hash, g.OwnerID, strings.Join(g.Features, ","), g.ReadOnly, g.Locale, g.ReturnURL, ts(created), ts(g.ExpiresAt))
	if err != nil {
		return fmt.Errorf("create portal session: %w", err)
	}
	return nil
}

// PortalSessionByHash finds an unexpired portal session; Unauthorized when
// there is none (expired, revoked, never was).
func (q *Q) PortalSessionByHash(ctx context.Context, hash []byte, now time.Time) (*PortalGrant, error) {
	var g PortalGrant
	err := g.scan(q.queryRow(ctx, `SELECT `+portalCols+` FROM hookd_portal_sessions WHERE hash = $1 AND expires_at > $2`, hash, ts(now)))
	if NotFound(err) {
		return nil, apperr.New(apperr.Unauthorized, "this portal session has ended: ask for a new link")
	}
	if err != nil {
		return nil, fmt.Errorf("portal session: %w", err)
	}
	return &g, nil
}

// DeletePortalSessions ends every portal session of an owner.
func (q *Q) DeletePortalSessions(ctx context.Context, ownerID string) (int64, error) {
	n, err := q.exec(ctx, `DELETE FROM hookd_portal_sessions WHERE owner_id = $1`, ownerID)
	if err != nil {
		return 0, fmt.Errorf("delete portal sessions: %w", err)
	}
	return n, nil
}

// PrunePortal deletes links and sessions that expired before now.
func (q *Q) PrunePortal(ctx context.Context, now time.Time) error {
	for _, table := range []string{"hookd_portal_links", "hookd_portal_sessions"} {
		if _, err := q.exec(ctx, `DELETE FROM `+table+` WHERE expires_at <= $1`, ts(now)); err != nil {
			return fmt.Errorf("prune %s: %w", table, err)
		}
	}
	return nil
}

// SpendPortalLinks marks every unused link of an owner used.
func (q *Q) SpendPortalLinks(ctx context.Context, ownerID string, now time.Time) (int64, error) {
	n, err := q.exec(ctx, `UPDATE hookd_portal_links SET used_at = $2 WHERE owner_id = $1 AND used_at IS NULL AND expires_at > $2`, ownerID, ts(now))
	if err != nil {
		return 0, fmt.Errorf("spend portal links: %w", err)
	}
	return n, nil
}

// PortalLinkLocale is the language a link was made for ("" when none, or
// no such link): a spent link's page speaks it too.
func (q *Q) PortalLinkLocale(ctx context.Context, hash []byte) string {
	var l string
	if err := q.queryRow(ctx, `SELECT locale FROM hookd_portal_links WHERE hash = $1`, hash).Scan(&l); err != nil {
		return ""
	}
	return l
}
