// Package scope is the one predicate that decides whether an event may go to
// an endpoint (seed 000). Fanout asks it for every (endpoint, event) pair,
// every time: grants can be revoked between two events.
package scope

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
)

// Source answers for endpoints attached to a scope source (seed 000: an
// embed's access code): may this event go out under that source's grant?
// A revoked, expired or deleted source admits nothing. It is handed in at
// the composition root so delivery code imports no domain that owns grants.
type Source func(ctx context.Context, sourceID string, ev *event.Event) (bool, error)

// Predicate is the admission rule.
type Predicate struct {
	// Source answers for endpoints with a scope source; nil admits nothing
	// for them (fail closed).
	Source Source
}

// Admits reports whether ev may be delivered to ep. scoped says whether
// ev's type is judged for scope (a property of the event type): an unscoped
// event goes to every endpoint subscribed to it.
func (p Predicate) Admits(ctx context.Context, ep *endpoint.Endpoint, ev *event.Event, scoped bool) (bool, error) {
	// raw:// subjects never leave the instance, whatever the endpoint or type.
	if strings.HasPrefix(ev.Subject, "raw://") {
		return false, nil
	}
	if !scoped {
		return true, nil
	}
	if ep.ScopeSource != "" {
		if p.Source == nil {
			return false, nil
		}
		return p.Source(ctx, ep.ScopeSource, ev)
	}
	return PublishedSlice(ev.Data), nil
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
