package ops

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/audit"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/scope"
	"github.com/hookd/hookd/internal/store"
)

// GrantView is a grant as callers see it, with what it admits now.
type GrantView struct {
	*scope.Grant
	Status scope.GrantStatus `json:"status" jsonschema:"active, revoked or expired"`
}

// GrantList is grants.list's answer.
type GrantList struct {
	Data []*GrantView `json:"data"`
}

// GrantRef names one grant.
type GrantRef struct {
	ID string `json:"id" path:"id" jsonschema:"the grant id (grt_…)"`
}

// CreateGrantIn is grants.create's input.
type CreateGrantIn struct {
	Description   string     `json:"description,omitempty"`
	Allow         []string   `json:"allow" jsonschema:"subject globs the grant may read, e.g. wiki://software/* ('*' matches any run of characters, '/' included)"`
	Deny          []string   `json:"deny,omitempty" jsonschema:"subject globs taken from allow"`
	PublishedOnly bool       `json:"published_only,omitempty" jsonschema:"read only the published slice: events whose data says published or was_published"`
	ExpiresAt     *time.Time `json:"expires_at,omitempty" jsonschema:"RFC 3339; from then on the grant admits nothing"`
}

// UpdateGrantIn is grants.update's input: a field left out keeps its
// value.
type UpdateGrantIn struct {
	ID            string     `json:"id" path:"id"`
	Description   *string    `json:"description,omitempty"`
	Allow         *[]string  `json:"allow,omitempty"`
	Deny          *[]string  `json:"deny,omitempty"`
	PublishedOnly *bool      `json:"published_only,omitempty"`
	ExpiresAt     *time.Time `json:"expires_at,omitempty" jsonschema:"RFC 3339; a new expiry (a grant past it admits nothing)"`
}

func (s *Service) grantOps() []*Op {
	const base = "/api/admin/grants"
	return []*Op{
		define(Op{Name: "grants.list", Summary: "List the owner's grants: what endpoints attached to each may receive of scoped event types.", Method: http.MethodGet, Path: base, Status: 200, Role: owner.Admin, OwnerScoped: true}, s.listGrants),
		define(Op{Name: "grants.get", Summary: "Get one grant.", Method: http.MethodGet, Path: base + "/{id}", Status: 200, Role: owner.Admin, OwnerScoped: true}, s.getGrant),
		define(Op{Name: "grants.create", Audit: "grant", Summary: "Create a grant: allow globs minus deny globs over event subjects, optionally published-only or expiring; attach endpoints to it with grant_id.", Method: http.MethodPost, Path: base, Status: 201, Role: owner.Admin, OwnerScoped: true}, s.createGrant),
		define(Op{Name: "grants.update", Audit: "grant", Summary: "Change a grant; it applies to the next event fanned out.", Method: http.MethodPatch, Path: base + "/{id}", Status: 200, Role: owner.Admin, OwnerScoped: true}, s.updateGrant),
		define(Op{Name: "grants.revoke", Audit: "grant", Summary: "Revoke a grant: its endpoints get no more scoped events, from the next event on.", Method: http.MethodPost, Path: base + "/{id}/revoke", Status: 200, Role: owner.Admin, OwnerScoped: true}, s.revokeGrant),
		define(Op{Name: "grants.delete", Audit: "grant", Summary: "Delete a grant; endpoints attached to it get no scoped events until given another.", Method: http.MethodDelete, Path: base + "/{id}", Status: 204, Role: owner.Admin, OwnerScoped: true}, s.deleteGrant),
	}
}

// stamp is now as stored (microseconds), so an answer shows the time a
// later read will.
func (s *Service) stamp() time.Time { return s.now().Truncate(time.Microsecond) }

func (s *Service) grantView(g *scope.Grant) *GrantView {
	return &GrantView{Grant: g, Status: g.Status(s.now())}
}

func (s *Service) listGrants(ctx context.Context, p Principal, _ *Empty) (*GrantList, error) {
	gs, err := s.DB.Q().ListGrants(ctx, p.OwnerID)
	if err != nil {
		return nil, err
	}
	out := &GrantList{Data: make([]*GrantView, len(gs))}
	for i, g := range gs {
		out.Data[i] = s.grantView(g)
	}
	return out, nil
}

func (s *Service) getGrant(ctx context.Context, p Principal, in *GrantRef) (*GrantView, error) {
	g, err := s.DB.Q().GetGrant(ctx, p.OwnerID, in.ID)
	if err != nil {
		return nil, err
	}
	return s.grantView(g), nil
}

func (s *Service) createGrant(ctx context.Context, p Principal, in *CreateGrantIn) (*GrantView, error) {
	now := s.stamp()
	g := &scope.Grant{
		ID: event.NewID("grt_", now), OwnerID: p.OwnerID, Description: in.Description,
		Allow: in.Allow, Deny: in.Deny, PublishedOnly: in.PublishedOnly, ExpiresAt: in.ExpiresAt,
		CreatedAt: now, UpdatedAt: now,
	}
	if err := s.checkGrant(g, in.ExpiresAt); err != nil {
		return nil, err
	}
	audit.SetResource(ctx, g.ID)
	if err := s.DB.InTx(ctx, store.TxOptions{}, func(q *store.Q) error { return q.CreateGrant(ctx, g) }); err != nil {
		return nil, err
	}
	return s.grantView(g), nil
}

func (s *Service) updateGrant(ctx context.Context, p Principal, in *UpdateGrantIn) (*GrantView, error) {
	return s.changeGrant(ctx, p, in.ID, func(g *scope.Grant) error {
		if in.Description != nil {
			g.Description = *in.Description
		}
		if in.Allow != nil {
			g.Allow = *in.Allow
		}
		if in.Deny != nil {
			g.Deny = *in.Deny
		}
		if in.PublishedOnly != nil {
			g.PublishedOnly = *in.PublishedOnly
		}
		if in.ExpiresAt != nil {
			g.ExpiresAt = in.ExpiresAt
		}
		return s.checkGrant(g, in.ExpiresAt)
	})
}

// revokeGrant is final and idempotent: revoking again keeps the first time.
func (s *Service) revokeGrant(ctx context.Context, p Principal, in *GrantRef) (*GrantView, error) {
	return s.changeGrant(ctx, p, in.ID, func(g *scope.Grant) error {
		if g.RevokedAt == nil {
			now := s.stamp()
			g.RevokedAt = &now
		}
		return nil
	})
}

// changeGrant applies change to one of the owner's grants in a transaction.
func (s *Service) changeGrant(ctx context.Context, p Principal, id string, change func(*scope.Grant) error) (*GrantView, error) {
	var out *scope.Grant
	err := s.DB.InTx(ctx, store.TxOptions{}, func(q *store.Q) error {
		g, err := q.GetGrant(ctx, p.OwnerID, id)
		if err != nil {
			return err
		}
		audit.Before(ctx, s.grantView(g))
		if err := change(g); err != nil {
			return err
		}
		g.UpdatedAt = s.stamp()
		out = g
		audit.After(ctx, s.grantView(g))
		return q.UpdateGrant(ctx, g)
	})
	if err != nil {
		return nil, err
	}
	return s.grantView(out), nil
}

func (s *Service) deleteGrant(ctx context.Context, p Principal, in *GrantRef) (*Empty, error) {
	return &Empty{}, s.DB.InTx(ctx, store.TxOptions{}, func(q *store.Q) error {
		g, err := q.GetGrant(ctx, p.OwnerID, in.ID)
		if err != nil {
			return err
		}
		audit.Before(ctx, s.grantView(g))
		return q.DeleteGrant(ctx, p.OwnerID, in.ID)
	})
}

// checkGrant validates g; newExpiry, when the caller set one, must lie ahead.
func (s *Service) checkGrant(g *scope.Grant, newExpiry *time.Time) error {
	if err := scope.ValidateGrant(g); err != nil {
		return err
	}
	if newExpiry != nil && !newExpiry.After(s.now()) {
		return apperr.New(apperr.Invalid, "expires_at %s is not in the future; to stop a grant now, revoke it (POST /api/admin/grants/{id}/revoke)", newExpiry.Format(time.RFC3339))
	}
	return nil
}

// checkGrantID validates an endpoint's grant_id: one of the owner's stored
// grants, or — when the program answers for grants itself
// (hookd.Config.Scope) — any id it may know.
func (s *Service) checkGrantID(ctx context.Context, q *store.Q, ownerID, id string) error {
	switch {
	case id == "":
		return nil
	case len(id) > 255:
		return apperr.New(apperr.Invalid, "grant_id is %d bytes; at most 255", len(id))
	case s.ForeignGrants:
		return nil
	}
	if _, err := q.GetGrant(ctx, ownerID, id); err != nil {
		if apperr.IsNotFound(err) {
			return apperr.New(apperr.Invalid, "grant_id %q is not one of your grants: create one with POST /api/admin/grants, or send \"\" for none (the published slice)", id)
		}
		return err
	}
	return nil
}

// withGrantStatus sets each endpoint's grant_status from the owner's
// stored grants: "deleted" tells the owner an endpoint whose grant is
// gone admits nothing of scoped types until given another.
func (s *Service) withGrantStatus(ctx context.Context, ownerID string, vs ...*EndpointView) error {
	if s.ForeignGrants {
		return nil
	}
	var ids []string
	for _, v := range vs {
		if v.GrantID != "" && !slices.Contains(ids, v.GrantID) {
			ids = append(ids, v.GrantID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	gs, err := s.DB.Q().GrantsByID(ctx, ownerID, ids)
	if err != nil {
		return err
	}
	now := s.now()
	for _, v := range vs {
		if v.GrantID != "" {
			v.GrantStatus = gs[v.GrantID].Status(now)
		}
	}
	return nil
}
