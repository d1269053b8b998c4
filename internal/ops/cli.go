package ops

import (
	"context"
	"time"

	"github.com/hookd/hookd/internal/audit"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/store"
)

// The operator's levers on the command line (hookd apikey, hookd catalog):
// across owners, with no principal, and each change audited in its own
// transaction like an op's.

// ListKeys lists ownerID's API keys, or with "" every key of every owner.
func (s *Service) ListKeys(ctx context.Context, ownerID string) ([]*owner.APIKey, error) {
	if ownerID == "" {
		return s.DB.Q().AllAPIKeys(ctx)
	}
	return s.DB.Q().ListAPIKeys(ctx, ownerID)
}

// RevokeKeyByID revokes a key found by its id alone, whoever owns it, and
// returns it; command names the CLI command in the audit record.
func (s *Service) RevokeKeyByID(ctx context.Context, id, command string) (*owner.APIKey, error) {
	ctx = s.ByCLI(ctx, "api_keys.revoke", "", command, &APIKeyRef{ID: id})
	var out *owner.APIKey
	err := s.DB.InTx(ctx, store.TxOptions{}, func(q *store.Q) error {
		k, err := q.RevokeAPIKeyByID(ctx, id, s.now().UnixMicro())
		if err != nil {
			return err
		}
		out = k
		audit.After(ctx, k)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SharedEventTypes lists the shared event-type catalog.
func (s *Service) SharedEventTypes(ctx context.Context) ([]*event.Type, error) {
	return s.DB.Q().SharedEventTypes(ctx)
}

// RemoveSharedEventTypes removes names from the shared catalog, with an
// audit record in the same transaction (there is no op for it: only the
// CLI makes it); command names the CLI command.
func (s *Service) RemoveSharedEventTypes(ctx context.Context, names []string, command string) error {
	ctx, _ = audit.Start(ctx, audit.Record{At: time.Now().UTC(), Actor: audit.Actor{Kind: audit.KindCLI, Name: command},
		Op: "catalog.remove", Resource: "catalog", ResourceID: "shared", Changes: []audit.Change{{Field: "event_types", Old: names}}}, nil)
	return s.DB.InTx(ctx, store.TxOptions{}, func(q *store.Q) error { return q.RemoveSharedEventTypes(ctx, names) })
}
