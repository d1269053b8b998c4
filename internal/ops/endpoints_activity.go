package ops

import (
	"context"
	"net/http"
	"time"

	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/owner"
)

// ActivityWindow is how far back the endpoint list and chart look.
const ActivityWindow = 24 * time.Hour

// EndpointActivity is one endpoint's last 24 h: deliveries created, those
// failed or being retried, and its latest attempted delivery.
type EndpointActivity struct {
	EndpointID string             `json:"endpoint_id"`
	Deliveries int                `json:"deliveries_24h"`
	Failures   int                `json:"failures_24h"`
	Last       *endpoint.Delivery `json:"last,omitempty"`
}

// ActivityList is every endpoint's activity since Since.
type ActivityList struct {
	Since time.Time           `json:"since"`
	Data  []*EndpointActivity `json:"data"`
}

// HourOutcomes is one hour of an endpoint's deliveries by state.
type HourOutcomes struct {
	Start     time.Time `json:"start"`
	Delivered int       `json:"delivered"`
	Failed    int       `json:"failed"`
	Pending   int       `json:"pending"`
}

// EndpointStats is one endpoint's deliveries by hour over the last 24 hours.
type EndpointStats struct {
	EndpointID string          `json:"endpoint_id"`
	Hours      []*HourOutcomes `json:"hours"`
}

func (s *Service) activityOps() []*Op {
	const base = "/api/admin/webhooks"
	return []*Op{
		define(Op{Name: "webhooks.activity", Summary: "Every endpoint's last 24 h: deliveries, failures (failed or retrying) and its latest attempted delivery.", Method: http.MethodGet, Path: base + "/activity", Status: 200, Role: owner.Admin, OwnerScoped: true}, s.activity),
		define(Op{Name: "webhooks.stats", Summary: "One endpoint's deliveries of the last 24 h by hour and outcome (delivered, failed, pending).", Method: http.MethodGet, Path: base + "/{id}/stats", Status: 200, Role: owner.Admin, OwnerScoped: true}, s.stats),
	}
}

func (s *Service) activity(ctx context.Context, p Principal, _ *Empty) (*ActivityList, error) {
	since := s.now().Add(-ActivityWindow)
	act, err := s.DB.Q().EndpointActivity(ctx, p.OwnerID, since)
	if err != nil {
		return nil, err
	}
	out := &ActivityList{Since: since, Data: make([]*EndpointActivity, len(act))}
	for i, a := range act {
		out.Data[i] = &EndpointActivity{EndpointID: a.EndpointID, Deliveries: a.Deliveries, Failures: a.Failures, Last: a.Last}
	}
	return out, nil
}

func (s *Service) stats(ctx context.Context, p Principal, in *EndpointRef) (*EndpointStats, error) {
	q := s.DB.Q()
	if _, err := q.GetEndpoint(ctx, p.OwnerID, in.ID); err != nil {
		return nil, err
	}
	const hours = 24
	// Whole hours, the current one last.
	start := s.now().Truncate(time.Hour).Add(-(hours - 1) * time.Hour)
	counts, err := q.HourlyOutcomes(ctx, in.ID, start, hours)
	if err != nil {
		return nil, err
	}
	out := &EndpointStats{EndpointID: in.ID, Hours: make([]*HourOutcomes, hours)}
	for i, c := range counts {
		out.Hours[i] = &HourOutcomes{Start: start.Add(time.Duration(i) * time.Hour), Delivered: c.Delivered, Failed: c.Failed, Pending: c.Pending}
	}
	return out, nil
}
