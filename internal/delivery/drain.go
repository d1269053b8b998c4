package delivery

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/metrics"
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
func (s *Service) drain(ctx context.Context, ep *endpoint.Endpoint, slot int, holder int64, exclusive bool, leased time.Time, most int) (sent int, end drainEnd) {
	deadline, hasDeadline := ctx.Deadline()
	budget := s.cfg.HTTPTimeout + 2*time.Second
	canSend := func() bool { return ctx.Err() == nil && (!hasDeadline || time.Until(deadline) >= budget) }
	q, rq := s.db.Q(), s.db.Relaxed()
	rec := s.rec.forDrain()
	defer func() {
		if !rec.wait() {
			end = drainStopped // successes not recorded: do not read them again
		}
	}()
	// Each read starts past the last one: a delivery committed meanwhile
	// with a lower id (a fanout that began earlier) is skipped here, and
	// found by the look after the release (drainThenHandOver).
	after := ""
	for sent < most {
		if !canSend() {
			return sent, drainBound
		}
		now := s.now()
		if now.Sub(leased) > s.cfg.LeaseFor/4 { // the drain may outlast LeaseFor: keep the slot
			if _, ok, err := q.TakeLease(ctx, ep.ID, holder, now.UnixMicro(), now.Add(s.cfg.LeaseFor).UnixMicro()); err != nil || !ok {
				return sent, drainStopped
			}
			leased = now
		}
		limit := min(rateBatch(ep, s.cfg.DrainBatch), most-sent)
		var (
			batch   []*store.AttemptInput
			blocked bool // ordered: the batch was cut before a delivery that may not go yet
			err     error
		)
		if exclusive {
			// Nobody sends beside the holder of an exclusive lease: read the
			// batch without claiming it (one query, no write). The previous
			// batch's successes must be recorded first, or they would be
			// read again.
			if !rec.wait() {
				return sent, drainStopped
			}
			if ep.Ordered {
				batch, blocked, err = s.orderedBatch(ctx, ep, after, limit, now)
			} else {
				batch, err = q.FreshAttempts(ctx, ep.ID, after, limit, now.UnixMicro())
			}
		} else {
			// Other slots' holders drain too: claim a disjoint batch first.
			var claimed []string
			if claimed, err = rq.ClaimFresh(ctx, ep.ID, after, limit, now.UnixMicro(), now.Add(s.cfg.LeaseFor).UnixMicro()); err == nil && len(claimed) > 0 {
				if batch, err = q.LoadAttempts(ctx, claimed); err != nil {
					_ = rq.ReleaseClaims(context.WithoutCancel(ctx), claimed)
				}
			}
		}
		if err != nil {
			return sent, drainStopped
		}
		if len(batch) == 0 {
			if blocked {
				return sent, drainStopped // the head's job goes next
			}
			return sent, drainIdle
		}
		for _, a := range batch {
			after = max(after, orderedCursor(ep, a))
		}
		before := sent
		var unsent []string
		stopped, bound := false, false
		traces := s.drainTraces(ctx, q, batch)
		for _, a := range batch {
			d := a.Delivery
			p, err := s.cfg.Profiles.Get(a.Owner.Profile)
			if stopped || !canSend() || err != nil || d.State != endpoint.Pending || d.Attempts != 0 || !a.Endpoint.Enabled || a.Event == nil {
				bound = bound || !canSend()
				stopped = stopped || bound || ep.Ordered // ordered: never past one left behind
				unsent = append(unsent, d.ID)            // left to the delivery's own job
				continue
			}
			dctx, span := s.startSpan(ctx, "hookd.deliver", traces[d.JobID], attribute.String("hookd.endpoint", d.EndpointID),
				attribute.String("hookd.event", d.EventID), attribute.String("hookd.delivery", d.ID), attribute.Bool("hookd.drained", true))
			out, took, err := s.attempt(dctx, a.Endpoint, d, a.Event, a.Owner, p, s.now())
			span.SetAttributes(attribute.Int("http.response.status_code", out.Status), attribute.String("hookd.verdict", out.Verdict.String()))
			endSpan(span, err)
			if err != nil {
				// Held back by the rate limit (other senders share it):
				// the drain's bound, the next job is woken.
				bound = bound || errors.As(err, new(*rateHeld))
				stopped = true
				unsent = append(unsent, d.ID)
				continue
			}
			sent++
			one := attempted{out, took, 1, p.Retry().MaxAttempts}
			if out.Verdict == Complete {
				rec.add(store.Delivered{DeliveryID: d.ID, Status: out.Status, SentBy: holder}, d.JobID)
				s.observe(d, a.Event, p.Name(), one, metrics.Delivered)
				continue
			}
			// The endpoint stopped answering 2xx: settle this one now (it
			// moves the endpoint's health) and leave the rest to their jobs.
			// On an ordered endpoint a discard lets the next go: go on.
			if _, err := s.settle(ctx, a.Endpoint, d, a.Event, p, one, 0); err != nil {
				s.log.Warn("recording a drained delivery's failure failed; its own job sends it again", "delivery", d.ID, "error", err)
			}
			stopped = !ep.Ordered || out.Verdict != Discard
		}
		if !exclusive && len(unsent) > 0 { // an exclusive drain claims nothing
			_ = rq.ReleaseClaims(context.WithoutCancel(ctx), unsent)
		}
		switch {
		case bound:
			return sent, drainBound
		case stopped || blocked || sent == before:
			// A failure; or nothing in the batch could be sent (disabled,
			// pruned): an exclusive drain, which claims nothing, would
			// read it again.
			return sent, drainStopped
		}
		// Read again even after a short batch: deliveries that arrived
		// while it was sent would otherwise wait for their own jobs, which
		// may have met the lease held and snoozed.
	}
	return sent, drainBound
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
		sent, end := s.drain(ctx, ep, slot, holder, exclusive, leased, s.cfg.DrainMax-total)
		if h := s.hook().BeforeRelease; h != nil {
			h(ep.ID)
		}
		s.releaseLease(ctx, ep.ID, slot, holder)
		total += sent
		if end == drainStopped || end == drainIdle && sent == 0 && retook {
			return
		}
		now := s.now()
		if end == drainIdle {
			if due, err := s.db.Q().FreshDue(ctx, ep.ID, now.UnixMicro()); err != nil || !due {
				return
			}
		}
		if end == drainBound || total >= s.cfg.DrainMax || ctx.Err() != nil {
			// This job may drain no more, and the next deliveries' jobs
			// may be deferred (deferBusy): wake the next one now.
			s.wakeNext(ctx, ep.ID, true)
			return
		}
		var ok bool
		var err error
		if slot, ok, err = s.db.Q().TakeLease(ctx, ep.ID, holder, now.UnixMicro(), now.Add(s.cfg.LeaseFor).UnixMicro()); err != nil || !ok {
			return
		}
		leased = now
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
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.db.WakeNextFresh(ctx, endpointID, s.now().UnixMicro(), notify); err != nil {
		s.log.Warn("could not wake the next delivery's job; it runs when scheduled", "endpoint", endpointID, "error", err)
	}
}
