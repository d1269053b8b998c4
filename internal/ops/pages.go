package ops

import (
	"context"
	"time"

	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/store"
)

// The types the pages read from the ops' answers and from Pages, named
// here so the console needs neither the store nor the delivery service.
type (
	// Session is a signed-in browser's stored session.
	Session = store.Session
	// PortalGrant is what a portal link or session allows.
	PortalGrant = store.PortalGrant
	// PortalLogo is an owner's uploaded logo.
	PortalLogo = store.PortalLogo
	// Recovery is a recover task's progress (webhooks.recovery).
	Recovery = delivery.Recovery
	// Resent is events.resend's answer.
	Resent = delivery.Resent
)

// The refusals of a portal link.
var (
	ErrLinkUsed    = store.ErrLinkUsed
	ErrLinkExpired = store.ErrLinkExpired
	ErrLinkUnknown = store.ErrLinkUnknown
)

// Pages is what the console and the portal keep outside the ops: sign-in
// sessions, portal links and sessions, and the owner and logo a page's
// header shows. None of it is an op of its own: a session is how a browser
// calls the ops, not something an API caller manages.
type Pages struct{ s *Service }

// Pages returns the pages' side of the service.
func (s *Service) Pages() Pages { return Pages{s} }

func (p Pages) q() *store.Q { return p.s.DB.Q() }

// APIKey finds the key whose hash is hash (Unauthorized when none).
func (p Pages) APIKey(ctx context.Context, hash []byte) (*owner.APIKey, error) {
	return p.q().APIKeyByHash(ctx, hash)
}

// GetOwner returns an owner by id.
func (p Pages) GetOwner(ctx context.Context, id string) (*owner.Owner, error) {
	return p.q().GetOwner(ctx, id)
}

// ListOwners returns every owner.
func (p Pages) ListOwners(ctx context.Context) ([]*owner.Owner, error) { return p.q().ListOwners(ctx) }

// CreateSession stores an API key's session by its token's hash.
func (p Pages) CreateSession(ctx context.Context, hash []byte, keyID, ownerID string, created, expires time.Time) error {
	return p.q().CreateSession(ctx, hash, keyID, ownerID, created, expires)
}

// CreateUserSession stores an identity provider's user's session.
func (p Pages) CreateUserSession(ctx context.Context, hash []byte, st *Session, created time.Time) error {
	return p.q().CreateUserSession(ctx, hash, st, created)
}

// SessionByHash finds an unexpired session (Unauthorized when none).
func (p Pages) SessionByHash(ctx context.Context, hash []byte, now time.Time) (*Session, error) {
	return p.q().SessionByHash(ctx, hash, now)
}

// SetSessionOwner makes an operator's session act on another owner.
func (p Pages) SetSessionOwner(ctx context.Context, hash []byte, ownerID string) error {
	return p.q().SetSessionOwner(ctx, hash, ownerID)
}

// DeleteSession ends one session.
func (p Pages) DeleteSession(ctx context.Context, hash []byte) error {
	return p.q().DeleteSession(ctx, hash)
}

// DeleteKeySessions ends every session of an API key.
func (p Pages) DeleteKeySessions(ctx context.Context, keyID string) error {
	return p.q().DeleteKeySessions(ctx, keyID)
}

// PruneSessions deletes the expired sessions.
func (p Pages) PruneSessions(ctx context.Context, now time.Time) (int64, error) {
	return p.q().PruneSessions(ctx, now)
}

// TakePortalLink spends a one-time portal link.
func (p Pages) TakePortalLink(ctx context.Context, hash []byte, now time.Time) (*PortalGrant, error) {
	return p.q().TakePortalLink(ctx, hash, now)
}

// PortalLinkLocale is a link's language, "" when unknown.
func (p Pages) PortalLinkLocale(ctx context.Context, hash []byte) string {
	return p.q().PortalLinkLocale(ctx, hash)
}

// CreatePortalSession stores the session a link opened.
func (p Pages) CreatePortalSession(ctx context.Context, hash []byte, g *PortalGrant, created time.Time) error {
	return p.q().CreatePortalSession(ctx, hash, g, created)
}

// PortalSessionByHash finds an unexpired portal session.
func (p Pages) PortalSessionByHash(ctx context.Context, hash []byte, now time.Time) (*PortalGrant, error) {
	return p.q().PortalSessionByHash(ctx, hash, now)
}

// GetPortalLogo returns an owner's logo.
func (p Pages) GetPortalLogo(ctx context.Context, ownerID string) (*PortalLogo, error) {
	return p.q().GetPortalLogo(ctx, ownerID)
}

// PortalLogoStamp is when an owner's logo last changed (0: none).
func (p Pages) PortalLogoStamp(ctx context.Context, ownerID string) (int64, error) {
	return p.q().PortalLogoStamp(ctx, ownerID)
}
