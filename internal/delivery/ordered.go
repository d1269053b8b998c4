package delivery

import (
	"context"
	"time"

	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/store"
)

// Ordered endpoints get their deliveries in publish order (event id
// order), one at a time: the lease gives one in flight, and only the
// head (the pending delivery of the oldest event) may be sent. A failing
// head holds back the rest until it succeeds or is discarded; either way
// its job then drains the followers, in order. Nothing here runs for an
// endpoint without `ordered`.

// orderedWait is, for the job of d holding an ordered endpoint's lease, 0
// if d may be sent now, else how long to snooze (no attempt spent): until
// the head's next attempt, or BusySnooze while an older event's fanout is
// still to come or the head's own job is due (it is woken: it may have
// been deferred behind this one).
func (s *Service) orderedWait(ctx context.Context, d *endpoint.Delivery, now time.Time) (time.Duration, error) {
	q := s.db.Q()
	if ahead, err := s.fanoutAhead(ctx, d.OwnerID, d.EventID); err != nil || ahead {
		return s.cfg.BusySnooze, err
	}
	head, err := q.OrderedHead(ctx, d.EndpointID)
	if err != nil || head == nil || head.ID == d.ID {
		return 0, err
	}
	if head.NextAttemptAt != nil && head.NextAttemptAt.After(now) {
		return min(head.NextAttemptAt.Sub(now), s.cfg.MaxRetryAfter), nil
	}
	if err := s.db.WakeJob(context.WithoutCancel(ctx), head.JobID); err != nil {
		s.log.Warn("could not wake an ordered endpoint's head; it runs when scheduled", "delivery", head.ID, "error", err)
	}
	return s.cfg.BusySnooze, nil
}

// orderedBatch is the drain's read for an ordered endpoint: its pending
// deliveries in publish order past the event id after, cut at the first
// one that may not go now (a retry or a cooldown not yet due, or one
// behind an event still awaiting its fanout). blocked: it was cut, and
// the drain stops after sending what is before the cut.
func (s *Service) orderedBatch(ctx context.Context, ep *endpoint.Endpoint, after string, limit int, now time.Time) (batch []*store.AttemptInput, blocked bool, err error) {
	batch, err = s.db.Q().OrderedAttempts(ctx, ep.ID, after, limit)
	if err != nil || len(batch) == 0 {
		return nil, false, err
	}
	if ahead, err := s.fanoutAhead(ctx, ep.OwnerID, batch[0].Delivery.EventID); err != nil || ahead {
		return nil, true, err
	}
	oldest, err := s.db.Q().OldestAwaitingFanout(ctx, ep.OwnerID)
	if err != nil {
		return nil, false, err
	}
	for i, a := range batch {
		d := a.Delivery
		due := d.NextAttemptAt == nil || !d.NextAttemptAt.After(now)
		if d.Attempts != 0 || !due || oldest != "" && oldest < d.EventID {
			return batch[:i], true, nil
		}
	}
	return batch, false, nil
}

// fanoutAhead reports whether an event of the owner older than eventID
// still awaits its fanout, waiting in place a little for it first: a
// fanout takes milliseconds, and a snooze would cost BusySnooze.
func (s *Service) fanoutAhead(ctx context.Context, ownerID, eventID string) (bool, error) {
	for try := 0; ; try++ {
		oldest, err := s.db.Q().OldestAwaitingFanout(ctx, ownerID)
		if err != nil || oldest == "" || oldest >= eventID {
			return false, err
		}
		if try == 25 {
			return true, nil
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return true, err
		}
	}
}

// orderedCursor is where a drain's next read starts past a: the event id
// for an ordered endpoint (read in event order), else the delivery id.
func orderedCursor(ep *endpoint.Endpoint, a *store.AttemptInput) string {
	if ep.Ordered {
		return a.Delivery.EventID
	}
	return a.Delivery.ID
}
