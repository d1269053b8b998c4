package delivery

// Fast path of deliver (deliver.go): the lease drain. The plain path is
// one webhook.deliver job per delivery, each fetched by River, leased,
// sent and settled (settle.go) on its own; here the job holding an
// endpoint's lease goes on sending the endpoint's next fresh deliveries
// and hands the lease over (deliver_recorder.go records their successes).

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/metrics"
	"github.com/hookd/hookd/internal/profile"
	"github.com/hookd/hookd/internal/store"
)

// drain sends the endpoint's next fresh deliveries (pending, never
// attempted, due) while this job holds a lease slot, so a hot endpoint is
// not paced by waiters' 2 s busy snoozes: the slot passes from one delivery
// to the next at once. It reads DrainBatch of them at a time in one query
// (claiming them first when other slots' holders drain too: claims are
// disjoint) and sends them in order. Successes are recorded by the
// process's recorder in the background, many per statement, in relaxed
// transactions that also delete their River jobs unrun (this job sent
// them, and becomes their job_id, the task the log links to): a drained delivery
// costs a fraction of a statement instead of a River fetch, a load and a
// completion. A failure is settled at once as the delivery's first attempt
// and stops the drain; its River job, when it runs, spends that attempt
// without sending again. The drain stops when a read finds nothing fresh due,
// after DrainMax, or while a whole attempt still fits in the job's
// timeout. A process killed mid-drain sends again only the successes not
// yet recorded: those of the flush in progress and the sends since.
func (s *Service) drain(ctx context.Context, ep *endpoint.Endpoint, holder int64, exclusive bool, leased time.Time, most int) (sent int, end drainEnd) {
	r := drainRun{s: s, ep: ep, holder: holder, exclusive: exclusive, leased: leased,
		rec: s.rec.forDrain(), budget: s.cfg.HTTPTimeout + 2*time.Second}
	r.deadline, r.hasDeadline = ctx.Deadline()
	defer func() {
		if !r.rec.wait() {
			end = drainStopped // successes not recorded: do not read them again
		}
	}()
	for sent < most {
		n, why, more := r.round(ctx, most-sent)
		sent += n
		if !more {
			return sent, why
		}
		// Read again even after a short batch: deliveries that arrived
		// while it was sent would otherwise wait for their own jobs, which
		// may have met the lease held and snoozed.
	}
	return sent, drainBound
}

// drainRun is one drain's state: the endpoint and lease it drains, where
// its reads have got to, and its share of the recorder.
type drainRun struct {
	s         *Service
	ep        *endpoint.Endpoint
	holder    int64
	exclusive bool      // the lease's only slot: no claims
	leased    time.Time // when the slot was last taken or renewed
	rec       *drainRecords
	// after is where the next read starts, past the last one: a delivery
	// committed meanwhile with a lower id (a fanout that began earlier) is
	// skipped here, and found by the look after the release
	// (drainThenHandOver).
	after string
	// A send is begun only while a whole attempt (budget) still fits
	// before the job's deadline.
	deadline    time.Time
	hasDeadline bool
	budget      time.Duration
}

// errUnrecorded stops a drain whose earlier successes could not be
// recorded (the recorder logged why).
var errUnrecorded = errors.New("drained deliveries not recorded")

func (r *drainRun) canSend(ctx context.Context) bool {
	return ctx.Err() == nil && (!r.hasDeadline || time.Until(r.deadline) >= r.budget)
}

// round reads one batch of at most most fresh deliveries and sends it. more
// says whether the drain reads again; if not, end says why it stops.
func (r *drainRun) round(ctx context.Context, most int) (sent int, end drainEnd, more bool) {
	if !r.canSend(ctx) {
		return 0, drainBound, false
	}
	now := r.s.now()
	if !r.keepLease(ctx, now) {
		return 0, drainStopped, false
	}
	batch, blocked, err := r.read(ctx, min(rateBatch(r.ep, r.s.cfg.DrainBatch), most), now)
	if err != nil {
		if !errors.Is(err, errUnrecorded) {
			r.s.warnDrain(ctx, r.ep.ID, "drain stopped: reading the next deliveries failed; their own jobs send them", err)
		}
		return 0, drainStopped, false
	}
	if len(batch) == 0 {
		if blocked {
			return 0, drainStopped, false // the head's job goes next
		}
		return 0, drainIdle, false
	}
	for _, a := range batch {
		r.after = max(r.after, orderedCursor(r.ep, a))
	}
	sent, stopped, bound := r.send(ctx, batch)
	switch {
	case bound:
		return sent, drainBound, false
	case stopped || blocked || sent == 0:
		// A failure; or nothing in the batch could be sent (disabled,
		// pruned): an exclusive drain, which claims nothing, would read
		// it again.
		return sent, drainStopped, false
	}
	return sent, 0, true
}

// keepLease renews the slot once a quarter of LeaseFor has passed since it
// was taken (the drain may outlast LeaseFor); false: the slot is lost, and
// the drain stops.
func (r *drainRun) keepLease(ctx context.Context, now time.Time) bool {
	if now.Sub(r.leased) <= r.s.cfg.LeaseFor/4 {
		return true
	}
	_, ok, err := r.s.db.Q().TakeLease(ctx, r.ep.ID, r.holder, now.UnixMicro(), now.Add(r.s.cfg.LeaseFor).UnixMicro())
	if err != nil {
		r.s.warnDrain(ctx, r.ep.ID, "drain stopped: renewing the lease failed; the deliveries left are sent by their own jobs", err)
		return false
	}
	if ok {
		r.leased = now
	}
	return ok
}

// read reads the next batch of fresh deliveries due, up to limit. blocked:
// on an ordered endpoint the batch was cut before a delivery that may not
// go yet.
func (r *drainRun) read(ctx context.Context, limit int, now time.Time) (batch []*store.AttemptInput, blocked bool, err error) {
	if !r.exclusive {
		batch, err = r.claim(ctx, limit, now)
		return batch, false, err
	}
	// Nobody sends beside the holder of an exclusive lease: read the batch
	// without claiming it (one query, no write). The previous batch's
	// successes must be recorded first, or they would be read again.
	if !r.rec.wait() {
		return nil, false, errUnrecorded
	}
	if r.ep.Ordered {
		return r.s.orderedBatch(ctx, r.ep, r.after, limit, now)
	}
	batch, err = r.s.db.Q().FreshAttempts(ctx, r.ep.ID, r.after, limit, now.UnixMicro())
	return batch, false, err
}

// claim claims a batch (other slots' holders drain too: claims are
// disjoint) and loads it.
func (r *drainRun) claim(ctx context.Context, limit int, now time.Time) ([]*store.AttemptInput, error) {
	claimed, err := r.s.db.Relaxed().ClaimFresh(ctx, r.ep.ID, r.after, limit, now.UnixMicro(), now.Add(r.s.cfg.LeaseFor).UnixMicro())
	if err != nil || len(claimed) == 0 {
		return nil, err
	}
	batch, err := r.s.db.Q().LoadAttempts(ctx, claimed)
	if err != nil {
		r.s.releaseClaims(ctx, claimed)
	}
	return batch, err
}

// send sends a batch in order, until one fails or the drain's bound
// comes; what it does not send is left to the deliveries' own jobs (and
// its claims released). stopped: a send failed, or an ordered endpoint
// left one behind; bound: the deadline or the rate limit.
func (r *drainRun) send(ctx context.Context, batch []*store.AttemptInput) (sent int, stopped, bound bool) {
	var unsent []string
	traces := r.s.drainTraces(ctx, r.s.db.Q(), batch)
	for _, a := range batch {
		d := a.Delivery
		p, err := r.s.cfg.Profiles.Get(a.Owner.Profile)
		if stopped || !r.canSend(ctx) || err != nil || !drainable(a) {
			bound = bound || !r.canSend(ctx)
			stopped = stopped || bound || r.ep.Ordered // ordered: never past one left behind
			unsent = append(unsent, d.ID)              // left to the delivery's own job
			continue
		}
		wasSent, stop, held := r.sendOne(ctx, a, p, traces[d.JobID])
		if wasSent {
			sent++
		} else {
			unsent = append(unsent, d.ID)
		}
		stopped, bound = stop, bound || held
	}
	if !r.exclusive && len(unsent) > 0 { // an exclusive drain claims nothing
		r.s.releaseClaims(ctx, unsent)
	}
	return sent, stopped, bound
}

// drainable says whether a's delivery is still one a drain sends: pending,
// never attempted nor held back by a Retry-After (its own job sends it,
// and counts the snooze), to an enabled endpoint, its event not pruned.
func drainable(a *store.AttemptInput) bool {
	d := a.Delivery
	return d.State == endpoint.Pending && d.Attempts == 0 && !snoozedFree(d) && a.Endpoint.Enabled && a.Event != nil
}

// sendOne sends one drained delivery and records it: a success through
// the recorder, a failure settled at once as the delivery's first attempt.
// sent: the receiver was reached; stop: the drain goes no further;
// held: the rate limit held it back (other senders share it: the drain's
// bound, the next job is woken).
func (r *drainRun) sendOne(ctx context.Context, a *store.AttemptInput, p profile.Profile, trace []byte) (sent, stop, held bool) {
	s, d := r.s, a.Delivery
	dctx, span := s.startSpan(ctx, "hookd.deliver", trace, attribute.String("hookd.endpoint", d.EndpointID),
		attribute.String("hookd.event", d.EventID), attribute.String("hookd.delivery", d.ID), attribute.Bool("hookd.drained", true))
	out, took, err := s.attempt(dctx, a.Endpoint, d, a.Event, a.Owner, p, s.now())
	span.SetAttributes(attribute.Int("http.response.status_code", out.Status), attribute.String("hookd.verdict", out.Verdict.String()))
	endSpan(span, err)
	if err != nil {
		return false, true, errors.As(err, new(*rateHeld))
	}
	out = out.spend(p.Retry(), 0, 1) // drainable: never snoozed before
	one := attempted{out, took, 1, p.Retry().MaxAttempts}
	if out.Verdict == Complete && out.Control == "" {
		r.rec.add(store.Delivered{DeliveryID: d.ID, EventID: d.EventID, Status: out.Status, SentBy: r.holder}, d.JobID)
		s.observe(d, a.Event, p.Name(), one, metrics.Delivered)
		// The receiver became slow: its deliveries move to the slow lane,
		// and this drain, which may be holding a healthy lane's worker,
		// leaves them there.
		return true, s.moveLane(ctx, r.ep, took, s.now()) == QueueDeliverSlow, false
	}
	// The endpoint stopped answering 2xx, or its receiver sent a control
	// (webhook-delivery): settle this one now (it moves the
	// endpoint's health) and leave the rest to their jobs. On an ordered
	// endpoint a discard lets the next go: go on. The drain's earlier
	// successes are recorded first, so the log never shows this failure
	// beside an earlier delivery still pending (an ordered endpoint's head
	// is the failing one as soon as the failure shows).
	r.rec.wait()
	if _, err := s.settle(ctx, a.Endpoint, d, a.Event, p, one, 0); err != nil {
		s.log.Warn("recording a drained delivery's failure failed; its own job sends it again", "delivery", d.ID, "error", err)
	}
	return true, !r.ep.Ordered || out.Verdict != Discard, false
}

// drainEnd is why a drain ended.
type drainEnd int

const (
	drainIdle    drainEnd = iota // a read found nothing fresh due
	drainBound                   // DrainMax or the deadline: fresh deliveries may remain
	drainStopped                 // a failure or an error: the rest is left to the deliveries' jobs
)

// drainThenHandOver drains with the slot, releases it, and then looks
// once more for a fresh delivery due. A delivery committed while this drain
// held the slot, after its last read found nothing, has a job that met the
// slot busy and snoozed (BusySnooze): without this look it would wait that
// out, with the endpoint idle. The look comes after the release, so any job
// that met the slot busy did so before it, on a delivery already committed:
// the look sees it. If one is due, the slot is taken again (unless another
// job took it, which then sends it) and the drain goes on, within the same
// deadline. It looks even when the drain sent nothing: the job's own
// delivery held the slot as long, and a delivery committed in that time
// whose job met it busy would wait out BusySnooze the same way. A drain
// that finds nothing right after a look found something stops: another
// sender took it.
func (s *Service) drainThenHandOver(ctx context.Context, ep *endpoint.Endpoint, slot int, holder int64, exclusive bool, leased time.Time) {
	for total, retook := 0, false; ; retook = true {
		sent, end := s.drain(ctx, ep, holder, exclusive, leased, s.cfg.DrainMax-total)
		s.beforeRelease(ep.ID)
		s.releaseLease(ctx, ep.ID, slot, holder)
		total += sent
		if end == drainStopped || end == drainIdle && sent == 0 && retook {
			// No drain goes on here, and a fanout that met the slot
			// held deferred its jobs behind it: wake the oldest.
			s.wakeDeferred(ctx, ep.ID)
			return
		}
		var ok bool
		if slot, leased, ok = s.drainOn(ctx, ep, holder, end, total); !ok {
			return
		}
	}
}

// drainOn decides, once a drain that ended (end) has released its slot,
// whether its holder drains on, and if so takes the slot again: after an
// idle end only if a fresh delivery is due; not once the job may drain no
// more (it wakes the next job instead); not if another job took the slot.
func (s *Service) drainOn(ctx context.Context, ep *endpoint.Endpoint, holder int64, end drainEnd, total int) (slot int, leased time.Time, ok bool) {
	now := s.now()
	if end == drainIdle {
		due, err := s.db.Q().FreshDue(ctx, ep.ID, now.UnixMicro())
		if err != nil {
			s.warnDrain(ctx, ep.ID, "the look for deliveries after a drain failed; their own jobs send them", err)
		}
		if err != nil || !due {
			return 0, now, false
		}
	}
	if end == drainBound || total >= s.cfg.DrainMax || ctx.Err() != nil {
		// This job may drain no more, and the next deliveries' jobs
		// may be deferred (deferBusy): wake the next one now.
		s.wakeNext(ctx, ep.ID, true)
		return 0, now, false
	}
	slot, ok, err := s.db.Q().TakeLease(ctx, ep.ID, holder, now.UnixMicro(), now.Add(s.cfg.LeaseFor).UnixMicro())
	if err != nil {
		s.warnDrain(ctx, ep.ID, "taking the lease again after a drain failed; the deliveries left are sent by their own jobs", err)
	}
	return slot, now, err == nil && ok
}

// warnDrain logs a failed query that ends a drain, unless ctx has ended
// (the job's deadline or a stop: nothing failed).
func (s *Service) warnDrain(ctx context.Context, endpointID, msg string, err error) {
	if ctx.Err() == nil {
		s.log.Warn(msg, "endpoint", endpointID, "error", err)
	}
}

// wakeNext makes the job of the endpoint's next fresh delivery available
// now (River's JobRetry; a running job is left alone). notify tells River
// to fetch it at once (PostgreSQL): a holder that stops hands its endpoint
// to that job, which would otherwise wait for the next poll with the
// endpoint idle. The fanout's wake after its commit does not notify: under
// a hot kwork endpoint it fires for most fanouts, the extra fetches cost
// 4–15 % of the run, and River's next fetch (the next insert's, or the
// poll) comes soon enough for what is a rare window elsewhere.
func (s *Service) wakeNext(ctx context.Context, endpointID string, notify bool) {
	s.wake(ctx, endpointID, "could not wake the next delivery's job; it runs when scheduled", func(ctx context.Context, now int64) error {
		return s.db.WakeNextFresh(ctx, endpointID, now, notify)
	})
}

// wakeDeferred makes the job of the endpoint's oldest fresh delivery whose
// job a fanout deferred and that has not run since (store.DB.WakeDeferred)
// available now, and tells River's producers. A holder that lets go
// without draining on calls it: each deferred job is woken once at most,
// so holders that send nothing cannot wake one another in turn.
func (s *Service) wakeDeferred(ctx context.Context, endpointID string) {
	s.wake(ctx, endpointID, "could not wake a deferred delivery's job; it runs when scheduled", func(ctx context.Context, now int64) error {
		return s.db.WakeDeferred(ctx, endpointID, now)
	})
}

// wake runs a wake of the endpoint's jobs, even when ctx has ended, and
// logs its failure (warn) with the endpoint.
func (s *Service) wake(ctx context.Context, endpointID, warn string, fn func(ctx context.Context, now int64) error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := fn(ctx, s.now().UnixMicro()); err != nil {
		s.log.Warn(warn, "endpoint", endpointID, "error", err)
	}
}
