package delivery

import (
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/metrics"
)

// observe logs one attempt's outcome (one INFO line: ids, status, duration
// and attempt; never a secret or a body) and counts it in the metrics.
func (s *Service) observe(d *endpoint.Delivery, ev *event.Event, profileName string, a attempted, o metrics.Outcome) {
	who := metrics.Owner{OwnerID: d.OwnerID, EndpointID: d.EndpointID}
	s.cfg.Metrics.Outcome(profileName, who, o)
	if o == metrics.Delivered && ev != nil {
		s.cfg.Metrics.Latency(profileName, s.now().Sub(ev.CreatedAt))
	}
	if o == metrics.Delivered {
		s.log.Info("delivery attempt", "outcome", o.String(), "event", d.EventID, "endpoint", d.EndpointID, "delivery", d.ID,
			"status", a.out.Status, "duration", a.took, "attempt", a.attempt)
		return
	}
	s.log.Info("delivery attempt", "outcome", o.String(), "event", d.EventID, "endpoint", d.EndpointID, "delivery", d.ID,
		"status", a.out.Status, "duration", a.took, "attempt", a.attempt, "error", a.out.Error)
}
