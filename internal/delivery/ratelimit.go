package delivery

import (
	"context"
	"fmt"
	"time"

	"github.com/hookd/hookd/internal/endpoint"
)

// rateInterval is the spacing between two sends to an endpoint limited to
// perSecond, in microseconds: 1 s / perSecond plus 5 %. Sends are spaced
// evenly (no bursts); the 5 % keeps a receiver's count within the limit
// although each request takes a different time from its grant to its
// arrival (up to 50 ms a second), which exact spacing would not: at 2 %, a
// busy machine's 3 processes once put 11 arrivals in 998 ms at 10/s.
func rateInterval(perSecond int) int64 {
	return (1_050_000 + int64(perSecond) - 1) / int64(perSecond)
}

// rateBatch bounds a drain's batch to a rate-limited endpoint to about a
// second of its sends, so the batch is sent well within its claims' and
// the lease's LeaseFor even when several slot holders share the rate.
func rateBatch(ep *endpoint.Endpoint, batch int) int {
	if ep.RateLimit <= 0 {
		return batch
	}
	return max(1, min(batch, ep.RateLimit))
}

// rateHeld is a send the endpoint's rate limit holds back for longer than
// a sender waits in place (RateAhead): a job snoozes that long, spending
// no attempt; a drain leaves the delivery to its job.
type rateHeld struct{ wait time.Duration }

func (e *rateHeld) Error() string {
	return fmt.Sprintf("held back by the endpoint's rate limit for %v", e.wait)
}

// pace takes the endpoint's right to send now under its rate limit, shared
// by every process (one statement in the database, like the lease),
// waiting in place while the next free time is at most RateAhead out. It
// is called right before the request is posted, with everything else
// ready, so sends leave about as evenly spaced as they were granted. An
// endpoint without a limit costs nothing here.
func (s *Service) pace(ctx context.Context, ep *endpoint.Endpoint) error {
	if ep.RateLimit <= 0 {
		return nil
	}
	iv := rateInterval(ep.RateLimit)
	giveUp := s.now().Add(s.cfg.RateAhead)
	for {
		now := s.now()
		ok, w, err := s.db.Q().TakeRate(ctx, ep.ID, now.UnixMicro(), iv)
		if err != nil {
			return err
		}
		if ok {
			// The grant is stamped with the time the take began; if it
			// came back late, restamp it with now, so the next send keeps
			// a whole interval from this one.
			if late := s.now(); late.Sub(now) <= rateLate {
				return nil
			} else if ok, err := s.db.Q().RestampRate(ctx, ep.ID, now.UnixMicro()+iv, late.UnixMicro()+iv); err != nil || ok {
				return err
			}
			continue
		}
		wait := time.Duration(w) * time.Microsecond
		if now.Add(wait).After(giveUp) {
			return &rateHeld{wait: wait}
		}
		if err := sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// rateLate is how long a take may take before its grant is restamped.
const rateLate = 2 * time.Millisecond

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
