// Package metrics is hookd's Prometheus instrumentation: the counters and
// histograms the delivery service bumps on its hot path (children resolved once, at
// start, so a delivery costs an atomic add and a histogram bucket), and a
// collector that reads the backlog, the endpoints' states and River's queue
// depth from the database at scrape time only. The series are documented in
// docs/operations/metrics.md.
package metrics

import (
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Outcome is the value of hookd_deliveries_total's outcome label.
type Outcome int

// The outcomes of one attempt.
const (
	Delivered Outcome = iota // 2xx
	Retry                    // failed, tried again per the profile's schedule
	Snoozed                  // 429/503 with Retry-After: no attempt spent
	Failed                   // attempts exhausted
	Discarded                // permanent failure, never tried again
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"delivered", "retry", "snoozed", "failed", "discarded"}

func (o Outcome) String() string { return outcomeNames[o] }

// Config configures the metrics.
type Config struct {
	// Profiles are the profile names the delivery service knows: their label
	// children are made up front.
	Profiles []string
	// OwnerLabels adds owner (and, on deliveries, endpoint) labels. Off by
	// default: their cardinality grows with the number of owners.
	OwnerLabels bool
	// Process adds the Go runtime and process collectors (the binary does;
	// a library user's own registry usually has them already).
	Process bool
}

// Metrics is hookd's registry and its hot-path instruments. A nil *Metrics
// records nothing.
type Metrics struct {
	reg         *prometheus.Registry
	ownerLabels bool

	published  *prometheus.CounterVec
	deliveries *prometheus.CounterVec
	attempt    *prometheus.HistogramVec
	latency    *prometheus.HistogramVec
	leaseBusy  prometheus.Counter
	overShare  *prometheus.CounterVec
	laneMoved  *prometheus.CounterVec
	controls   *prometheus.CounterVec
	polls      *prometheus.CounterVec
	groups     [numGroupPaths]prometheus.Counter
	groupSize  prometheus.Observer

	// children by profile, resolved at start (read-only afterwards).
	byProfile map[string]*profileChildren
	mu        sync.Mutex                  // guards later
	later     map[string]*profileChildren // profiles not known at start
}

type profileChildren struct {
	published  prometheus.Counter
	deliveries [numOutcomes]prometheus.Counter
	attempt    prometheus.Observer
	latency    prometheus.Observer
}

// New returns the metrics, registered on a registry of their own.
func New(cfg Config) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), ownerLabels: cfg.OwnerLabels, byProfile: map[string]*profileChildren{}, later: map[string]*profileChildren{}}
	pubLabels, delLabels := []string{"profile"}, []string{"profile", "outcome"}
	if cfg.OwnerLabels {
		pubLabels = append(pubLabels, "owner")
		delLabels = append(delLabels, "owner", "endpoint")
	}
	m.published = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hookd_events_published_total",
		Help: "Events inserted by a publish (not idempotent repeats), by profile.",
	}, pubLabels)
	m.deliveries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hookd_deliveries_total",
		Help: "Delivery attempt outcomes: delivered, retry, snoozed, failed (attempts exhausted) or discarded (permanent).",
	}, delLabels)
	m.attempt = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "hookd_attempt_duration_seconds",
		Help:    "Duration of one HTTP delivery attempt (request and response), by profile.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"profile"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "hookd_delivery_latency_seconds",
		Help:    "Time from an event's publish to its delivery's first 2xx, by profile.",
		Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600, 21600, 86400},
	}, []string{"profile"})
	m.leaseBusy = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "hookd_lease_busy_total",
		Help: "Deliver jobs that met their endpoint's lease held by another and snoozed.",
	})
	m.overShare = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hookd_owner_share_snoozes_total",
		Help: "Deliver jobs that snoozed because their owner held its share of the lane's workers, by lane.",
	}, []string{"lane"})
	m.laneMoved = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hookd_lane_moves_total",
		Help: "Deliver jobs moved to a lane (deliver or deliver_slow) because their endpoint's attempts became slow or fast again.",
	}, []string{"lane"})
	m.controls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hookd_receiver_controls_total",
		Help: "Answers carrying a webhook-delivery header, by control: disable, abort-message or ignored (any other value).",
	}, []string{"control"})
	for _, c := range []string{"disable", "abort-message", "ignored"} {
		m.controls.WithLabelValues(c)
	}
	m.polls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hookd_poll_requests_total",
		Help: "Reads of polling endpoints, by how: poll (one answer, long-polled or not) or stream (an SSE stream opened).",
	}, []string{"how"})
	for _, h := range []string{"poll", "stream"} {
		m.polls.WithLabelValues(h)
	}
	for _, lane := range []string{"deliver", "deliver_slow"} { // every series from the start
		m.overShare.WithLabelValues(lane)
		m.laneMoved.WithLabelValues(lane)
	}
	groups := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hookd_publish_groups_total",
		Help: "Group commits of single publishes, by path: one_round_trip, missed (tried one round trip, then the usual way) or usual.",
	}, []string{"path"})
	for p := range numGroupPaths {
		m.groups[p] = groups.WithLabelValues(p.String())
	}
	groupSize := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "hookd_publish_group_size",
		Help:    "Single publishes one group commit carried.",
		Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 100},
	})
	m.groupSize = groupSize
	m.reg.MustRegister(m.published, m.deliveries, m.attempt, m.latency, m.leaseBusy, m.overShare, m.laneMoved, m.controls, m.polls, groups, groupSize)
	if cfg.Process {
		m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	for _, p := range cfg.Profiles {
		m.byProfile[p] = m.children(p)
	}
	return m
}

func (m *Metrics) children(profile string) *profileChildren {
	c := &profileChildren{attempt: m.attempt.WithLabelValues(profile), latency: m.latency.WithLabelValues(profile)}
	if !m.ownerLabels {
		c.published = m.published.WithLabelValues(profile)
		for o := range numOutcomes {
			c.deliveries[o] = m.deliveries.WithLabelValues(profile, o.String())
		}
	}
	return c
}

// of returns profile's children: those made at start, without a lock, or
// (a profile registered later) made once under the lock.
func (m *Metrics) of(profile string) *profileChildren {
	if c, ok := m.byProfile[profile]; ok {
		return c
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.later[profile]; ok {
		return c
	}
	c := m.children(profile)
	m.later[profile] = c
	return c
}

// Register adds a collector (e.g. the scrape-time database collector).
func (m *Metrics) Register(c prometheus.Collector) error {
	if m == nil {
		return nil
	}
	return m.reg.Register(c)
}

// Registry is the registry the metrics are on (for tests and library users
// who gather it themselves).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
