package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/riverqueue/river"
	"go.opentelemetry.io/otel/attribute"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/profile"
	"github.com/hookd/hookd/internal/scope"
	"github.com/hookd/hookd/internal/store"
	"github.com/hookd/hookd/internal/transform"
)

type fanoutWorker struct {
	river.WorkerDefaults[FanoutArgs]
	s *Service
}

// Work offers one event to every enabled endpoint of its owner whose globs
// match (or, for a test event, to the one endpoint it names), asks the scope
// predicate for each, and enqueues the deliveries in one transaction. A
// delivery already enqueued for a pair is skipped, so running twice enqueues
// once. Other events of the same owner still awaiting their fanout are
// fanned out in the same transaction and their fanout jobs deleted (see
// fanout).
func (w *fanoutWorker) Work(ctx context.Context, job *river.Job[FanoutArgs]) error {
	s := w.s
	q := s.db.Q()
	read, err := q.ReadForFanout(ctx, job.Args.EventID)
	if apperr.IsNotFound(err) {
		return nil // pruned before fanout, or its owner deleted: nothing to offer
	}
	if err != nil {
		return err
	}
	read, leave, err := s.takeTurn(ctx, q, job.Args.EventID, read)
	if read == nil {
		return err
	}
	var done fanned
	defer func() { leave(done) }()
	ev, o, eps := read.Event, read.Owner, read.Endpoints
	p, err := s.cfg.Profiles.Get(o.Profile)
	if err != nil {
		return river.JobCancel(err)
	}
	if s.cfg.Metrics != nil {
		s.profiles.Store(o.ID, o.Profile)
	}
	view, err := s.scopeViewOf(ctx, q, o.ID, eps, read.Scoped)
	if err != nil {
		return err
	}
	var meta []byte
	if job.JobRow != nil { // nil when Fanout runs it directly
		meta = job.Metadata
	}
	done, err = s.fanout(ctx, ev, o, p, eps, view, meta)
	return err
}

// scopeViewOf is what the scope predicate needs, read afresh for every
// fanout (a type made scoped, a grant revoked or edited applies to the
// next one): the owner's scoped types (read already, with the fanout's
// other reads) and, when there are any, the stored grants its endpoints
// name.
func (s *Service) scopeViewOf(ctx context.Context, q *store.Q, ownerID string, eps []*endpoint.Endpoint, scoped map[string]bool) (*scope.View, error) {
	v := &scope.View{Scoped: scoped, Now: s.now()}
	if len(scoped) == 0 || s.cfg.Scope.Source != nil {
		return v, nil
	}
	var ids []string
	for _, ep := range eps {
		if ep.GrantID != "" && !slices.Contains(ids, ep.GrantID) {
			ids = append(ids, ep.GrantID)
		}
	}
	grants, err := q.GrantsByID(ctx, ownerID, ids)
	if err != nil {
		return nil, err
	}
	v.Grants = grants
	return v, nil
}

// targets returns the endpoints (of the owner's enabled ones) ev goes to.
func (s *Service) targets(ctx context.Context, ev *event.Event, o *owner.Owner, p profile.Profile, eps []*endpoint.Endpoint, view *scope.View) ([]*endpoint.Endpoint, error) {
	if p.Excluded(ev.Type, o) {
		return nil, nil
	}
	implicit := p.Implicit(ev.Type, o)
	about := AboutEndpoint(ev) // a failure notification never goes to its endpoint
	var out []*endpoint.Endpoint
	var in *transform.Input // ev as filters see it, made for the first one (code.go)
	for _, ep := range eps {
		if about != "" && ep.ID == about {
			continue
		}
		if ev.EndpointID != "" {
			if ep.ID == ev.EndpointID { // a test event: that endpoint only
				return []*endpoint.Endpoint{ep}, nil
			}
			continue
		}
		switch {
		case implicit && !ep.Developer:
			continue // lifecycle events go to the developer subscription alone
		case !implicit && !event.MatchAny(ep.EventTypes, ev.Type):
			continue
		}
		ok, err := s.cfg.Scope.Admits(ctx, ep, ev, view)
		if err != nil {
			return nil, fmt.Errorf("scope of endpoint %s: %w", ep.ID, err)
		}
		if ok && ep.Filter != "" {
			ok = s.filterPasses(ep, ev, &in)
		}
		if ok {
			out = append(out, ep)
		}
	}
	return out, nil
}

// fanout enqueues ev's deliveries (and their jobs) in one transaction,
// together with those of up to FanoutBatch other events of the same owner
// still awaiting fanout, whose fanout jobs it deletes: under a burst of
// events one transaction and one endpoint list serve many of them, instead
// of a River job, a transaction and a commit each. While an endpoint is
// failing its new deliveries are scheduled Cooldown out.
//
// It returns what it fanned out: the job's event and those taken along.
func (s *Service) fanout(ctx context.Context, ev *event.Event, o *owner.Owner, p profile.Profile, eps []*endpoint.Endpoint, view *scope.View, jobMetadata []byte) (_ fanned, err error) {
	ctx, span := s.startSpan(ctx, "hookd.fanout", jobMetadata, attribute.String("hookd.event", ev.ID), attribute.String("hookd.event_type", ev.Type))
	defer func() { endSpan(span, err) }()
	f := fanoutRun{ev: ev, o: o, p: p, eps: eps, view: view, now: s.now().UTC()}
	f.meta, _ = json.Marshal(jobMeta{Profile: p.Name()}) // a string field: cannot fail
	s.beforeFanoutTx(ev.ID)
	// Relaxed commit: PostgreSQL writes WAL in order, so River's later,
	// synchronous completion of this fanout job makes this transaction
	// durable too; a crash that loses it loses the completion as well, and
	// the fanout runs again.
	var deferred []string
	err = s.db.InTx(ctx, store.TxOptions{Relaxed: true}, func(q *store.Q) (err error) {
		deferred, err = s.fanoutTx(ctx, q, &f) // a retried transaction starts over
		return err
	})
	if err != nil {
		return fanned{}, err
	}
	if len(deferred) > 0 {
		s.wakeIfFree(ctx, deferred)
	}
	if len(f.polled) > 0 {
		s.poll.Wake(f.polled)
	}
	return f.fanned, nil
}

// fanned is what a fanout's transaction did: the events it fanned out (the
// job's and those taken along; none if it failed or wrote nothing), and
// whether it took along a whole batch (FanoutBatch), so that more of the
// owner's events await fanout than one transaction takes.
type fanned struct {
	done      []string
	fullBatch bool
}

// fanoutRun is what one fanout knows before its transaction: the job's
// event, its owner and profile, the owner's enabled endpoints, the scope
// view, the time, and the deliver jobs' plain metadata (jobMeta); and,
// once its transaction has read them, the endpoints busy now.
type fanoutRun struct {
	ev     *event.Event
	o      *owner.Owner
	p      profile.Profile
	eps    []*endpoint.Endpoint
	view   *scope.View
	now    time.Time
	meta   []byte
	busy   map[string]bool
	fanned fanned   // what its transaction fanned out
	polled []string // the polling endpoints it wrote messages for
}

// fanoutTx is the fanout's transaction: it takes the event (and the others
// awaiting fanout along), writes their deliveries and jobs, marks them
// fanned out and deletes the others' fanout jobs. It returns the endpoints
// whose new jobs it deferred (deferBusy).
func (s *Service) fanoutTx(ctx context.Context, q *store.Q, f *fanoutRun) (deferred []string, err error) {
	f.fanned, f.polled = fanned{}, nil
	ids := make([]string, len(f.eps))
	for i, ep := range f.eps {
		ids[i] = ep.ID
	}
	take, err := q.TakeForFanout(ctx, f.ev.ID, f.o.ID, ids, s.cfg.FanoutBatch, f.now.UnixMicro())
	if err != nil {
		return nil, err
	}
	// Another fanout may be fanning this event out right now: look again
	// once it has committed (its pairs are then skipped below) rather than
	// hold a fanout worker waiting for it.
	if !take.Locked {
		return nil, river.JobSnooze(time.Second)
	}
	others, otherJobs := take.Others, take.OtherJobs
	if len(others) > 0 {
		// The events taken along may have been published after f.eps
		// and f.view were read (an endpoint created, edited or moved to
		// another grant, a grant revoked, then an event published): they
		// are judged by the endpoints and a view read now, in this
		// transaction, after they were (each statement sees what
		// committed before it). Judged by the endpoints read before, an
		// event was refused by a grant its endpoint had left, and nothing
		// fans it out again (its fanout job is deleted here).
		if f.eps, err = q.ListEndpoints(ctx, f.o.ID, true); err != nil {
			return nil, err
		}
		if f.view, err = s.scopeViewOf(ctx, q, f.o.ID, f.eps, take.Scoped); err != nil {
			return nil, err
		}
	}
	f.busy = take.Busy
	// Each event's deliveries carry its own trace (tracing on): the events
	// taken along continue theirs, read from their fanout jobs.
	metaOf, endOthers, err := s.fanoutTraces(ctx, q, others, otherJobs, jobMeta{Profile: f.p.Name()}, f.meta)
	if err != nil {
		return nil, err
	}
	defer endOthers()
	return s.writeFanout(ctx, q, f, take.Have, others, otherJobs, metaOf)
}

// writeFanout writes the deliveries (and their jobs) of the job's event,
// to the endpoints that have none yet (have), and of the others taken
// along (others[i], with fanout job otherJobs[i]) until FanoutPairs, marks
// those events fanned out and deletes the others' fanout jobs. metaOf(i)
// is the deliver jobs' metadata for the i-th event (0: the job's own). It
// returns the endpoints whose new jobs it deferred (deferBusy).
func (s *Service) writeFanout(ctx context.Context, q *store.Q, f *fanoutRun, have map[string]bool, others []*event.Event, otherJobs []int64, metaOf func(int) []byte) (deferred []string, err error) {
	var (
		ds     []*endpoint.Delivery
		params []river.InsertManyParams // params[i] is ds[i]'s job
		polls  []store.PollMessage      // to polling endpoints: no job (poll.go)
		done   = []string{f.ev.ID}
		gone   []int64
	)
	// The envelope renders the owner as the fanout saw it, at every
	// attempt (store.Q.MarkFannedOut).
	attrs, err := json.Marshal(f.o.Attributes)
	if err != nil {
		return nil, fmt.Errorf("owner %s attributes: %w", f.o.ID, err)
	}
	for i, e := range append([]*event.Event{f.ev}, others...) {
		if i > 0 && len(ds) >= s.cfg.FanoutPairs {
			break // the rest wait for their own jobs (or the next batch)
		}
		targets, err := s.targets(ctx, e, f.o, f.p, f.eps, f.view)
		if err != nil {
			return nil, err
		}
		for _, ep := range targets {
			if ep.Polled() {
				polls = append(polls, pollMessage(ep, e, f.now))
				continue
			}
			if i == 0 && have[ep.ID] {
				continue
			}
			d, job := s.newDelivery(f, e, ep, metaOf(i))
			ds, params = append(ds, d), append(params, job)
		}
		if i > 0 {
			done = append(done, e.ID)
			gone = append(gone, otherJobs[i-1])
		}
	}
	if len(polls) > 0 {
		pollOrder(polls)
		if err := q.AppendPollMessages(ctx, polls); err != nil {
			return nil, err
		}
		f.polled = polledEndpoints(polls)
	}
	if len(ds) > 0 {
		s.shares.place(f.o.ID, params)
		deferred = s.deferBusy(ds, params, f.busy, f.now)
		if len(deferred) > 0 {
			s.beforeFanoutCommit(deferred)
		}
		wrote, err := writeAndCommit(ctx, q, store.FanoutWrite{Deliveries: ds, FannedOut: done, OwnerAttributes: string(attrs), Gone: gone}, params)
		if err == nil {
			s.fanoutWritten(wrote)
		}
		if wrote || err != nil {
			f.fanned = fanned{done: done, fullBatch: len(others) >= s.cfg.FanoutBatch}
			return deferred, err
		}
		if err := enqueue(ctx, q, ds, params); err != nil {
			return nil, err
		}
	}
	if err := q.MarkFannedOut(ctx, done, string(attrs)); err != nil {
		return nil, err
	}
	f.fanned = fanned{done: done, fullBatch: len(others) >= s.cfg.FanoutBatch}
	return deferred, q.DeleteJobs(ctx, gone)
}

// newDelivery is e's delivery to ep and its deliver job's insert
// parameters (meta: the job's metadata), due when the endpoint's health
// allows (Rules.ScheduleFor).
func (s *Service) newDelivery(f *fanoutRun, e *event.Event, ep *endpoint.Endpoint, meta []byte) (*endpoint.Delivery, river.InsertManyParams) {
	now := f.now
	at := s.cfg.Rules.ScheduleFor(ep, now)
	if e.EndpointID != "" {
		at = now // a test the owner asked for goes now, cooldown or not
	}
	d := &endpoint.Delivery{
		ID: event.NewID("dlv_", now), OwnerID: f.o.ID, EndpointID: ep.ID, EventID: e.ID, EventType: e.Type,
		State: endpoint.Pending, NextAttemptAt: &at, CreatedAt: now, UpdatedAt: now,
	}
	return d, deliverParams(d, laneOf(ep), f.p, meta, at, now)
}

// enqueue writes the deliver jobs (params[i] is ds[i]'s) through River's
// client and then the deliveries, each row once, with its job's id.
func enqueue(ctx context.Context, q *store.Q, ds []*endpoint.Delivery, params []river.InsertManyParams) error {
	res, err := q.InsertJobs(ctx, params)
	if err != nil {
		return fmt.Errorf("enqueue deliveries: %w", err)
	}
	for i, r := range res {
		ds[i].JobID = r.Job.ID
	}
	// A concurrent fanout of the same event (rare) may have won a pair: ON
	// CONFLICT skips it, and the job inserted here for it finds the
	// delivery's job_id is another's and does nothing.
	_, err = q.InsertDeliveries(ctx, ds)
	return err
}

// deferBusy schedules out the jobs of deliveries to busy endpoints (whose
// every lease slot was held when the fanout's transaction read them:
// store.FanoutTake), and returns those of ds' endpoints. Such a job would
// only be fetched, meet the lease busy and snooze for BusySnooze (a fetch, a lease try, a read and a
// completion, for nothing): under a hot endpoint's backlog that was most of
// River's work. The deliveries themselves are due at once, and the
// holders' drains send them (the drain reads until it finds nothing, then
// looks again after its release; a holder stopped by its bound wakes the
// next job); their jobs are then deleted unrun. So a deferred job comes
// due by itself only when no holder handed over: the holder died (its
// slot frees itself after LeaseFor), stopped on a failure, or the wake
// after this fanout's commit failed. It is deferred LeaseFor (at least
// BusySnooze): deferred only BusySnooze, a backlog longer than the drains
// send in that time came due all at once, and thousands of jobs met the
// lease busy and snoozed, again and again, beside the drain.
func (s *Service) deferBusy(ds []*endpoint.Delivery, params []river.InsertManyParams, busy map[string]bool, now time.Time) (deferred []string) {
	if len(busy) == 0 {
		return nil
	}
	later := now.Add(max(s.cfg.BusySnooze, s.cfg.LeaseFor))
	for i, d := range ds {
		if !busy[d.EndpointID] {
			continue
		}
		if opts := params[i].InsertOpts; opts.ScheduledAt.Before(later) {
			opts.ScheduledAt = later
		}
		if !slices.Contains(deferred, d.EndpointID) {
			deferred = append(deferred, d.EndpointID)
		}
	}
	return deferred
}

// wakeIfFree runs after a fanout that deferred jobs has committed: for each
// of those endpoints no longer busy it wakes the next delivery's job. The
// last holder may have let go, and looked for fresh deliveries, between the
// fanout's busy check and its commit; it then missed them. Either the
// holder's look came after this commit (and saw them), or its release came
// before this check (and this wakes a job).
func (s *Service) wakeIfFree(ctx context.Context, endpointIDs []string) {
	busy, err := s.db.Q().BusyEndpoints(ctx, endpointIDs, s.now().UnixMicro())
	if err != nil {
		busy = nil // wake them all: a spare job only meets the lease busy
	}
	for _, id := range endpointIDs {
		if !busy[id] {
			s.wakeNext(ctx, id, false)
		}
	}
}

// jobMeta rides in a deliver job's metadata so River's retry policy knows
// the profile's schedule without a query.
type jobMeta struct {
	Profile string `json:"profile"`
	// Trace is the event's trace context (tracing on): see tracing.FromMetadata.
	Trace map[string]string `json:"hookd_trace,omitempty"`
}

func deliverParams(d *endpoint.Delivery, lane string, p profile.Profile, meta []byte, at, now time.Time) river.InsertManyParams {
	// Uniqueness per (endpoint, event) is hookd_deliveries' unique key,
	// checked in the same transaction as this insert: it outlives River's
	// job rows (deleted after a day or a week), so a fanout re-run at any
	// later time enqueues nothing, and a redelivery is never refused because
	// River has not yet recorded the old job's end. (River's UniqueOpts
	// would do neither.)
	opts := &river.InsertOpts{
		Queue:       lane,
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
	for {
		err := (&fanoutWorker{s: s}).Work(ctx, &river.Job[FanoutArgs]{Args: FanoutArgs{EventID: eventID}})
		var snooze *river.JobSnoozeError
		if !errors.As(err, &snooze) {
			return err
		}
		// Another fanout holds the event: wait for it as River would.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(snooze.Duration):
		}
	}
}
