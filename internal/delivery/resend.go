package delivery

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/riverqueue/river"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/store"
)

// Resent is what a resend of one event did, endpoint by endpoint.
type Resent struct {
	// Resent are the endpoints the event goes to again: a finished
	// delivery re-enqueued (same delivery id, fresh attempt budget), or a
	// new one to a named endpoint subscribed since.
	Resent []string `json:"resent"`
	// Pending are the endpoints whose delivery of it is still on its way:
	// left as they are.
	Pending []string `json:"pending"`
	// Disabled are endpoints the event went to that are disabled now:
	// skipped (enable one, then resend).
	Disabled []string `json:"disabled"`
}

// Resend sends one of the owner's events again: to the endpoints it went
// to, or to those named (each the owner's, and either one it went to or
// one subscribed to it now, as fanout judges: its type globs and scope).
// Finished deliveries are re-enqueued as a recovery does; a named
// endpoint without one gets a new delivery; pending ones are left be. One
// transaction: all of it or nothing.
func (s *Service) Resend(ctx context.Context, ownerID, eventID string, endpointIDs []string) (*Resent, error) {
	q := s.db.Q()
	read, err := q.ReadForFanout(ctx, eventID)
	if err != nil || read.Owner.ID != ownerID {
		if err == nil || apperr.IsNotFound(err) {
			err = apperr.New(apperr.NotFound, "event %q not found", eventID)
		}
		return nil, err
	}
	ev, o := read.Event, read.Owner
	p, err := s.cfg.Profiles.Get(o.Profile)
	if err != nil {
		return nil, err
	}
	ds, err := q.EventDeliveries(ctx, ownerID, eventID)
	if err != nil {
		return nil, err
	}
	had := make(map[string]*endpoint.Delivery, len(ds))
	var ids []string
	for _, d := range ds {
		had[d.EndpointID] = d
		ids = append(ids, d.EndpointID)
	}
	named := len(endpointIDs) > 0
	if named {
		ids = nil
		for _, id := range endpointIDs {
			if id = strings.TrimSpace(id); id != "" && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) == 0 {
		return nil, apperr.New(apperr.Invalid, "event %s went to no endpoint: name endpoint_ids of endpoints subscribed to %s", eventID, ev.Type)
	}
	out := &Resent{Resent: []string{}, Pending: []string{}, Disabled: []string{}}
	var again, fresh []*endpoint.Delivery
	now := s.now().UTC()
	for _, id := range ids {
		ep, err := q.GetEndpoint(ctx, ownerID, id)
		if err != nil {
			return nil, err // NotFound for another owner's, as for a missing one
		}
		d := had[id]
		switch {
		case ep.Kind == endpoint.KindPoll:
			// A polling endpoint keeps each event once (no delivery to
			// send again): its consumer reads it again by seeking.
			return nil, apperr.New(apperr.Invalid, "endpoint_ids: %s is a polling endpoint: its consumer reads %s again with POST /api/v1/poll/%s/seek {\"event_id\": %q}", id, eventID, id, eventID)
		case !ep.Enabled && named:
			return nil, apperr.New(apperr.Conflict, "endpoint %s is disabled: enable it (PATCH enabled=true), then resend", id).Keyed("resend.disabled", id)
		case !ep.Enabled:
			out.Disabled = append(out.Disabled, id)
		case d != nil && d.State == endpoint.Pending:
			out.Pending = append(out.Pending, id)
		case d != nil:
			again = append(again, d)
			out.Resent = append(out.Resent, id)
		default:
			view, err := s.scopeViewOf(ctx, q, ownerID, []*endpoint.Endpoint{ep}, read.Scoped)
			if err != nil {
				return nil, err
			}
			ok, err := s.targets(ctx, ev, o, p, []*endpoint.Endpoint{ep}, view)
			if err != nil {
				return nil, err
			}
			if len(ok) == 0 {
				return nil, apperr.New(apperr.Invalid, "endpoint_ids: %s is not subscribed to %s (its event types: %s, and its scope): name an endpoint the event goes to", id, ev.Type, strings.Join(ep.EventTypes, ", ")).Keyed("resend.not_subscribed", id, ev.Type)
			}
			fresh = append(fresh, &endpoint.Delivery{ID: event.NewID("dlv_", now), OwnerID: ownerID, EndpointID: id, EventID: ev.ID, EventType: ev.Type,
				State: endpoint.Pending, NextAttemptAt: &now, CreatedAt: now, UpdatedAt: now})
			out.Resent = append(out.Resent, id)
		}
	}
	meta, _ := json.Marshal(jobMeta{Profile: p.Name()})
	// A transaction even when nothing is to be sent again: the op's audit
	// record commits in it.
	err = s.db.InTx(ctx, store.TxOptions{}, func(q *store.Q) error {
		all := append(slices.Clone(again), fresh...)
		if len(all) == 0 {
			return nil
		}
		params := make([]river.InsertManyParams, len(all))
		for i, d := range all {
			params[i] = deliverParams(d, QueueDeliver, p, meta, now, now) // a slow endpoint's job moves itself
		}
		s.shares.place(ownerID, params)
		res, err := q.InsertJobs(ctx, params)
		if err != nil {
			return err
		}
		for i, d := range again {
			if err := q.ResetDeliveryFrom(ctx, d.ID, res[i].Job.ID, now.UnixMicro()); err != nil {
				return err
			}
		}
		for i, d := range fresh {
			d.JobID = res[len(again)+i].Job.ID
		}
		_, err = q.InsertDeliveries(ctx, fresh)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
