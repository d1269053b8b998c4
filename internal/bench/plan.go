package bench

import "fmt"

// plan is who owns what: endpoint j and event i belong to owner j%K and
// i%K, so every owner has at least one endpoint (K ≤ M) and the events are
// spread round-robin.
type plan struct {
	events, endpoints, owners int
	// warmup events have seqs events … events+warmup-1.
	warmup  int
	profile string
	// epsOf[k] is how many endpoints owner k has.
	epsOf []int
	// expected is how many (event, endpoint) pairs must arrive;
	// warmExpected how many of the warm-up's.
	expected, warmExpected int
	// keys[k] is owner k's API key (set by startHookd); noisyKey the
	// noisy owner's (Options.Noisy).
	keys     []string
	noisyKey string
	// probeKey is the prune pass's probe owner's (Options.PrunePass).
	probeKey string
	// endpointIDs[j] is endpoint j's id (set by setupEndpoints).
	endpointIDs []string
	noisy       bool
	probe       bool // Options.PrunePass: a probe owner
}

func newPlan(o Options) *plan {
	p := &plan{events: o.Events, warmup: o.Warmup, endpoints: o.Endpoints, owners: o.Owners, profile: o.Profile, epsOf: make([]int, o.Owners), noisy: o.Noisy > 0, probe: o.PrunePass > 0}
	for j := range o.Endpoints {
		p.epsOf[j%o.Owners]++
	}
	for k := range o.Owners {
		p.expected += p.eventsOf(k) * p.epsOf[k]
	}
	for seq := p.events; seq < p.events+p.warmup; seq++ {
		p.warmExpected += p.epsOf[seq%p.owners]
	}
	return p
}

// eventsOf is how many events owner k publishes.
func (p *plan) eventsOf(k int) int {
	n := p.events / p.owners
	if k < p.events%p.owners {
		n++
	}
	return n
}

func (p *plan) ownerID(k int) string { return fmt.Sprintf("bench-owner-%d", k) }

// eventType is owner k's one registered webhook event type.
func (p *plan) eventType(k int) string { return fmt.Sprintf("bench.event%d", k) }

// ownerAttrs are the attributes an owner of the plan's profile needs.
func (p *plan) ownerAttrs(k int) map[string]string {
	if p.profile != ProfileKwork {
		return nil
	}
	return map[string]string{
		"app":         fmt.Sprintf("app_bench%d", k),
		"environment": "live",
		"app_kind":    "integration",
		"api_version": "2024-01-01",
	}
}

// warm reports whether seq is a warm-up event's.
func (p *plan) warm(seq int) bool { return seq >= p.events && seq < p.events+p.warmup }

// pairExpected reports whether event seq must reach endpoint ep.
func (p *plan) pairExpected(seq, ep int) bool {
	return seq >= 0 && seq < p.events && ep >= 0 && ep < p.endpoints && seq%p.owners == ep%p.owners
}
