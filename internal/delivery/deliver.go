package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/riverqueue/river"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/destination"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/profile"
	"github.com/hookd/hookd/internal/store"
	"github.com/hookd/hookd/internal/tracing"
)

// DeliverArgs is the webhook.deliver job: one event to one endpoint. One
// pair is enqueued once however often fanout runs (see deliverParams).
type DeliverArgs struct {
	EndpointID string `json:"endpoint_id"`
	EventID    string `json:"event_id"`
}

// Kind is the job kind River knows the deliver job by.
func (DeliverArgs) Kind() string { return "webhook.deliver" }

type deliverWorker struct {
	river.WorkerDefaults[DeliverArgs]
	s *Service
}

// Timeout is one attempt's bound plus the window in which a lease holder
// may go on draining its endpoint (DrainFor).
func (w *deliverWorker) Timeout(*river.Job[DeliverArgs]) time.Duration {
	return w.s.cfg.JobTimeout + w.s.cfg.DrainFor
}

// NextRetry is the profile's schedule: the wait after the job's nth failed
// send. Snoozes do not count (River does not spend an attempt on them).
func (w *deliverWorker) NextRetry(job *river.Job[DeliverArgs]) time.Time {
	return w.s.now().Add(w.s.retryOf(job.Metadata).After(job.Attempt))
}

// retryOf is the retry schedule of the profile named in a deliver job's
// metadata (jobMeta). If the profile cannot be read from it, or is no
// longer known, the job is retried on the standard schedule: it is retried
// either way, and a warning says why.
func (s *Service) retryOf(metadata []byte) profile.Retry {
	var m jobMeta
	unreadable := json.Unmarshal(metadata, &m)
	p, err := s.cfg.Profiles.Get(m.Profile)
	if err != nil {
		s.log.Warn("deliver job's profile unreadable; River retries it on the standard schedule", "profile", m.Profile, "error", errors.Join(unreadable, err))
		return profile.StandardRetry
	}
	if unreadable != nil {
		s.log.Warn("deliver job's metadata partly unreadable; River retries it on its profile's schedule", "profile", m.Profile, "error", unreadable)
	}
	return p.Retry()
}

// Work makes one attempt: lease, sign, POST, classify, settle. A success
// is followed by a drain of the endpoint's next fresh deliveries while the
// lease is held (see drainThenHandOver). The lease comes first: a job that
// meets it busy (under a hot endpoint's backlog, most of them, while the
// holders drain) costs one short read before it snoozes, not a full load.
func (w *deliverWorker) Work(ctx context.Context, job *river.Job[DeliverArgs]) (err error) {
	s := w.s
	endpointID, eventID := job.Args.EndpointID, job.Args.EventID
	ctx, span := s.startSpan(ctx, "hookd.deliver", job.Metadata, attribute.String("hookd.endpoint", endpointID),
		attribute.String("hookd.event", eventID), attribute.Int("hookd.attempt", job.Attempt))
	defer func() { endSpan(span, realError(err)) }()
	lane := job.Queue
	ownerID, known := s.shares.ownerOf(endpointID)
	if known { // the owner's share first: a job over it costs no query
		counted := s.shares.counts(lane, endpointID)
		if !s.shares.take(lane, ownerID, counted) {
			return s.overShare(ctx, job)
		}
		defer s.shares.give(lane, ownerID, counted)
		if lane == QueueDeliverSlow && !counted { // a burst's overflow
			if !s.shares.admitOverflow(ctx, overflowWait) {
				return s.overShare(ctx, job)
			}
			defer s.shares.doneOverflow()
		}
	}
	now := s.now()
	slot, ok, err := s.db.Q().TakeLease(ctx, endpointID, job.ID, now.UnixMicro(), now.Add(s.cfg.LeaseFor).UnixMicro())
	if err != nil {
		return err
	}
	if !ok {
		return s.leaseBusy(ctx, job)
	}
	held := true // until the attempt is settled: then handOver lets go
	defer func() {
		if held {
			s.letGo(ctx, endpointID, slot, job.ID, err)
		}
	}()
	a, p, done, ret := s.loadAttempt(ctx, job, now)
	if done {
		return ret
	}
	d, ep := a.Delivery, a.Endpoint
	s.shares.seen(endpointID, ep.SlowSince != nil)
	if !known {
		s.shares.remember(endpointID, ep.OwnerID)
		counted := lane == QueueDeliver || ep.SlowSince != nil
		if !s.shares.take(lane, ep.OwnerID, counted) {
			return s.overShare(ctx, job)
		}
		defer s.shares.give(lane, ep.OwnerID, counted)
		if !counted { // a burst's overflow, its lease held while it waits
			if !s.shares.admitOverflow(ctx, overflowWait) {
				return s.overShare(ctx, job)
			}
			defer s.shares.doneOverflow()
		}
	}
	if lane == QueueDeliver && laneOf(ep) == QueueDeliverSlow {
		return s.toSlowLane(ctx, job) // the endpoint turned slow after the fanout wrote this job
	}
	exclusive := p.MaxInFlight(ep.MaxInFlight) == 1
	if done, ret := s.mayGo(ctx, d, ep, exclusive, now); done {
		return ret
	}
	out, took, err := s.attempt(ctx, ep, d, a.Event, a.Owner, p, now)
	if errors.As(err, new(transformCancel)) {
		return s.discard(ctx, d, p.Name(), job.ID, err.Error())
	}
	if err != nil {
		return s.unsent(ctx, d, exclusive, err)
	}
	out = s.budget(ctx, out, p, d, job)
	trace.SpanFromContext(ctx).SetAttributes(attribute.String("hookd.delivery", d.ID), attribute.Int("http.response.status_code", out.Status), attribute.String("hookd.verdict", out.Verdict.String()))
	res, err := s.settle(ctx, ep, d, a.Event, p, attempted{out, took, job.Attempt, job.MaxAttempts}, job.ID)
	if err != nil {
		return err // not recorded: River retries the job, which sends again
	}
	held = false
	s.handOver(ctx, ep, slot, job, out.Verdict, exclusive, now)
	return res.forRiver
}

// leaseBusy is the return of a job that met its endpoint's lease busy (or
// the endpoint gone): a snooze, unless hookd's record says the delivery
// was settled meanwhile (e.g. by a drain), and then nothing to wait for.
func (s *Service) leaseBusy(ctx context.Context, job *river.Job[DeliverArgs]) error {
	pending, err := s.db.Q().DeliveryPending(ctx, job.Args.EndpointID, job.Args.EventID, job.ID)
	switch {
	case apperr.IsNotFound(err):
		return river.JobCancel(errors.New("delivery gone: endpoint deleted"))
	case err != nil:
		return err
	case !pending:
		return nil
	}
	s.cfg.Metrics.LeaseBusy()
	return river.JobSnooze(s.cfg.BusySnooze) // busy: no attempt spent
}

// loadAttempt reads what the job's attempt needs, and its profile;
// done=true means return ret without sending (settled already, or
// discarded unsent: see preflight).
func (s *Service) loadAttempt(ctx context.Context, job *river.Job[DeliverArgs], now time.Time) (a *store.AttemptInput, p profile.Profile, done bool, ret error) {
	a, err := s.db.Q().LoadAttempt(ctx, job.Args.EndpointID, job.Args.EventID)
	if apperr.IsNotFound(err) {
		// The delivery is gone, or its endpoint is and the delivery was
		// written after it went (store.DropOrphanDelivery).
		if err := s.db.Q().DropOrphanDelivery(ctx, job.Args.EndpointID, job.Args.EventID); err != nil {
			return nil, nil, true, err
		}
		return nil, nil, true, river.JobCancel(errors.New("delivery gone: endpoint deleted"))
	}
	if err != nil {
		return nil, nil, true, err
	}
	if done, ret := s.preflight(a, job, now); done {
		return nil, nil, true, ret
	}
	d := a.Delivery
	if !a.Endpoint.Enabled {
		return nil, nil, true, s.discard(ctx, d, a.Owner.Profile, job.ID, "endpoint disabled")
	}
	if a.Event == nil {
		return nil, nil, true, s.discard(ctx, d, a.Owner.Profile, job.ID, "event pruned")
	}
	p, err = s.cfg.Profiles.Get(a.Owner.Profile)
	if err != nil {
		return nil, nil, true, s.discard(ctx, d, a.Owner.Profile, job.ID, err.Error())
	}
	return a, p, false, nil
}

// mayGo decides whether d may be sent now, with the slot held: an ordered
// endpoint's delivery waits behind an older event's; under a lease of
// several slots it is claimed first, since a holder of another slot may be
// draining this endpoint and must not send it too (under an exclusive
// lease nobody else sends). done=true means return ret without sending.
func (s *Service) mayGo(ctx context.Context, d *endpoint.Delivery, ep *endpoint.Endpoint, exclusive bool, now time.Time) (done bool, ret error) {
	if ep.Ordered && exclusive {
		wait, err := s.orderedWait(ctx, d, now)
		if err != nil {
			return true, err
		}
		if wait > 0 {
			return true, river.JobSnooze(wait) // behind an older event's delivery: no attempt spent
		}
	}
	if exclusive {
		return false, nil
	}
	ok, err := s.db.Relaxed().ClaimDelivery(ctx, d.ID, d.EventID, d.Attempts, now.UnixMicro(), now.Add(s.cfg.LeaseFor).UnixMicro())
	if err != nil {
		return true, err
	}
	if !ok {
		return true, river.JobSnooze(s.cfg.BusySnooze) // being sent, or just settled: look again later
	}
	return false, nil
}

// unsent is the return of a job whose attempt did not reach the receiver
// (err): a snooze when the rate limit held it back (no attempt spent; its
// claim is given back), else err (the request could not even be built:
// the secret unreadable …).
func (s *Service) unsent(ctx context.Context, d *endpoint.Delivery, exclusive bool, err error) error {
	held := (*rateHeld)(nil)
	if !errors.As(err, &held) {
		return err
	}
	if !exclusive {
		s.releaseClaims(ctx, []string{d.ID})
	}
	return river.JobSnooze(held.wait)
}

// handOver lets go of the slot once the job's attempt is settled: after a
// success the holder drains the endpoint first (a discard, too, lets an
// ordered endpoint's next go); after a failure it wakes what waited behind
// it.
func (s *Service) handOver(ctx context.Context, ep *endpoint.Endpoint, slot int, job *river.Job[DeliverArgs], v Verdict, exclusive bool, now time.Time) {
	discarded := v == Discard || v == Retry && job.Attempt >= job.MaxAttempts
	if v == Complete || ep.Ordered && exclusive && discarded {
		s.drainThenHandOver(ctx, ep, slot, job.ID, exclusive, now)
		return
	}
	s.releaseThenWake(ctx, ep.ID, slot, job.ID)
}

// releaseThenWake lets go of the slot after an attempt that failed, and
// then looks, as a drain's hand-over does, for a fresh delivery due: one
// committed while this attempt held the slot had its job deferred behind
// it (deferBusy), and a failing endpoint has no drain to send it, so
// without the look it would wait out the deferral (LeaseFor). If one is
// due its job is woken; the failed delivery keeps its own retry schedule.
func (s *Service) releaseThenWake(ctx context.Context, endpointID string, slot int, holder int64) {
	s.releaseLease(ctx, endpointID, slot, holder)
	due, err := s.db.Q().FreshDue(context.WithoutCancel(ctx), endpointID, s.now().UnixMicro())
	if err != nil {
		s.log.Warn("could not look for deliveries behind a failed attempt; they go when their jobs come due", "endpoint", endpointID, "error", err)
		return
	}
	if due {
		s.wakeNext(ctx, endpointID, true)
	}
}

// letGo gives back the slot of a job that ends without handing it over:
// it sent nothing (its delivery was settled meanwhile, the endpoint is
// disabled …), or its attempt could not be recorded. A fanout that met
// the slot held meanwhile deferred its deliveries' jobs behind it
// (deferBusy), and no drain follows to send them: unless this job comes
// back by itself (ret is a snooze: it then sends and hands over), it wakes
// the oldest deferred one, which without this waited out the deferral
// (LeaseFor).
func (s *Service) letGo(ctx context.Context, endpointID string, slot int, holder int64, ret error) {
	s.beforeRelease(endpointID)
	s.releaseLease(ctx, endpointID, slot, holder)
	if snooze := (*river.JobSnoozeError)(nil); !errors.As(ret, &snooze) {
		s.wakeDeferred(ctx, endpointID)
	}
}

// releaseLease gives the holder's lease slot on the endpoint back, even
// when ctx has ended.
func (s *Service) releaseLease(ctx context.Context, endpointID string, slot int, holder int64) {
	if err := s.db.Relaxed().ReleaseLease(context.WithoutCancel(ctx), endpointID, slot, holder); err != nil {
		s.log.Warn("release lease failed; the slot stays taken until the lease expires", "endpoint", endpointID, "slot", slot, "error", err)
	}
}

// releaseClaims gives back, even when ctx has ended, the claims on
// deliveries taken for sending but not sent.
func (s *Service) releaseClaims(ctx context.Context, deliveryIDs []string) {
	if err := s.db.Relaxed().ReleaseClaims(context.WithoutCancel(ctx), deliveryIDs); err != nil {
		s.log.Warn("release claims failed; the deliveries are sent by their own jobs once their claims expire", "deliveries", len(deliveryIDs), "error", err)
	}
}

// preflight decides, from hookd's record, whether this job should send at
// all; done=true means return ret without sending.
func (s *Service) preflight(a *store.AttemptInput, job *river.Job[DeliverArgs], now time.Time) (done bool, ret error) {
	d := a.Delivery
	// River is at-least-once: a job whose completion had not reached the
	// database when its process died (or that the rescuer took from a slow
	// process) runs again. hookd's own record says whether it was settled.
	if d.State != endpoint.Pending || (d.JobID != 0 && d.JobID != job.ID) {
		s.log.Debug("delivery already settled; not sending again", "delivery", d.ID, "state", d.State, "job", job.ID)
		return true, nil
	}
	// The endpoint's lease holder sent this delivery (drain) and it failed:
	// that send was this River attempt. Spend it, so River's count and
	// backoff match what the receiver saw.
	if d.Attempts >= job.Attempt {
		return true, errors.New(d.LastError)
	}
	// A receiver's Retry-After is honoured even when the job runs early (a
	// plain backoff after a 429 or 503 is not: River owns that schedule,
	// and a job retried by hand goes now).
	if (d.LastStatus == http.StatusTooManyRequests || d.LastStatus == http.StatusServiceUnavailable) &&
		strings.Contains(d.LastError, retryAfterNote) && d.NextAttemptAt != nil && d.NextAttemptAt.After(now.Add(time.Second)) {
		return true, river.JobSnooze(d.NextAttemptAt.Sub(now))
	}
	return false, nil
}

// attempt builds the signed request and sends it, and says how long the
// HTTP exchange took. No transaction is open.
func (s *Service) attempt(ctx context.Context, ep *endpoint.Endpoint, d *endpoint.Delivery, ev *event.Event, o *owner.Owner, p profile.Profile, now time.Time) (Outcome, time.Duration, error) {
	secret, err := s.secretOf(ep)
	if err != nil {
		return Outcome{}, 0, err
	}
	buf := profile.Buffers.Get()
	body, err := p.AppendBody(*buf, ev, o)
	if err != nil {
		profile.Buffers.Put(buf)
		return Outcome{}, 0, fmt.Errorf("render %s: %w", ev.ID, err)
	}
	*buf = body
	url, headers := ep.URL, ep.Headers
	if ep.Transformation != "" { // reshaped before it is signed (code.go)
		xf, failed, err := s.transformed(ep, p, body)
		if failed != nil || err != nil {
			profile.Buffers.Put(buf)
			if failed != nil {
				return *failed, 0, nil
			}
			return Outcome{}, 0, err
		}
		body, url, headers = xf.Payload, xf.URL, xf.Headers
	}
	h := make(http.Header, 6+len(headers))
	for name, value := range headers { // canonical and never reserved (endpoint.CheckHeaders)
		h[name] = []string{value}
	}
	h["Content-Type"] = []string{"application/json"}
	h["User-Agent"] = []string{s.cfg.UserAgent}
	if ep.TraceContext && s.cfg.Tracer != nil {
		// Opted in: the receiver continues the trace from this attempt's
		// hookd.deliver span (in ctx). Never otherwise: a webhook leaves
		// with no trace context of hookd's or of the publisher's.
		tracing.Propagator.Inject(ctx, propagation.HeaderCarrier(h))
	}
	if err := p.Sign(h, secret, profile.Message{DeliveryID: d.ID, EventID: ev.ID, EventType: ev.Type, Body: body}, now); err != nil {
		profile.Buffers.Put(buf)
		return Outcome{}, 0, fmt.Errorf("sign %s: %w", ev.ID, err)
	}
	if err := s.pace(ctx, ep); err != nil {
		profile.Buffers.Put(buf)
		return Outcome{}, 0, err
	}
	if destination.Is(ep.URL) {
		defer profile.Buffers.Put(buf)
		return s.sendDestination(ctx, ep, ev, h, body, p)
	}
	auth, err := endpoint.AuthOf(secret) // sealed with the keys: unsealed above, in the one place
	if err != nil {
		profile.Buffers.Put(buf)
		return Outcome{}, 0, fmt.Errorf("endpoint %s auth: %w", ep.ID, err)
	}
	start := time.Now() // the wall clock, not s.now: a duration, not a time
	resp, err := s.cfg.Client.PostAuth(ctx, url, auth, h, body, func() { profile.Buffers.Put(buf) })
	took := time.Since(start)
	s.cfg.Metrics.Attempt(p.Name(), took)
	return Classify(resp, err, s.now(), s.cfg.MaxRetryAfter, p), took, nil
}
