package ops

import (
	"context"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/profile"
	"github.com/hookd/hookd/internal/store"
)

// ControlsIn are an endpoint's delivery controls as create takes them.
type ControlsIn struct {
	Headers   map[string]string `json:"headers,omitempty" audit:"secret" jsonschema:"extra request headers sent on every attempt (at most 20; not webhook-*, X-Kwork-*, Content-Type, Content-Length, Host, User-Agent or hop-by-hop headers)"`
	RateLimit int               `json:"rate_limit,omitempty" jsonschema:"at most this many deliveries per second, across every hookd process (default: no limit)"`
	Ordered   bool              `json:"ordered,omitempty" jsonschema:"deliver in publish order, one at a time; a failing delivery holds back the ones after it until it succeeds or is discarded"`
	// TraceContext: see endpoint.Controls.
	TraceContext bool `json:"trace_context,omitempty" jsonschema:"send the W3C traceparent and tracestate of hookd's deliver span with every attempt, so the receiver's trace continues hookd's (only while hookd's tracing is on; default false: no trace headers leave hookd)"`
	Developer    bool `json:"developer,omitempty" jsonschema:"kwork: this is the app's developer subscription, the only one its lifecycle events (app.*) go to, listed or not; at most one per app"`
}

// ControlsPatch are the controls as update takes them: a field left out
// keeps its value. headers replaces the whole set ({} clears it).
type ControlsPatch struct {
	Headers      *map[string]string `json:"headers,omitempty" audit:"secret" jsonschema:"replaces every custom header ({} removes them)"`
	RateLimit    *int               `json:"rate_limit,omitempty" jsonschema:"deliveries per second at most; 0 removes the limit"`
	Ordered      *bool              `json:"ordered,omitempty"`
	TraceContext *bool              `json:"trace_context,omitempty" jsonschema:"true sends the W3C trace context with every attempt (tracing on); false stops it"`
	Developer    *bool              `json:"developer,omitempty" jsonschema:"kwork: true makes this the app's developer subscription (lifecycle events go to it alone); false unmarks it"`
}

func (in ControlsIn) patch() ControlsPatch {
	return ControlsPatch{Headers: &in.Headers, RateLimit: &in.RateLimit, Ordered: &in.Ordered, TraceContext: &in.TraceContext, Developer: &in.Developer}
}

// applyControls validates the patch and applies it to e, whose other
// fields are final (ordered needs e's profile to allow one in flight;
// developer, a profile with a developer subscription).
func applyControls(e *endpoint.Endpoint, in ControlsPatch, inFlight int, prof profile.Profile) error {
	c := e.Controls
	if in.Headers != nil {
		h, err := endpoint.CheckHeaders(*in.Headers)
		if err != nil {
			return err
		}
		c.Headers = h
	}
	if in.RateLimit != nil {
		if err := endpoint.CheckRateLimit(*in.RateLimit); err != nil {
			return err
		}
		c.RateLimit = *in.RateLimit
	}
	if in.Ordered != nil {
		c.Ordered = *in.Ordered
	}
	if in.TraceContext != nil {
		c.TraceContext = *in.TraceContext
	}
	if in.Developer != nil {
		if *in.Developer && !prof.DeveloperSubscription() {
			return apperr.New(apperr.Invalid, "developer marks a kwork app's developer subscription; the %s profile has no lifecycle events to send it (leave developer out)", prof.Name())
		}
		c.Developer = *in.Developer
	}
	if c.Ordered && inFlight != 1 {
		return apperr.New(apperr.Invalid, "ordered needs one delivery in flight at a time: this endpoint allows %d (set max_in_flight to 1, or leave ordered off)", inFlight)
	}
	e.Controls = c
	return nil
}

// checkDeveloper refuses to mark e the owner's developer subscription
// while another one is, naming it: the app has one.
func checkDeveloper(ctx context.Context, q *store.Q, e *endpoint.Endpoint) error {
	if !e.Developer {
		return nil
	}
	eps, err := q.ListEndpoints(ctx, e.OwnerID, false)
	if err != nil {
		return err
	}
	for _, o := range eps {
		if o.Developer && o.ID != e.ID {
			return apperr.New(apperr.Conflict, "subscription %s is the app's developer subscription already: set developer false on it first", o.ID)
		}
	}
	return nil
}

// markWaiting shows, on an ordered endpoint's log, what waits behind what:
// every pending delivery but the head waits for the head.
func markWaiting(ctx context.Context, q *store.Q, endpointID string, ds []*DeliveryView) error {
	head, err := q.OrderedHead(ctx, endpointID)
	if err != nil || head == nil {
		return err
	}
	for _, d := range ds {
		if d.State == endpoint.Pending && d.ID != head.ID {
			d.WaitingFor = head.ID
		}
	}
	return nil
}
