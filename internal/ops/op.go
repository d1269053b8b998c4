// Package ops declares every operation once: name, typed input, typed
// output, handler and required role. The REST routes, the MCP tools, the
// OpenAPI document and the web page are projections of these declarations.
package ops

import (
	"context"
	"reflect"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/owner"
)

// Principal is who calls: an API key's identity and role, and the owner the
// call acts on (the key's own owner; for an operator key, the owner it names).
type Principal struct {
	KeyID   string
	Role    owner.Role
	OwnerID string
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
	In, Out     reflect.Type
	call        func(ctx context.Context, p Principal, in any) (any, error)
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
	return o.call(ctx, p, in)
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
