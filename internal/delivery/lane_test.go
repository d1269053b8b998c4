package delivery_test

import (
	"context"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/profile"
	"github.com/hookd/hookd/internal/store"
)

// TestFanoutQueuesBurstBehind: one event to more of an owner's endpoints
// than its share of the healthy lane's workers writes its first share of
// jobs in the healthy lane and the rest in the slow lane at priority 2,
// so another owner's job written after it is not behind the burst's tail
// (River fetches a queue by priority, then time); an endpoint already in
// the slow lane gets its job written there at the default priority, not
// moved there by a worker. Both engines, through each one's fanout write.
func TestFanoutQueuesBurstBehind(t *testing.T) {
	for _, backend := range dbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			t.Parallel()
			b := openGroupBench(t, backend)
			const workers, share = 4, 0.5 // a share of 2 jobs a lane
			b.svc = delivery.New(delivery.Config{DB: b.db, Profiles: profile.Default(), GroupMax: 8, Workers: workers, SlowWorkers: workers, OwnerShare: share})
			ctx := context.Background()
			now := time.Now()
			// acme: the bench's endpoint and five more, one of them slow.
			var slowID string
			for i := range 5 {
				e := &endpoint.Endpoint{ID: event.NewID("ep_", now), OwnerID: "acme", URL: "https://example.com/hook", EventTypes: []string{"*"},
					SecretSealed: []byte{1}, Enabled: true, MaxInFlight: 1, CreatedAt: now, UpdatedAt: now}
				must(t, b.db.InTx(ctx, store.TxOptions{}, func(q *store.Q) error { return q.CreateEndpoint(ctx, e) }))
				if i == 4 {
					slowID = e.ID
					since := now.UnixMicro()
					must(t, b.db.Q().SetEndpointSlow(ctx, e.ID, &since))
				}
			}
			ids := publishPaid(t, b.svc, 1)
			must(t, b.svc.Fanout(ctx, ids[0]))
			byLane := func(queue string, priority int) int {
				return dbtest.Count(t, b.db, `SELECT count(*) FROM river_job WHERE kind = 'webhook.deliver' AND queue = $1 AND priority = $2`, queue, priority)
			}
			if p1, p2 := byLane(delivery.QueueDeliver, 1), byLane(delivery.QueueDeliver, 2); p1 != 2 || p2 != 0 {
				t.Fatalf("healthy lane: %d jobs at priority 1 and %d at 2; want the owner's share (2) only", p1, p2)
			}
			if p1, p2 := byLane(delivery.QueueDeliverSlow, 1), byLane(delivery.QueueDeliverSlow, 2); p1 != 1 || p2 != 3 {
				t.Fatalf("slow lane: %d jobs at priority 1 and %d at 2; want the slow endpoint's first and the burst's other 3 behind", p1, p2)
			}
			if n := dbtest.Count(t, b.db, `SELECT count(*) FROM river_job WHERE kind = 'webhook.deliver' AND queue = $1 AND priority = 1 AND args->>'endpoint_id' = $2`,
				delivery.QueueDeliverSlow, slowID); n != 1 {
				t.Fatalf("%d jobs of the slow endpoint in the slow lane at priority 1; want its one job written there", n)
			}
			// Another owner's single delivery is not behind anyone.
			q, err := publishOne(ctx, b.svc, &event.Event{OwnerID: "quiet", Type: "order.paid", Data: []byte(`{}`)})
			must(t, err)
			e := &endpoint.Endpoint{ID: event.NewID("ep_", now), OwnerID: "quiet", URL: "https://example.com/q", EventTypes: []string{"*"},
				SecretSealed: []byte{1}, Enabled: true, MaxInFlight: 1, CreatedAt: now, UpdatedAt: now}
			must(t, b.db.InTx(ctx, store.TxOptions{}, func(q *store.Q) error { return q.CreateEndpoint(ctx, e) }))
			must(t, b.svc.Fanout(ctx, q.ID))
			if n := dbtest.Count(t, b.db, `SELECT count(*) FROM river_job WHERE kind = 'webhook.deliver' AND queue = $1 AND priority = 1 AND args->>'endpoint_id' = $2`,
				delivery.QueueDeliver, e.ID); n != 1 {
				t.Fatalf("%d jobs of quiet's endpoint at priority 1 in the healthy lane; want its one job there", n)
			}
		})
	}
}
