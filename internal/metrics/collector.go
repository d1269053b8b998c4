package metrics

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookd/hookd/internal/store"
)

// riverStates are River's job states, each reported (0 if none) so a
// dashboard's series do not come and go.
var riverStates = []string{"available", "scheduled", "running", "retryable", "pending", "completed", "cancelled", "discarded"}

// StatsReader is all the collector reads from the database: one
// snapshot of the gauges' figures (*store.DB is one).
type StatsReader interface {
	ReadStats(ctx context.Context, now int64) (*store.Stats, error)
}

// DBCollector reads the backlog, the endpoints by state and River's queue
// depth from the database when Prometheus scrapes, within Timeout: these
// gauges cost the hot path nothing.
type DBCollector struct {
	DB      StatsReader
	Queues  []string // always reported, even when empty
	Now     func() time.Time
	Timeout time.Duration
	Log     *slog.Logger
	// Lanes are the delivery lanes (River queues) whose oldest due
	// delivery is reported, always, even when nothing is due.
	Lanes []string
	// InFlight, when set, gives this process's deliveries in flight by
	// lane (the delivery service's count; no query).
	InFlight func() map[string]int
}

var (
	descPending   = prometheus.NewDesc("hookd_deliveries_pending", "Deliveries not yet delivered or failed (due now or scheduled later).", nil, nil)
	descOldestDue = prometheus.NewDesc("hookd_oldest_due_delivery_age_seconds", "How long the oldest pending delivery that is due has been due (0: none due).", nil, nil)
	descEndpoints = prometheus.NewDesc("hookd_endpoints", "Endpoints by state: healthy, failing (not answering 2xx, not yet disabled) or disabled.", []string{"state"}, nil)
	descRiverJobs = prometheus.NewDesc("hookd_river_jobs", "River jobs by queue and state (River's queue depth).", []string{"queue", "state"}, nil)
	descLaneDue   = prometheus.NewDesc("hookd_lane_oldest_due_delivery_age_seconds", "How long the oldest due delivery whose job waits in each lane (River queue deliver or deliver_slow) has been due (0: none due).", []string{"lane"}, nil)
	descInFlight  = prometheus.NewDesc("hookd_lane_in_flight", "Deliver jobs in flight in this process, by lane.", []string{"lane"}, nil)
	descStatsUp   = prometheus.NewDesc("hookd_stats_up", "1 if the database answered this scrape's queries, 0 if not (the gauges above are then missing).", nil, nil)
)

// Describe sends the descriptions of the gauges Collect reports.
func (c *DBCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPending, descOldestDue, descEndpoints, descRiverJobs, descLaneDue, descInFlight, descStatsUp} {
		ch <- d
	}
}

// Collect queries the database once, within Timeout, and sends the gauges;
// hookd_stats_up says whether the queries answered.
func (c *DBCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.Timeout)
	defer cancel()
	if c.InFlight != nil {
		for lane, n := range c.InFlight() {
			ch <- prometheus.MustNewConstMetric(descInFlight, prometheus.GaugeValue, float64(n), lane)
		}
	}
	now := c.Now()
	s, err := c.DB.ReadStats(ctx, now.UnixMicro())
	if err != nil {
		c.Log.Warn("metrics: reading the database's gauges failed", "error", err)
		ch <- prometheus.MustNewConstMetric(descStatsUp, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(descStatsUp, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(descPending, prometheus.GaugeValue, float64(s.Pending))
	age := 0.0
	if s.OldestDueAt != 0 {
		age = max(0, now.Sub(time.UnixMicro(s.OldestDueAt)).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(descOldestDue, prometheus.GaugeValue, age)
	for _, lane := range c.Lanes {
		age := 0.0
		if at, ok := s.OldestDueByQueue[lane]; ok {
			age = max(0, now.Sub(time.UnixMicro(at)).Seconds())
		}
		ch <- prometheus.MustNewConstMetric(descLaneDue, prometheus.GaugeValue, age, lane)
	}
	for state, n := range s.EndpointState {
		ch <- prometheus.MustNewConstMetric(descEndpoints, prometheus.GaugeValue, float64(n), state)
	}
	for _, q := range c.Queues {
		for _, st := range riverStates {
			if _, ok := s.RiverJobs[[2]string{q, st}]; !ok {
				s.RiverJobs[[2]string{q, st}] = 0
			}
		}
	}
	for k, n := range s.RiverJobs {
		ch <- prometheus.MustNewConstMetric(descRiverJobs, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
}
