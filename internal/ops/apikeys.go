package ops

import (
	"context"
	"net/http"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/audit"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/store"
)

// API keys are managed by the owner they belong to (an admin key manages
// its own owner's keys) or by an operator. An operator naming an owner acts
// on that owner's keys; naming none, on the operator keys.

// APIKeyList is api_keys.list's answer.
type APIKeyList struct {
	Data []*owner.APIKey `json:"data"`
}

// CreateAPIKeyIn is api_keys.create's input.
type CreateAPIKeyIn struct {
	Role owner.Role `json:"role,omitempty" jsonschema:"admin (default): endpoints, deliveries and event types; publisher: publish only; operator: every owner (operator keys only)"`
}

// APIKeyRef names one API key.
type APIKeyRef struct {
	ID string `json:"id" path:"id" jsonschema:"the key id (key_…)"`
}

func (s *Service) apiKeyOps() []*Op {
	const base = "/api/admin/api_keys"
	return []*Op{
		define(Op{Name: "api_keys.list", Summary: "List the owner's API keys (an operator naming no owner: the operator keys). Secrets are never listed.", Method: http.MethodGet, Path: base, Status: 200, Role: owner.Admin}, s.listAPIKeys),
		define(Op{Name: "api_keys.create", Audit: "api_key", Summary: "Create an API key for the owner; its secret is shown in this answer only. Only operators create operator keys.", Method: http.MethodPost, Path: base, Status: 201, Role: owner.Admin}, s.createAPIKey),
		define(Op{Name: "api_keys.revoke", Audit: "api_key", Summary: "Revoke an API key: its next request is refused.", Method: http.MethodPost, Path: base + "/{id}/revoke", Status: 200, Role: owner.Admin}, s.revokeAPIKey),
	}
}

func (s *Service) listAPIKeys(ctx context.Context, p Principal, _ *Empty) (*APIKeyList, error) {
	ks, err := s.DB.Q().ListAPIKeys(ctx, p.OwnerID)
	if err != nil {
		return nil, err
	}
	if ks == nil {
		ks = []*owner.APIKey{}
	}
	return &APIKeyList{Data: ks}, nil
}

func (s *Service) createAPIKey(ctx context.Context, p Principal, in *CreateAPIKeyIn) (*NewKey, error) {
	role, err := owner.ParseRole(string(in.Role))
	if err != nil {
		return nil, err
	}
	switch {
	case role == owner.Operator && p.Role != owner.Operator:
		return nil, apperr.New(apperr.Forbidden, "only an operator key may create operator keys")
	case role != owner.Operator && p.OwnerID == "":
		return nil, apperr.New(apperr.Invalid, "name the owner the %s key is for (header Hookd-Owner, query parameter owner, or MCP argument owner)", role)
	}
	return s.CreateKey(ctx, p.OwnerID, role)
}

func (s *Service) revokeAPIKey(ctx context.Context, p Principal, in *APIKeyRef) (*owner.APIKey, error) {
	var out *owner.APIKey
	err := s.DB.InTx(ctx, store.TxOptions{}, func(q *store.Q) error {
		if err := q.RevokeAPIKey(ctx, p.OwnerID, in.ID, s.now().UnixMicro()); err != nil {
			return err
		}
		ks, err := q.ListAPIKeys(ctx, p.OwnerID)
		if err != nil {
			return err
		}
		for _, k := range ks {
			if k.ID == in.ID {
				out = k
				audit.After(ctx, k)
				return nil
			}
		}
		return apperr.New(apperr.NotFound, "API key %q not found", in.ID)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// NewKey is a created API key: Secret is shown this once.
type NewKey struct {
	*owner.APIKey
	Secret string `json:"secret"`
}

// CreateKey creates an API key. For admin and publisher keys ownerID names
// the owner, created with the default profile if it does not exist yet (so
// the quick start is one command); operator keys belong to no owner.
func (s *Service) CreateKey(ctx context.Context, ownerID string, role owner.Role) (*NewKey, error) {
	if role != owner.Operator {
		if err := owner.ValidateID(ownerID); err != nil {
			return nil, err
		}
	} else {
		ownerID = ""
	}
	secret, err := owner.NewKeySecret()
	if err != nil {
		return nil, err
	}
	now := s.now()
	k := &owner.APIKey{ID: event.NewID("key_", now), OwnerID: ownerID, Role: role, Hash: owner.HashKey(secret), Prefix: secret[:8], CreatedAt: now}
	audit.SetResource(ctx, k.ID)
	err = s.DB.InTx(ctx, store.TxOptions{}, func(q *store.Q) error {
		if ownerID != "" {
			if _, err := q.GetOwner(ctx, ownerID); apperr.IsNotFound(err) {
				if err := q.CreateOwner(ctx, &owner.Owner{ID: ownerID, Profile: s.DefaultProfile, Attributes: map[string]string{}, CreatedAt: now}); err != nil {
					return err
				}
			} else if err != nil {
				return err
			}
		}
		return q.CreateAPIKey(ctx, k)
	})
	if err != nil {
		return nil, err
	}
	return &NewKey{APIKey: k, Secret: secret}, nil
}
