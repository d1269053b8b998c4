package ops

import (
	"context"
	"net/http"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/audit"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/store"
)

// OwnerList is owners.list's answer.
type OwnerList struct {
	Data []*owner.Owner `json:"data"`
}

// OwnerRef names one owner.
type OwnerRef struct {
	ID string `json:"id" path:"id" jsonschema:"the owner id"`
}

// CreateOwnerIn is owners.create's input.
type CreateOwnerIn struct {
	ID         string            `json:"id" jsonschema:"1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"`
	Profile    string            `json:"profile,omitempty" jsonschema:"the wire contract: standard (default) or kwork"`
	Attributes map[string]string `json:"attributes,omitempty" jsonschema:"profile settings; kwork needs app and environment (test or live)"`
}

// UpdateOwnerIn is owners.update's input.
type UpdateOwnerIn struct {
	ID         string            `json:"id" path:"id" jsonschema:"the owner id"`
	Profile    *string           `json:"profile,omitempty" jsonschema:"a new profile; only while the owner has no endpoints"`
	Attributes map[string]string `json:"attributes,omitempty" jsonschema:"replaces every attribute; the profile must accept them"`
}

func (s *Service) ownerOps() []*Op {
	const base = "/api/admin/owners"
	return []*Op{
		define(Op{Name: "owners.list", Summary: "List every owner.", Method: http.MethodGet, Path: base, Status: 200, Role: owner.Operator}, s.listOwners),
		define(Op{Name: "owners.create", Audit: "owner", Summary: "Create an owner with a profile and the attributes it needs.", Method: http.MethodPost, Path: base, Status: 201, Role: owner.Operator}, s.createOwner),
		define(Op{Name: "owners.get", Summary: "Get one owner.", Method: http.MethodGet, Path: base + "/{id}", Status: 200, Role: owner.Operator}, s.getOwner),
		define(Op{Name: "owners.update", Audit: "owner", Summary: "Change an owner's attributes, or its profile while it has no endpoints.", Method: http.MethodPatch, Path: base + "/{id}", Status: 200, Role: owner.Operator}, s.updateOwner),
		define(Op{Name: "owners.delete", Audit: "owner", Summary: "Delete an owner with its API keys, endpoints, events, deliveries and event types.", Method: http.MethodDelete, Path: base + "/{id}", Status: 204, Role: owner.Operator}, s.deleteOwner),
	}
}

func (s *Service) listOwners(ctx context.Context, _ Principal, _ *Empty) (*OwnerList, error) {
	all, err := s.DB.Q().ListOwners(ctx)
	if err != nil {
		return nil, err
	}
	if all == nil {
		all = []*owner.Owner{}
	}
	return &OwnerList{Data: all}, nil
}

func (s *Service) createOwner(ctx context.Context, _ Principal, in *CreateOwnerIn) (*owner.Owner, error) {
	return s.CreateOwner(ctx, in.ID, in.Profile, in.Attributes)
}

func (s *Service) getOwner(ctx context.Context, _ Principal, in *OwnerRef) (*owner.Owner, error) {
	return s.DB.Q().GetOwner(ctx, in.ID)
}

func (s *Service) updateOwner(ctx context.Context, _ Principal, in *UpdateOwnerIn) (*owner.Owner, error) {
	var out *owner.Owner
	err := s.DB.InTx(ctx, store.TxOptions{}, func(q *store.Q) error {
		o, err := q.GetOwner(ctx, in.ID)
		if err != nil {
			return err
		}
		audit.Before(ctx, o)
		if in.Profile != nil && *in.Profile != o.Profile {
			// Endpoints carry profile-specific settings (secret, in-flight
			// slots) and receivers verify one signature scheme: a switch
			// under live endpoints would break them.
			eps, err := q.ListEndpoints(ctx, o.ID, false)
			if err != nil {
				return err
			}
			if len(eps) > 0 {
				return apperr.New(apperr.Conflict, "owner %s has %d endpoints; delete them before changing its profile", o.ID, len(eps))
			}
			o.Profile = *in.Profile
		}
		if in.Attributes != nil {
			o.Attributes = in.Attributes
		}
		p, err := s.Profiles.Get(o.Profile)
		if err != nil {
			return err
		}
		if err := p.ValidateOwner(o.Attributes); err != nil {
			return err
		}
		if err := ValidatePageAttributes(o.Attributes); err != nil {
			return err
		}
		o.Profile = p.Name()
		out = o
		audit.After(ctx, o)
		return q.UpdateOwner(ctx, o)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Service) deleteOwner(ctx context.Context, _ Principal, in *OwnerRef) (*Empty, error) {
	return &Empty{}, s.DB.InTx(ctx, store.TxOptions{}, func(q *store.Q) error {
		o, err := q.GetOwner(ctx, in.ID)
		if err != nil {
			return err
		}
		audit.Before(ctx, o)
		return q.DeleteOwner(ctx, in.ID)
	})
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
	if err := ValidatePageAttributes(attrs); err != nil {
		return nil, err
	}
	o := &owner.Owner{ID: id, Profile: p.Name(), Attributes: attrs, CreatedAt: s.now()}
	audit.SetResource(ctx, o.ID)
	if err := s.DB.InTx(ctx, store.TxOptions{}, func(q *store.Q) error { return q.CreateOwner(ctx, o) }); err != nil {
		return nil, err
	}
	return o, nil
}
