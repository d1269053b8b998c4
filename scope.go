package hookd

import (
	"context"

	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/scope"
)

// ScopeFunc decides whether ev may go to an endpoint attached to the scope
// source named source (the endpoint's scope_source, set through the admin
// API: an access grant, a partner, a region… whatever your application
// means by it). It is asked again for every event, so revoking a grant in
// your application stops the next delivery. Return false for a source that
// is revoked, expired or unknown; an error retries the fanout.
//
// Events on raw:// subjects never reach it: they never leave hookd.
type ScopeFunc func(ctx context.Context, source string, ev Event) (bool, error)

// source adapts f to the engine's scope source (nil stays nil: fail closed).
func (f ScopeFunc) source() scope.Source {
	if f == nil {
		return nil
	}
	return func(ctx context.Context, source string, ev *event.Event) (bool, error) {
		return f(ctx, source, publicEvent(ev))
	}
}

func scopePredicate(f ScopeFunc) scope.Predicate { return scope.Predicate{Source: f.source()} }
