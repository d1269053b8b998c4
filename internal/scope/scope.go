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

// Admits reports whether ev may be delivered to ep.
func (p Predicate) Admits(ctx context.Context, ep *endpoint.Endpoint, ev *event.Event) (bool, error) {
	// raw:// subjects never leave the instance, whatever the endpoint.
	if strings.HasPrefix(ev.Subject, "raw://") {
		return false, nil
	}
	if ep.ScopeSource != "" {
		if p.Source == nil {
			return false, nil
		}
		return p.Source(ctx, ep.ScopeSource, ev)
	}
	return publishedSlice(ev.Data), nil
}

// publishedSlice: an endpoint without a scope source sees published facts.
// Data that speaks of publication must say published or was_published (so
// unpublishing is heard); data that does not speak of it is admitted.
func publishedSlice(data json.RawMessage) bool {
	var d struct {
		Published    *bool `json:"published"`
		WasPublished *bool `json:"was_published"`
	}
	if json.Unmarshal(data, &d) != nil || (d.Published == nil && d.WasPublished == nil) {
		return true
	}
	return d.Published != nil && *d.Published || d.WasPublished != nil && *d.WasPublished
}
