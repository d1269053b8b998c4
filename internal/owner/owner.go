// Package owner holds owners and their API keys. Every endpoint, event and
// key belongs to exactly one owner, and an owner never sees another's data.
package owner

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"regexp"
	"time"

	"github.com/hookd/hookd/internal/apperr"
)

// Owner is whoever owns endpoints and receives their own events.
type Owner struct {
	ID string `json:"id"`
	// Profile names the wire contract the owner's endpoints get.
	Profile string `json:"profile"`
	// Attributes are profile-specific settings (kwork: app, environment,
	// app_kind, api_version).
	Attributes map[string]string `json:"attributes"`
	CreatedAt  time.Time         `json:"created_at"`
}

var ownerID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// ValidateID checks an owner id.
func ValidateID(id string) error {
	if !ownerID.MatchString(id) {
		return apperr.New(apperr.Invalid, "owner id %q is not valid: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", id)
	}
	return nil
}

// Role is what an API key may do.
type Role string

const (
	// Operator acts on every owner (naming one per request).
	Operator Role = "operator"
	// Admin manages one owner's endpoints, deliveries and event types.
	Admin Role = "admin"
	// Publisher only publishes events for one owner.
	Publisher Role = "publisher"
)

// ParseRole validates a role; empty means Admin.
func ParseRole(s string) (Role, error) {
	switch Role(s) {
	case "", Admin:
		return Admin, nil
	case Operator, Publisher:
		return Role(s), nil
	}
	return "", apperr.New(apperr.Invalid, "role %q is not valid: use admin, publisher or operator", s)
}

// Allows reports whether a key of role r may perform an op that requires need.
// Operator ⊃ Admin ⊃ Publisher.
func (r Role) Allows(need Role) bool {
	rank := map[Role]int{Publisher: 1, Admin: 2, Operator: 3}
	return rank[r] >= rank[need]
}

// APIKey is a stored key: only its hash is kept.
type APIKey struct {
	ID        string     `json:"id"`
	OwnerID   string     `json:"owner_id"`
	Role      Role       `json:"role"`
	Hash      []byte     `json:"-"`
	Prefix    string     `json:"prefix"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// NewKeySecret returns a new API key's secret text ("hkd_" + 32 random bytes).
func NewKeySecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "hkd_" + base64.RawURLEncoding.EncodeToString(b), nil
}

// HashKey hashes an API key for storage and lookup. Keys carry 256 random
// bits, so one SHA-256 is enough (no password stretching needed).
func HashKey(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}
