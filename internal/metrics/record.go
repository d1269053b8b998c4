package metrics

import "time"

// Owner names whom a recorded event or delivery belongs to; it becomes
// labels only with Config.OwnerLabels.
type Owner struct {
	OwnerID, EndpointID string
}

// Published counts n events inserted by a publish.
func (m *Metrics) Published(profile string, who Owner, n int) {
	if m == nil || n == 0 {
		return
	}
	if m.ownerLabels {
		m.published.WithLabelValues(profile, who.OwnerID).Add(float64(n))
		return
	}
	m.of(profile).published.Add(float64(n))
}

// Attempt records one HTTP attempt's duration.
func (m *Metrics) Attempt(profile string, took time.Duration) {
	if m == nil {
		return
	}
	m.of(profile).attempt.Observe(took.Seconds())
}

// Outcome counts one delivery outcome.
func (m *Metrics) Outcome(profile string, who Owner, o Outcome) {
	if m == nil {
		return
	}
	if m.ownerLabels {
		m.deliveries.WithLabelValues(profile, o.String(), who.OwnerID, who.EndpointID).Inc()
		return
	}
	m.of(profile).deliveries[o].Inc()
}

// Latency records the time from an event's publish to its first 2xx.
func (m *Metrics) Latency(profile string, took time.Duration) {
	if m == nil {
		return
	}
	m.of(profile).latency.Observe(max(took, 0).Seconds())
}

// LeaseBusy counts a deliver job that met its endpoint's lease held.
func (m *Metrics) LeaseBusy() {
	if m == nil {
		return
	}
	m.leaseBusy.Inc()
}

// OverShare counts a deliver job that snoozed because its owner held its
// share of the lane.
func (m *Metrics) OverShare(lane string) {
	if m == nil {
		return
	}
	m.overShare.WithLabelValues(lane).Inc()
}

// LaneMoved counts n deliver jobs moved to lane.
func (m *Metrics) LaneMoved(lane string, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.laneMoved.WithLabelValues(lane).Add(float64(n))
}

// ReceiverControl counts one answer carrying a webhook-delivery header:
// control is disable, abort-message or ignored.
func (m *Metrics) ReceiverControl(control string) {
	if m == nil {
		return
	}
	m.controls.WithLabelValues(control).Inc()
}

// Poll counts one read of a polling endpoint: how is poll or stream.
func (m *Metrics) Poll(how string) {
	if m == nil {
		return
	}
	m.polls.WithLabelValues(how).Inc()
}

// GroupPath is the value of hookd_publish_groups_total's path label: how a
// group commit of single publishes wrote.
type GroupPath int

// The paths of a group commit.
const (
	OneRoundTrip GroupPath = iota // what it expected held: one round trip
	Missed                        // tried one round trip, then the usual way
	Usual                         // the usual way at once
	numGroupPaths
)

var groupPathNames = [numGroupPaths]string{"one_round_trip", "missed", "usual"}

func (p GroupPath) String() string { return groupPathNames[p] }

// PublishGroup records one group commit of size single publishes.
func (m *Metrics) PublishGroup(size int, path GroupPath) {
	if m == nil {
		return
	}
	m.groups[path].Inc()
	m.groupSize.Observe(float64(size))
}
