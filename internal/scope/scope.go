// Package scope is the one predicate that decides whether an event may go to
// an endpoint (the standard profile's scope rule). Fanout asks it for every (endpoint, event) pair,
// every time: grants can be revoked between two events.
package scope

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
)

// Source answers for endpoints attached to a grant when a library user
// keeps grants of their own (hookd.Config.GrantID) instead of hookd's
// store: may this event go out under that grant? A revoked, expired or
// deleted grant admits nothing. It is handed in at the composition root so
// delivery code imports no domain that owns grants.
type Source func(ctx context.Context, grantID string, ev *event.Event) (bool, error)

// Predicate is the admission rule.
type Predicate struct {
	// Source, when set, answers for endpoints with a grant instead of the
	// grants hookd stores.
	Source Source
}

// View is what one fanout knows when it asks, read afresh for every fanout
// (no cache outlives it, so a revoke or an edit applies to the next one):
// the owner's scoped types, the stored grants its endpoints name (absent:
// deleted), and the fanout's clock.
type View struct {
	Scoped map[string]bool
	Grants map[string]*Grant
	Now    time.Time
}

// Raw reports whether subject is a raw:// one, which never leaves hookd.
// A URL's scheme is case-insensitive (RFC 3986, 3.1), so RAW:// and
// Raw:// are raw too.
func Raw(subject string) bool {
	const scheme = "raw://"
	return len(subject) >= len(scheme) && strings.EqualFold(subject[:len(scheme)], scheme)
}

// Admits reports whether ev may be delivered to ep. Only events of a
// scoped type are judged: an unscoped one goes to every endpoint
// subscribed to it.
func (p Predicate) Admits(ctx context.Context, ep *endpoint.Endpoint, ev *event.Event, v *View) (bool, error) {
	// raw:// subjects never leave the instance, whatever the endpoint or type.
	if Raw(ev.Subject) {
		return false, nil
	}
	if !v.Scoped[ev.Type] {
		return true, nil
	}
	switch {
	case ep.GrantID == "":
		return PublishedSlice(ev.Data), nil
	case p.Source != nil:
		return p.Source(ctx, ep.GrantID, ev)
	}
	g, ok := v.Grants[ep.GrantID]
	return ok && g.Admits(ev, v.Now), nil
}

// PublishedSlice reports whether a scoped event's data places it in the
// published slice: published, or was_published (so unpublishing is heard).
// Data that says neither is outside it.
func PublishedSlice(data json.RawMessage) bool {
	var d struct {
		Published    bool `json:"published"`
		WasPublished bool `json:"was_published"`
	}
	if json.Unmarshal(data, &d) != nil {
		return false
	}
	return d.Published || d.WasPublished
}
