package hookd

import (
	"context"

	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/scope"
)

// ScopeFunc decides whether ev, of a scoped type, may go to an endpoint
// attached to the grant named source (the endpoint's grant_id, set through
// the admin API: an access code, a partner, a region… whatever your
// application means by it). Set, it replaces hookd's grants store, and
// grant_id is not checked against the store. It is asked again for every event, so revoking a grant in
// your application stops the next delivery. Return false for a source that
// is revoked, expired or unknown; an error retries the fanout.
//
// Events on raw:// subjects never reach it: they never leave hookd.
type ScopeFunc func(ctx context.Context, source string, ev Event) (bool, error)

// source adapts f to the delivery service's scope source (nil stays nil: fail closed).
func (f ScopeFunc) source() scope.Source {
	if f == nil {
		return nil
	}
	return func(ctx context.Context, source string, ev *event.Event) (bool, error) {
		return f(ctx, source, publicEvent(ev))
	}
}
