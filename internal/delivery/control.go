package delivery

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/store"
)

// The receiver's delivery controls: an answer's webhook-delivery header
// (the Standard Webhooks proposal, spec PR #291). Any other value is
// ignored, and logged once per value and process.
const (
	// ControlHeader is the header a receiver answers with.
	ControlHeader = "webhook-delivery"
	// ControlDisable disables the endpoint ("the receiver asked to stop")
	// and sends hookd.endpoint.disabled; the delivery it answered ends
	// too, delivered if the answer was 2xx.
	ControlDisable = "disable"
	// ControlAbort ends the delivery it answered at once: a failure is
	// discarded instead of retried (a 2xx is delivered anyway).
	ControlAbort = "abort-message"
)

// ReceiverAskedToStop is the disabled reason of an endpoint whose receiver
// answered webhook-delivery: disable.
const ReceiverAskedToStop = "the receiver asked to stop (webhook-delivery: disable)"

// controlled applies the receiver's webhook-delivery control to out, the
// answer's outcome. A control hookd does not know is carried as it came
// (Service.noteControl logs it once) and changes nothing.
func controlled(out Outcome, h http.Header) Outcome {
	v := strings.ToLower(strings.TrimSpace(h.Get(ControlHeader)))
	if v == "" {
		return out
	}
	if len(v) > 64 {
		v = v[:64]
	}
	out.Control = v
	note := ""
	switch v {
	case ControlDisable:
		note = "the receiver asked to stop (webhook-delivery: disable)"
	case ControlAbort:
		note = "the receiver asked to end this message (webhook-delivery: abort-message)"
	default:
		return out
	}
	if out.Verdict == Complete {
		out.Error = note // recorded beside the success, in the log
		return out
	}
	out.Verdict, out.Wait = Discard, 0
	if out.Status != 0 {
		out.Error = fmt.Sprintf("HTTP %d: %s", out.Status, note)
	} else {
		out.Error = note
	}
	return out
}

// knownControl says whether out carries a control hookd acts on.
func knownControl(out Outcome) bool {
	return out.Control == ControlDisable || out.Control == ControlAbort
}

// controlNotes remembers the unknown controls a process has logged, so
// each is logged once (at most maxControlNotes of them).
type controlNotes struct {
	mu   sync.Mutex
	seen map[string]bool
}

const maxControlNotes = 100

// noteControl counts a receiver's control and logs it: a known one on
// every answer, an unknown one once per value.
func (s *Service) noteControl(ep *endpoint.Endpoint, d *endpoint.Delivery, out Outcome) {
	if out.Control == "" {
		return
	}
	if knownControl(out) {
		s.cfg.Metrics.ReceiverControl(out.Control)
		s.log.Info("receiver control", "control", out.Control, "endpoint", ep.ID, "owner", ep.OwnerID, "delivery", d.ID, "status", out.Status)
		return
	}
	s.cfg.Metrics.ReceiverControl("ignored")
	n := &s.controlNotes
	n.mu.Lock()
	first := !n.seen[out.Control] && len(n.seen) < maxControlNotes
	if first {
		if n.seen == nil {
			n.seen = map[string]bool{}
		}
		n.seen[out.Control] = true
	}
	n.mu.Unlock()
	if first {
		s.log.Warn("ignoring an unknown webhook-delivery control (logged once per value); hookd knows disable and abort-message", "value", out.Control, "endpoint", ep.ID, "delivery", d.ID)
	}
}

// disableAsked disables ep because its receiver asked to (in the settling
// transaction), and returns the transition to notify; none if it was
// disabled already.
func disableAsked(ctx context.Context, q *store.Q, ep *endpoint.Endpoint, out Outcome, now time.Time) ([]transition, error) {
	disabled, err := q.DisableEndpoint(ctx, ep.ID, ReceiverAskedToStop, now.UnixMicro())
	if err != nil || !disabled {
		return nil, err
	}
	since := now
	if ep.FailingSince != nil {
		since = *ep.FailingSince
	}
	return []transition{{kind: Disabled, since: since, lastStatus: out.Status, lastError: out.Error, reason: ReceiverAskedToStop}}, nil
}
