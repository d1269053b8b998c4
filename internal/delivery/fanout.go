package delivery

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/profile"
	"github.com/hookd/hookd/internal/store"
)

type fanoutWorker struct {
	river.WorkerDefaults[FanoutArgs]
	s *Service
}

// Work offers one event to every enabled endpoint of its owner whose globs
// match (or, for a test event, to the one endpoint it names), asks the scope
// predicate for each, and enqueues the deliveries in one transaction. A
// delivery already enqueued for a pair is skipped, so running twice enqueues
// once.
func (w *fanoutWorker) Work(ctx context.Context, job *river.Job[FanoutArgs]) error {
	s := w.s
	q := s.db.Q()
	ev, err := q.GetEvent(ctx, "", job.Args.EventID)
	if apperr.IsNotFound(err) {
		return nil // pruned before fanout: nothing to offer
	}
	if err != nil {
		return err
	}
	o, err := q.GetOwner(ctx, ev.OwnerID)
	if apperr.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	p, err := s.cfg.Profiles.Get(o.Profile)
	if err != nil {
		return river.JobCancel(err)
	}
	if p.Excluded(ev.Type, o) {
		return nil
	}
	targets, err := w.targets(ctx, q, ev, o, p)
	if err != nil {
		return err
	}
	if len(targets) == 0 {
		return nil
	}
	return s.enqueue(ctx, ev, o, p, targets)
}

// targets returns the endpoints ev goes to.
func (w *fanoutWorker) targets(ctx context.Context, q *store.Q, ev *event.Event, o *owner.Owner, p profile.Profile) ([]*endpoint.Endpoint, error) {
	if ev.EndpointID != "" {
		ep, err := q.GetEndpoint(ctx, ev.OwnerID, ev.EndpointID)
		if apperr.IsNotFound(err) {
			return nil, nil
		}
		if err != nil || !ep.Enabled {
			return nil, err
		}
		return []*endpoint.Endpoint{ep}, nil
	}
	eps, err := q.ListEndpoints(ctx, ev.OwnerID, true)
	if err != nil {
		return nil, err
	}
	implicit := p.Implicit(ev.Type, o)
	var out []*endpoint.Endpoint
	for _, ep := range eps {
		if !implicit && !event.MatchAny(ep.EventTypes, ev.Type) {
			continue
		}
		ok, err := w.s.cfg.Scope.Admits(ctx, ep, ev)
		if err != nil {
			return nil, fmt.Errorf("scope of endpoint %s: %w", ep.ID, err)
		}
		if ok {
			out = append(out, ep)
		}
	}
	return out, nil
}

// enqueue inserts the deliveries and their jobs in one transaction. While an
// endpoint is failing its new deliveries are scheduled Cooldown out.
func (s *Service) enqueue(ctx context.Context, ev *event.Event, o *owner.Owner, p profile.Profile, eps []*endpoint.Endpoint) error {
	now := s.now().UTC()
	meta, _ := json.Marshal(jobMeta{Profile: p.Name()})
	return s.db.InTx(ctx, func(q *store.Q) error {
		// Skip pairs a previous run enqueued, then insert the jobs first so
		// each delivery row is written once, with its job id.
		have, err := q.EndpointsWithDelivery(ctx, ev.ID)
		if err != nil {
			return err
		}
		var ds []*endpoint.Delivery
		var params []river.InsertManyParams
		for _, ep := range eps {
			if have[ep.ID] {
				continue
			}
			at := s.cfg.Rules.ScheduleFor(ep, now)
			if ev.EndpointID != "" {
				at = now // a test the owner asked for goes now, cooldown or not
			}
			d := &endpoint.Delivery{
				ID: event.NewID("dlv_", now), OwnerID: o.ID, EndpointID: ep.ID, EventID: ev.ID, EventType: ev.Type,
				State: endpoint.Pending, NextAttemptAt: &at, CreatedAt: now, UpdatedAt: now,
			}
			ds = append(ds, d)
			params = append(params, deliverParams(d, p, meta, at, now))
		}
		if len(ds) == 0 {
			return nil
		}
		res, err := q.InsertJobs(ctx, params)
		if err != nil {
			return fmt.Errorf("enqueue deliveries: %w", err)
		}
		for i, r := range res {
			ds[i].JobID = r.Job.ID
		}
		// A concurrent fanout of the same event (rare) may have won a pair:
		// ON CONFLICT skips it, and the job inserted here for it finds the
		// delivery's job_id is another's and does nothing.
		_, err = q.InsertDeliveries(ctx, ds)
		return err
	})
}

// jobMeta rides in a deliver job's metadata so River's retry policy knows
// the profile's schedule without a query.
type jobMeta struct {
	Profile string `json:"profile"`
}

func deliverParams(d *endpoint.Delivery, p profile.Profile, meta []byte, at, now time.Time) river.InsertManyParams {
	// Uniqueness per (endpoint, event) is hookd_deliveries' unique key,
	// checked in the same transaction as this insert: it outlives River's
	// job rows (deleted after a day or a week), so a fanout re-run at any
	// later time enqueues nothing, and a redelivery is never refused because
	// River has not yet recorded the old job's end. (River's UniqueOpts
	// would do neither.)
	opts := &river.InsertOpts{
		Queue:       QueueDeliver,
		MaxAttempts: p.Retry().MaxAttempts,
		Metadata:    meta,
	}
	if at.After(now) {
		opts.ScheduledAt = at
	}
	return river.InsertManyParams{Args: DeliverArgs{EndpointID: d.EndpointID, EventID: d.EventID}, InsertOpts: opts}
}

// Fanout runs the fanout of one event now (what the webhook.fanout job
// does): for tools and tests; running it again enqueues nothing new.
func (s *Service) Fanout(ctx context.Context, eventID string) error {
	return (&fanoutWorker{s: s}).Work(ctx, &river.Job[FanoutArgs]{Args: FanoutArgs{EventID: eventID}})
}
