// Package ops declares every operation once: name, typed input, typed
// output, handler and required role. The REST routes, the MCP tools, the
// OpenAPI document and the web page are projections of these declarations.
package ops

import (
	"context"
	"fmt"
	"reflect"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/audit"
	"github.com/hookd/hookd/internal/owner"
)

// Principal is who calls: an API key's identity and role, and the owner the
// call acts on (the key's own owner; for an operator key, the owner it names).
type Principal struct {
	KeyID   string
	Role    owner.Role
	OwnerID string
	// Actor is who calls, for the audit log: the projection that
	// authenticated the call sets it (kind, name, remote address).
	Actor audit.Actor
	// KeyUnconfirmed: the key was answered from this process's key cache
	// (store.DB.APIKeyByHashCached), not read for this call; only an op
	// that confirms it in its own transaction (ConfirmsKey) may run.
	KeyUnconfirmed bool
}

// Op is one declared operation.
type Op struct {
	Name    string // e.g. "webhooks.create"; the MCP tool name
	Summary string
	// Method and Path are the REST projection; Path uses {name} for fields
	// of In tagged `path:"name"`.
	Method string
	Path   string
	// Status is the REST success status (200, 201, 202 or 204).
	Status int
	// Role is the least role that may call it.
	Role owner.Role
	// OwnerScoped ops act on one owner (operators must name it).
	OwnerScoped bool
	// ConfirmsKey ops read the caller's key in their own transaction, after
	// the call arrived (a single publish, in its group commit), so the
	// caller may be authenticated from the key cache: a key revoked before
	// the call is refused there.
	ConfirmsKey bool
	// AnswersURL ops answer with an absolute URL to hookd: the REST
	// projection tells them the origin the caller reached (WithOrigin).
	AnswersURL bool
	// Audit is the kind of resource a state-changing op changes (endpoint,
	// grant, owner…): every op that is not a GET writes one audit record
	// in its own transaction (audit.go). NoAudit says why an op that is not
	// a GET writes none (publishing is not an admin change); an op with
	// neither is refused at start (Service.Ops).
	Audit   string
	NoAudit string
	In, Out reflect.Type
	call    func(ctx context.Context, p Principal, in any) (any, error)
	svc     *Service // the clock and the store of audited calls
}

// NewInput returns a pointer to a zero input.
func (o *Op) NewInput() any { return reflect.New(o.In).Interface() }

// Call authorizes p and runs the op on in (a pointer from NewInput).
func (o *Op) Call(ctx context.Context, p Principal, in any) (any, error) {
	if !p.Role.Allows(o.Role) {
		return nil, apperr.New(apperr.Forbidden, "%s needs a %s key; this key is %s", o.Name, o.Role, p.Role)
	}
	if o.OwnerScoped && p.OwnerID == "" {
		return nil, apperr.New(apperr.Invalid, "an operator key must name the owner to act on (header Hookd-Owner, query parameter owner, or MCP argument owner)")
	}
	if p.KeyUnconfirmed && !o.ConfirmsKey {
		return nil, fmt.Errorf("%s does not confirm its caller's key, and the key was not read for this call", o.Name)
	}
	if !o.Audited() {
		return o.call(ctx, p, in)
	}
	return o.callAudited(ctx, p, in)
}

// TakesOwner reports whether a caller may name the owner the op acts on:
// every op an owner-bound key may call. Operators must name one for
// OwnerScoped ops; an owner-bound key may name only its own.
func (o *Op) TakesOwner() bool { return o.Role != owner.Operator }

// ActAs returns p acting on the owner ownerName names ("" leaves p as is).
// An operator may name any existing owner; an owner-bound key naming another
// owner is answered not found, as if that owner did not exist.
func (s *Service) ActAs(ctx context.Context, p Principal, ownerName string) (Principal, error) {
	switch {
	case ownerName == "":
		return p, nil
	case p.Role != owner.Operator:
		if ownerName != p.OwnerID {
			return Principal{}, apperr.New(apperr.NotFound, "owner %q not found", ownerName)
		}
		return p, nil
	}
	if _, err := s.DB.Q().GetOwner(ctx, ownerName); err != nil {
		return Principal{}, err
	}
	p.OwnerID = ownerName
	return p, nil
}

// define declares an op with typed input and output.
func define[In, Out any](o Op, h func(ctx context.Context, p Principal, in *In) (*Out, error)) *Op {
	o.In = reflect.TypeFor[In]()
	o.Out = reflect.TypeFor[Out]()
	o.call = func(ctx context.Context, p Principal, in any) (any, error) {
		return h(ctx, p, in.(*In))
	}
	return &o
}

// Empty is the input or output of an op that has none.
type Empty struct{}
