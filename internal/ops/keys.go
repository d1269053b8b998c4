package ops

import (
	"context"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/store"
)

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
	err = s.DB.InTx(ctx, func(q *store.Q) error {
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

// CreateOwner creates an owner with a profile and attributes the profile
// accepts.
func (s *Service) CreateOwner(ctx context.Context, id, profileName string, attrs map[string]string) (*owner.Owner, error) {
	if err := owner.ValidateID(id); err != nil {
		return nil, err
	}
	if profileName == "" {
		profileName = s.DefaultProfile
	}
	p, err := s.Profiles.Get(profileName)
	if err != nil {
		return nil, err
	}
	if attrs == nil {
		attrs = map[string]string{}
	}
	if err := p.ValidateOwner(attrs); err != nil {
		return nil, err
	}
	o := &owner.Owner{ID: id, Profile: p.Name(), Attributes: attrs, CreatedAt: s.now()}
	if err := s.DB.Q().CreateOwner(ctx, o); err != nil {
		return nil, err
	}
	return o, nil
}
