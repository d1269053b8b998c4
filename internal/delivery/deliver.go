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

func (DeliverArgs) Kind() string { return "webhook.deliver" }

// JobTimeout bounds one attempt (the HTTP timeout of 10 s sits inside it).
const JobTimeout = 15 * time.Second

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
	q := s.db.Q()
	now := s.now()
	slot, ok, err := q.TakeLease(ctx, endpointID, job.ID, now.UnixMicro(), now.Add(s.cfg.LeaseFor).UnixMicro())
	if err != nil {
		return err
	}
	if !ok {
		// Busy (or the endpoint is gone). Nothing to wait for if hookd's
		// record says this delivery was settled, e.g. by a drain.
		pending, err := q.DeliveryPending(ctx, endpointID, eventID, job.ID)
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
	held := true // until a drain hands the slot over
	defer func() {
		if held {
			s.releaseLease(ctx, endpointID, slot, job.ID)
		}
	}()
	a, err := q.LoadAttempt(ctx, endpointID, eventID)
	if apperr.IsNotFound(err) {
		return river.JobCancel(errors.New("delivery gone: endpoint deleted"))
	}
	if err != nil {
		return err
	}
	if done, ret := s.preflight(a, job, now); done {
		return ret
	}
	d, ep := a.Delivery, a.Endpoint
	if !ep.Enabled {
		return s.discard(ctx, d, a.Owner.Profile, job.ID, "endpoint disabled")
	}
	if a.Event == nil {
		return s.discard(ctx, d, a.Owner.Profile, job.ID, "event pruned")
	}
	p, err := s.cfg.Profiles.Get(a.Owner.Profile)
	if err != nil {
		return s.discard(ctx, d, a.Owner.Profile, job.ID, err.Error())
	}
	exclusive := p.MaxInFlight(ep.MaxInFlight) == 1
	if ep.Ordered && exclusive {
		if wait, err := s.orderedWait(ctx, d, now); err != nil || wait > 0 {
			if err != nil {
				return err
			}
			return river.JobSnooze(wait) // behind an older event's delivery: no attempt spent
		}
	}
	// Claim the delivery: with several slots, a holder of another slot may
	// be draining this endpoint; it must not send this one too. (Under an
	// exclusive lease nobody else sends.)
	if !exclusive {
		ok, err := s.db.Relaxed().ClaimDelivery(ctx, d.ID, d.Attempts, now.UnixMicro(), now.Add(s.cfg.LeaseFor).UnixMicro())
		if err != nil {
			return err
		}
		if !ok {
			return river.JobSnooze(s.cfg.BusySnooze) // being sent, or just settled: look again later
		}
	}

	out, took, err := s.attempt(ctx, ep, d, a.Event, a.Owner, p, now)
	if held := (*rateHeld)(nil); errors.As(err, &held) {
		if !exclusive {
			s.releaseClaims(ctx, []string{d.ID})
		}
		return river.JobSnooze(held.wait) // held back by the rate limit: no attempt spent
	}
	if err != nil { // could not even build the request (secret unreadable …)
		return err
	}
	trace.SpanFromContext(ctx).SetAttributes(attribute.String("hookd.delivery", d.ID), attribute.Int("http.response.status_code", out.Status), attribute.String("hookd.verdict", out.Verdict.String()))
	res, err := s.settle(ctx, ep, d, a.Event, p, attempted{out, took, job.Attempt, job.MaxAttempts}, job.ID)
	if err != nil {
		return err // not recorded: River retries the job, which sends again
	}
	discarded := out.Verdict == Discard || out.Verdict == Retry && job.Attempt >= job.MaxAttempts
	held = false
	if out.Verdict == Complete || ep.Ordered && exclusive && discarded { // a discard lets an ordered endpoint's next go
		s.drainThenHandOver(ctx, ep, slot, job.ID, exclusive, now)
	} else {
		s.releaseThenWake(ctx, ep.ID, slot, job.ID)
	}
	return res.forRiver
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
	secret, err := s.cfg.Sealer.Open(ep.SecretSealed)
	if err != nil {
		return Outcome{}, 0, fmt.Errorf("endpoint %s: %w", ep.ID, err)
	}
	buf := profile.Buffers.Get()
	body, err := p.AppendBody(*buf, ev, o)
	if err != nil {
		profile.Buffers.Put(buf)
		return Outcome{}, 0, fmt.Errorf("render %s: %w", ev.ID, err)
	}
	*buf = body
	h := make(http.Header, 6+len(ep.Headers))
	for name, value := range ep.Headers { // canonical and never reserved (endpoint.CheckHeaders)
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
	start := time.Now() // the wall clock, not s.now: a duration, not a time
	resp, err := s.cfg.Client.PostReleasing(ctx, ep.URL, h, body, func() { profile.Buffers.Put(buf) })
	took := time.Since(start)
	s.cfg.Metrics.Attempt(p.Name(), took)
	return Classify(resp, err, s.now(), s.cfg.MaxRetryAfter, p.GivesUpOn), took, nil
}
