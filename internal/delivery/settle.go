package delivery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/metrics"
	"github.com/hookd/hookd/internal/profile"
	"github.com/hookd/hookd/internal/store"
)

// attempted is one attempt that reached (or tried to reach) the receiver: its
// outcome, how long it took, and which of the job's attempts it spent.
type attempted struct {
	out                  Outcome
	took                 time.Duration
	attempt, maxAttempts int
}

// settled is a recorded attempt: what its deliver job tells River.
type settled struct {
	// forRiver is the job's return: nil (delivered), a JobSnooze
	// (Retry-After), a JobCancel (discarded) or the attempt's error (River
	// retries it on the profile's schedule, or gives up). It reports what
	// the receiver did, not a failure of hookd's: settle returns that
	// apart.
	forRiver error
}

// settle records an attempt's outcome and moves the endpoint's state, in one
// transaction, and returns what River should do with the job; its error is
// a failure to record (the attempt is then not recorded, and the job's
// retry sends it again). a.attempt is the River attempt this send spent
// (1-based), a.maxAttempts the budget. A transition of the endpoint's
// health (failing, disabled, recovered) is logged and published as a
// failure notification in the same transaction.
func (s *Service) settle(ctx context.Context, ep *endpoint.Endpoint, d *endpoint.Delivery, ev *event.Event, p profile.Profile, a attempted, jobID int64) (settled, error) {
	out := a.out
	now := s.now().UTC()
	rec, res, outcome := recordOf(d, p, a, jobID, now)
	// Once the receiver answered, record it even if the job is being
	// cancelled (a hard stop): otherwise a delivered event would be sent again.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	s.noteControl(ep, d, out)
	if out.Verdict == Complete && ep.FailingSince == nil && out.Control != ControlDisable {
		// The common case: one write, nothing else to move.
		if err := s.db.Relaxed().RecordAttempt(ctx, rec); err != nil {
			return settled{}, fmt.Errorf("settle delivery %s: %w", d.ID, err)
		}
		s.observe(d, ev, p.Name(), a, outcome)
		s.moveLane(ctx, ep, a.took, now)
		return settled{}, nil
	}
	var moved []transition
	err := s.db.InTx(ctx, store.TxOptions{Relaxed: true}, func(q *store.Q) error {
		moved = moved[:0] // a retried transaction starts over
		if err := q.RecordAttempt(ctx, rec); err != nil {
			return err
		}
		moveHealth := s.moveHealth
		if out.Control == ControlDisable {
			moveHealth = disableAsked
		}
		t, err := moveHealth(ctx, q, ep, out, now)
		if err != nil || len(t) == 0 {
			return err
		}
		moved = t
		return s.notify(ctx, q, ep, t, now)
	})
	if err != nil {
		return settled{}, fmt.Errorf("settle delivery %s: %w", d.ID, err)
	}
	s.observe(d, ev, p.Name(), a, outcome)
	for _, t := range moved {
		s.logTransition(ep, t)
	}
	if out.Verdict != Snooze { // a Retry-After says nothing of how long the receiver takes
		s.moveLane(ctx, ep, a.took, now)
	}
	return res, nil
}

// recordOf is what settle writes for an attempt of d (its job jobID) at
// now, by its verdict: the attempt's row, what River does with the job,
// and the outcome counted.
func recordOf(d *endpoint.Delivery, p profile.Profile, a attempted, jobID int64, now time.Time) (rec store.Attempt, res settled, outcome metrics.Outcome) {
	out := a.out
	rec = store.Attempt{DeliveryID: d.ID, EventID: d.EventID, Sent: true, Status: out.Status, Error: out.Error, State: endpoint.Pending, JobID: jobID, Now: now.UnixMicro()}
	outcome = metrics.Delivered
	switch out.Verdict {
	case Complete:
		rec.State = endpoint.Delivered
	case Snooze:
		rec.Sent = false // Retry-After: no attempt spent
		next := now.Add(out.Wait).UnixMicro()
		rec.NextAttemptAt = &next
		res.forRiver = river.JobSnooze(out.Wait)
		outcome = metrics.Snoozed
	case Retry:
		if a.attempt >= a.maxAttempts {
			rec.State = endpoint.Failed
			rec.Error += fmt.Sprintf(" (attempts exhausted: %d)", a.attempt)
			outcome = metrics.Failed
		} else {
			next := now.Add(max(p.Retry().After(a.attempt), out.Wait)).UnixMicro()
			rec.NextAttemptAt = &next
			outcome = metrics.Retry
		}
		res.forRiver = errors.New(out.Error)
	case Discard:
		rec.State = endpoint.Failed
		res.forRiver = river.JobCancel(errors.New(out.Error))
		outcome = metrics.Discarded
	}
	return rec, res, outcome
}

// moveHealth moves the endpoint's health after an attempt (inside the
// settling transaction) and returns the transitions that happened: a
// success clears failing_since (recovered); a failure sets it if unset
// (failing) and disables the endpoint once it has failed for DisableAfter.
func (s *Service) moveHealth(ctx context.Context, q *store.Q, ep *endpoint.Endpoint, out Outcome, now time.Time) ([]transition, error) {
	if out.Verdict == Complete {
		if ep.FailingSince == nil { // only a failing endpoint has anything to clear
			return nil, nil
		}
		cleared, err := q.MarkEndpointHealthy(ctx, ep.ID)
		if err != nil || !cleared {
			return nil, err
		}
		since := *ep.FailingSince
		ep.FailingSince = nil
		return []transition{{kind: Recovered, since: since}}, nil
	}
	reason := fmt.Sprintf("disabled after %s of continuous failure; last: %s", s.cfg.Rules.DisableAfter, out.Error)
	since, disabled, err := q.MarkEndpointFailing(ctx, ep.ID, now, s.cfg.Rules, reason)
	if apperr.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ts []transition
	if since == now.UnixMicro() { // this attempt set it: the endpoint starts failing
		ts = append(ts, transition{kind: Failing, since: time.UnixMicro(since).UTC(), lastStatus: out.Status, lastError: out.Error})
	}
	if disabled {
		ts = append(ts, transition{kind: Disabled, since: time.UnixMicro(since).UTC(), lastStatus: out.Status, lastError: out.Error, reason: reason})
	}
	return ts, nil
}

// discard marks a delivery failed with reason, without sending it, and
// cancels its job.
func (s *Service) discard(ctx context.Context, d *endpoint.Delivery, profileName string, jobID int64, reason string) error {
	now := s.now().UnixMicro()
	err := s.db.Q().RecordAttempt(ctx, store.Attempt{DeliveryID: d.ID, EventID: d.EventID, Error: reason, State: endpoint.Failed, JobID: jobID, Now: now})
	if err != nil {
		return err
	}
	s.cfg.Metrics.Outcome(profileName, metrics.Owner{OwnerID: d.OwnerID, EndpointID: d.EndpointID}, metrics.Discarded)
	s.log.Info("delivery discarded unsent", "event", d.EventID, "endpoint", d.EndpointID, "delivery", d.ID, "reason", reason)
	return river.JobCancel(errors.New(reason))
}
