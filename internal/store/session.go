package store

import (
	"context"
	"fmt"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/owner"
)

// Session is a console sign-in: the key it came from (role, revocation) and
// the owner it acts on; or, signed in through the identity provider (OIDC),
// the user's subject and name with the role their claims gave.
type Session struct {
	KeyID string
	// Subject and User are the identity provider's subject and the user's
	// name or e-mail (an OIDC sign-in; KeyID is then empty).
	Subject, User string
	Role          owner.Role
	KeyOwner      string // the key's own owner ("" for an operator key)
	OwnerID       string // the owner the session acts on
	Revoked       bool
	ExpiresAt     time.Time
}

// CreateSession stores a session by its token's hash.
func (q *Q) CreateSession(ctx context.Context, hash []byte, keyID, ownerID string, created, expires time.Time) error {
	_, err := q.exec(ctx, `INSERT INTO hookd_console_sessions (hash, key_id, owner_id, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)`,
		hash, keyID, ownerID, ts(created), ts(expires))
	if err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	return nil
}

// SessionByHash finds an unexpired session with its key's role and
// revocation. Unauthorized when there is none (expired, signed out, key
// deleted).
func (q *Q) SessionByHash(ctx context.Context, hash []byte, now time.Time) (*Session, error) {
	var s Session
	var expires int64
	var revoked *int64
	err := q.queryRow(ctx, `SELECT s.key_id, k.role, COALESCE(k.owner_id, ''), s.owner_id, k.revoked_at, s.expires_at
		FROM hookd_console_sessions s JOIN hookd_api_keys k ON k.id = s.key_id WHERE s.hash = $1 AND s.expires_at > $2`, hash, ts(now)).
		Scan(&s.KeyID, &s.Role, &s.KeyOwner, &s.OwnerID, &revoked, &expires)
	if NotFound(err) {
		if u, uerr := q.userSessionByHash(ctx, hash, now); uerr == nil {
			return u, nil
		} else if !NotFound(uerr) {
			return nil, fmt.Errorf("session: %w", uerr)
		}
		return nil, apperr.New(apperr.Unauthorized, "session expired or signed out: sign in again")
	}
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	s.Revoked = revoked != nil
	s.ExpiresAt = fromTS(expires)
	return &s, nil
}

// SetSessionOwner changes the owner a session acts on.
func (q *Q) SetSessionOwner(ctx context.Context, hash []byte, ownerID string) error {
	for _, table := range []string{"hookd_console_sessions", "hookd_console_user_sessions"} {
		if _, err := q.exec(ctx, `UPDATE `+table+` SET owner_id = $2 WHERE hash = $1`, hash, ownerID); err != nil {
			return fmt.Errorf("set session owner: %w", err)
		}
	}
	return nil
}

// DeleteSession ends a session (sign-out, or a revoked key seen).
func (q *Q) DeleteSession(ctx context.Context, hash []byte) error {
	for _, table := range []string{"hookd_console_sessions", "hookd_console_user_sessions"} {
		if _, err := q.exec(ctx, `DELETE FROM `+table+` WHERE hash = $1`, hash); err != nil {
			return fmt.Errorf("delete session: %w", err)
		}
	}
	return nil
}

// CreateUserSession stores an OIDC sign-in's session by its token's hash:
// s's Subject, User, Role, KeyOwner (the owner an admin's claim names) and
// OwnerID.
func (q *Q) CreateUserSession(ctx context.Context, hash []byte, s *Session, created time.Time) error {
	_, err := q.exec(ctx, `INSERT INTO hookd_console_user_sessions (hash, subject, name, role, key_owner, owner_id, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		hash, s.Subject, s.User, string(s.Role), s.KeyOwner, s.OwnerID, ts(created), ts(s.ExpiresAt))
	if err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	return nil
}

// userSessionByHash finds an unexpired OIDC session.
func (q *Q) userSessionByHash(ctx context.Context, hash []byte, now time.Time) (*Session, error) {
	var s Session
	var expires int64
	err := q.queryRow(ctx, `SELECT subject, name, role, key_owner, owner_id, expires_at FROM hookd_console_user_sessions WHERE hash = $1 AND expires_at > $2`, hash, ts(now)).
		Scan(&s.Subject, &s.User, &s.Role, &s.KeyOwner, &s.OwnerID, &expires)
	if err != nil {
		return nil, err
	}
	s.ExpiresAt = fromTS(expires)
	return &s, nil
}

// DeleteKeySessions ends every session of a key (it was revoked).
func (q *Q) DeleteKeySessions(ctx context.Context, keyID string) error {
	if _, err := q.exec(ctx, `DELETE FROM hookd_console_sessions WHERE key_id = $1`, keyID); err != nil {
		return fmt.Errorf("delete key sessions: %w", err)
	}
	return nil
}

// PruneSessions deletes sessions that expired before now.
func (q *Q) PruneSessions(ctx context.Context, now time.Time) (int64, error) {
	var total int64
	for _, table := range []string{"hookd_console_sessions", "hookd_console_user_sessions"} {
		n, err := q.exec(ctx, `DELETE FROM `+table+` WHERE expires_at <= $1`, ts(now))
		if err != nil {
			return total, fmt.Errorf("prune sessions: %w", err)
		}
		total += n
	}
	return total, nil
}
