package delivery

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/riverqueue/river"

	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/store"
)

// Isolation: one owner's slow or dead receivers never hold the workers
// that everyone else's deliveries need (docs/design.md, "Isolation").
// Two rules, both on River's own means:
//
//   - Lanes. Deliveries run in two River queues with workers of their own:
//     QueueDeliver for endpoints that answer within SlowAfter, and
//     QueueDeliverSlow for those whose last attempt took SlowAfter or
//     longer (a timeout included). The lane is the endpoint's
//     (slow_since), moved by the attempt that shows the change, with the
//     endpoint's waiting jobs; a job of a slow endpoint fetched in the
//     healthy lane moves itself.
//   - Shares. In each lane of a process, one owner holds at most
//     OwnerShare of the lane's workers. A job of an owner at its share in
//     the healthy lane moves to the slow lane (once: the healthy lane's
//     queue, which River fetches in order, is not filled with a burst
//     coming due again and again); in the slow lane it snoozes (River
//     spends no attempt on a snooze), for longer each time. So a burst of
//     one owner, and the first attempts of endpoints nobody knows yet to
//     be dead, leave the rest of the healthy lane to the others. Each
//     process keeps its own count: each keeps the others' part of its own
//     workers, which is what isolation needs, at no cost on the hot path.

// QueueDeliverSlow is the slow lane's River queue.
const QueueDeliverSlow = "deliver_slow"

// DefaultSlowAfter is how long an attempt may take before its endpoint
// moves to the slow lane: a fifth of the 10 s HTTP timeout.
const DefaultSlowAfter = 2 * time.Second

// DefaultOwnerShare is the part of a lane's workers one owner may hold.
const DefaultOwnerShare = 0.5

// laneOf is the lane of an endpoint by its last attempts.
func laneOf(ep *endpoint.Endpoint) string {
	if ep.SlowSince != nil {
		return QueueDeliverSlow
	}
	return QueueDeliver
}

// shares counts each owner's jobs in flight per lane, in this process.
type shares struct {
	mu   sync.Mutex
	held map[shareKey]int // every job in flight: the operator's view
	// capped counts the jobs in flight that count toward the share: every
	// one in the healthy lane, a slow endpoint's in the slow lane.
	capped map[shareKey]int
	caps   map[string]int // by lane; a lane missing has no cap
	// owners remembers endpoints' owners (an endpoint never changes
	// owner), so a job checks its owner's share before any query; slow
	// the endpoints last seen slow.
	owners sync.Map // endpoint id → owner id
	slow   sync.Map // endpoint id → struct{}
	known  int      // entries in owners, under mu
	gate   gate     // the overflow's admission (lane_gate.go), under mu
}

type shareKey struct{ lane, owner string }

// maxKnownEndpoints bounds the endpoint → owner memory; past it, it
// starts again empty (a miss costs one lease take and one read).
const maxKnownEndpoints = 100_000

func newShares(workers map[string]int, share float64) *shares {
	sh := &shares{held: map[shareKey]int{}, capped: map[shareKey]int{}, caps: map[string]int{}}
	for lane, n := range workers {
		if n > 0 && share > 0 && share < 1 {
			sh.caps[lane] = max(1, int(float64(n)*share))
		}
	}
	if _, capped := sh.caps[QueueDeliver]; capped {
		sh.gate.limit = workers[QueueDeliver] // a share makes overflow
	}
	return sh
}

// ownerOf is the endpoint's owner, if this process has seen it.
func (sh *shares) ownerOf(endpointID string) (string, bool) {
	v, ok := sh.owners.Load(endpointID)
	if !ok {
		return "", false
	}
	return v.(string), true
}

func (sh *shares) remember(endpointID, ownerID string) {
	if _, loaded := sh.owners.LoadOrStore(endpointID, ownerID); loaded {
		return
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.known++; sh.known > maxKnownEndpoints {
		sh.owners.Clear()
		sh.slow.Clear()
		sh.known = 0
	}
}

// counts says whether a job of the endpoint in lane counts toward its
// owner's share: in the healthy lane every job; in the slow lane only a
// slow endpoint's. A fast endpoint's job in the slow lane is a burst's
// overflow (placed there by its fanout, or moved there over its share in
// the healthy lane): it runs on the slow lane's idle workers, uncapped,
// so a burst alone on the machine is not slowed by the share, and a
// dead endpoint's overflow is capped once its first attempt marks it slow.
func (sh *shares) counts(lane, endpointID string) bool {
	if lane != QueueDeliverSlow {
		return true
	}
	_, slow := sh.slow.Load(endpointID)
	return slow
}

// seen records the endpoint's lane as an attempt read it.
func (sh *shares) seen(endpointID string, slow bool) {
	if _, was := sh.slow.Load(endpointID); was == slow {
		return
	}
	if slow {
		sh.slow.Store(endpointID, struct{}{})
	} else {
		sh.slow.Delete(endpointID)
	}
}

// take counts one more job of owner in lane, unless it counts toward the
// share (counted) and the owner holds its share already.
func (sh *shares) take(lane, owner string, counted bool) bool {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	k := shareKey{lane, owner}
	if counted {
		if c, capped := sh.caps[lane]; capped && sh.capped[k] >= c {
			return false
		}
		sh.capped[k]++
	}
	sh.held[k]++
	if lane == QueueDeliver {
		sh.gate.healthy++
	}
	return true
}

func (sh *shares) give(lane, owner string, counted bool) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	k := shareKey{lane, owner}
	if sh.held[k]--; sh.held[k] <= 0 {
		delete(sh.held, k)
	}
	if counted {
		if sh.capped[k]--; sh.capped[k] <= 0 {
			delete(sh.capped, k)
		}
	}
	if lane == QueueDeliver {
		sh.gate.healthy--
		sh.gate.wakeLocked()
	}
}

// place puts an owner's new jobs (one fanout's: the event's and those
// taken along, or a batch of a redelivery) in their lanes by the owner's
// share, counting the jobs it holds in flight in this process now. In
// the healthy lane, the jobs past its share go to the slow lane at River
// priority 2: another owner's delivery published a moment after a burst
// (a thousand endpoints, a batch of events, a stream of fanouts while
// the owner's attempts hang) is then not behind the burst's tail in the
// healthy lane's queue, and the tail runs on the slow lane's idle
// workers (uncapped there while its endpoints are fast: counts), after
// slow endpoints' first jobs. A slow endpoint's jobs past the owner's
// share of the slow lane stay there at priority 2. No job waits for a
// time (as a snooze or a schedule would make it), so a burst alone on the
// machine has every worker of both lanes.
func (sh *shares) place(owner string, params []river.InsertManyParams) {
	hc, hcapped := sh.caps[QueueDeliver]
	sc, scapped := sh.caps[QueueDeliverSlow]
	if !hcapped && !scapped {
		return
	}
	sh.mu.Lock()
	healthy, slow := sh.capped[shareKey{QueueDeliver, owner}], sh.capped[shareKey{QueueDeliverSlow, owner}]
	sh.mu.Unlock()
	for _, p := range params {
		o := p.InsertOpts
		switch {
		case o.Queue == QueueDeliver && hcapped:
			if healthy++; healthy > hc {
				o.Queue, o.Priority = QueueDeliverSlow, 2
			}
		case o.Queue == QueueDeliverSlow && scapped:
			if slow++; slow > sc {
				o.Priority = 2
			}
		}
	}
}

// OwnerInFlight is one owner's deliveries in flight in one lane of this
// process.
type OwnerInFlight struct {
	Lane     string `json:"lane"`
	OwnerID  string `json:"owner_id"`
	InFlight int    `json:"in_flight"`
}

// top returns the n owners holding the most jobs, most first, and the
// jobs in flight per lane.
func (sh *shares) top(n int) ([]OwnerInFlight, map[string]int) {
	sh.mu.Lock()
	all := make([]OwnerInFlight, 0, len(sh.held))
	lanes := map[string]int{QueueDeliver: 0, QueueDeliverSlow: 0}
	for k, c := range sh.held {
		all = append(all, OwnerInFlight{Lane: k.lane, OwnerID: k.owner, InFlight: c})
		lanes[k.lane] += c
	}
	sh.mu.Unlock()
	sort.Slice(all, func(i, j int) bool {
		if all[i].InFlight != all[j].InFlight {
			return all[i].InFlight > all[j].InFlight
		}
		return all[i].OwnerID < all[j].OwnerID
	})
	return all[:min(n, len(all))], lanes
}

// InFlight returns the n owners holding the most deliveries in flight in
// this process, most first, and the deliveries in flight per lane: the
// operator's view of who holds the workers.
func (s *Service) InFlight(n int) ([]OwnerInFlight, map[string]int) { return s.shares.top(n) }

// overShare is the return of a job whose owner holds its share of the
// lane. In the healthy lane the job moves to the slow lane, where it
// waits its turn: the healthy lane's queue, which River fetches in order,
// is then not filled with a burst's jobs coming due again and again ahead
// of other owners' (each visits it once), and the burst uses the slow
// lane's idle workers. In the slow lane it snoozes (no attempt spent):
// 100 ms the first time, doubling with each snooze the job has had (River
// counts them in its metadata), up to BusySnooze × 5, with a quarter of
// jitter so a burst does not come back at once.
func (s *Service) overShare(ctx context.Context, job *river.Job[DeliverArgs]) error {
	s.cfg.Metrics.OverShare(job.Queue)
	if job.Queue == QueueDeliver {
		return s.toSlowLane(ctx, job)
	}
	n := min(snoozesOf(job.Metadata), 10)
	wait := min(100*time.Millisecond<<n, 5*s.cfg.BusySnooze)
	wait += time.Duration(rand.Int64N(int64(wait)/4 + 1))
	return river.JobSnooze(wait)
}

// toSlowLane moves a job of the healthy lane to the slow lane; River makes
// it available there at once (a snooze of 0: no attempt spent). A job of
// a fast endpoint in the slow lane is sent there: only the endpoint's
// change of lane (moveLane) brings jobs back.
func (s *Service) toSlowLane(ctx context.Context, job *river.Job[DeliverArgs]) error {
	if err := s.db.Relaxed().MoveJob(ctx, job.ID, QueueDeliverSlow); err != nil {
		return err
	}
	s.cfg.Metrics.LaneMoved(QueueDeliverSlow, 1)
	return river.JobSnooze(0)
}

// moveLane records an endpoint's change of lane after an attempt that
// took took, and moves its waiting jobs (this one's included, so its
// retry comes back in the new lane); it returns the lane moved to, or ""
// when the endpoint stays in its lane, which costs nothing: the hot path
// pays one comparison.
func (s *Service) moveLane(ctx context.Context, ep *endpoint.Endpoint, took time.Duration, now time.Time) string {
	slow := took >= s.cfg.SlowAfter
	if slow == (ep.SlowSince != nil) {
		return ""
	}
	var since *time.Time
	lane := QueueDeliver
	if slow {
		t := now.UTC()
		since, lane = &t, QueueDeliverSlow
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var moved int64
	err := s.db.InTx(ctx, store.TxOptions{Relaxed: true}, func(q *store.Q) error {
		var micros *int64
		if since != nil {
			m := since.UnixMicro()
			micros = &m
		}
		if err := q.SetEndpointSlow(ctx, ep.ID, micros); err != nil {
			return err
		}
		n, err := q.MoveEndpointJobs(ctx, ep.ID, lane)
		moved = n
		return err
	})
	if err != nil {
		s.log.Warn("could not move the endpoint to its lane; its next attempt tries again", "endpoint", ep.ID, "lane", lane, "error", err)
		return ""
	}
	ep.SlowSince = since
	s.shares.seen(ep.ID, since != nil)
	s.cfg.Metrics.LaneMoved(lane, int(moved))
	s.log.Info("endpoint changed lane", "endpoint", ep.ID, "lane", lane, "took", took, "jobs_moved", moved)
	return lane
}

// snoozesOf is River's count of a job's snoozes, from its metadata.
func snoozesOf(metadata []byte) int {
	var m struct {
		Snoozes int `json:"snoozes"`
	}
	_ = json.Unmarshal(metadata, &m) // unreadable: the first snooze
	return m.Snoozes
}
