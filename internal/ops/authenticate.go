package ops

import (
	"context"
	"strings"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/audit"
	"github.com/hookd/hookd/internal/owner"
)

// Authenticate resolves an API key to a principal: the one way every
// projection turns a key into a caller (REST's bearer key, /mcp's, the
// stdio MCP server's --key). ownerName is the owner an operator key acts
// on (ignored for owner-bound keys unless it names a different owner,
// which is refused). cached lets the key come from the process's key
// cache, for an op that confirms it in its own transaction (Op
// ConfirmsKey); the principal then says so (KeyUnconfirmed).
func (s *Service) Authenticate(ctx context.Context, key, ownerName string, cached bool) (Principal, error) {
	key = strings.TrimSpace(key)
	if key == "" {
		return Principal{}, apperr.New(apperr.Unauthorized, "missing API key: send Authorization: Bearer <key> (create one with `hookd apikey create --owner NAME`)")
	}
	hash := owner.HashKey(key)
	var k *owner.APIKey
	var remembered bool
	var err error
	if cached {
		k, remembered, err = s.DB.APIKeyByHashCached(ctx, hash)
	} else {
		k, err = s.DB.Q().APIKeyByHash(ctx, hash)
	}
	if err != nil {
		return Principal{}, err
	}
	if k.RevokedAt != nil {
		return Principal{}, apperr.New(apperr.Unauthorized, "API key %s was revoked", k.ID)
	}
	// An operator key has no owner of its own; ActAs applies the one named.
	return s.ActAs(ctx, Principal{KeyID: k.ID, Role: k.Role, OwnerID: k.OwnerID, KeyUnconfirmed: remembered,
		Actor: audit.Actor{Kind: audit.KindAPIKey, ID: k.ID, Name: k.Prefix}}, ownerName)
}

// Engine names the database hookd runs on: "sqlite" or "postgres".
func (s *Service) Engine() string { return string(s.DB.Backend) }
