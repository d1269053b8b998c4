package delivery_test

import (
	"context"
	"sync"
	"testing"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/delivery/hookstest"
)

// TestFanoutOneRoundTrip: on PostgreSQL with hookd's own River client, a
// fanout writes its deliveries, their deliver jobs, the events taken along
// and the deletion of their fanout jobs in one round trip with its COMMIT:
// every event gets its delivery, each delivery the deliver job it names,
// and no fanout job is left. Run again, it writes nothing.
func TestFanoutOneRoundTrip(t *testing.T) {
	t.Parallel()
	b := openQuietBench(t)
	var mu sync.Mutex
	var writes []bool
	hookstest.Set(t, b.svc, &delivery.Hooks{FanoutWritten: func(oneTrip bool) {
		mu.Lock()
		defer mu.Unlock()
		writes = append(writes, oneTrip)
	}})
	ctx := context.Background()
	ids := publishPaid(t, b.svc, 3) // acme has one endpoint
	wantWritten(t, b.db, 3, 3)
	must(t, b.svc.Fanout(ctx, ids[0])) // takes the other two along
	mu.Lock()
	got := append([]bool(nil), writes...)
	mu.Unlock()
	if len(got) != 1 || !got[0] {
		t.Fatalf("fanout writes %v, want one in one round trip", got)
	}
	if n := dbtest.Count(t, b.db, `SELECT count(*) FROM hookd_deliveries d JOIN river_job j ON j.id = d.job_id
		WHERE j.kind = 'webhook.deliver' AND j.state = 'available' AND j.args->>'event_id' = d.event_id AND j.args->>'endpoint_id' = d.endpoint_id
		AND j.metadata->>'profile' = 'standard' AND j.max_attempts > 1`); n != 3 {
		t.Fatalf("%d deliveries with their deliver jobs, want 3", n)
	}
	if n := dbtest.Count(t, b.db, `SELECT count(*) FROM river_job WHERE kind = 'webhook.deliver'`); n != 3 {
		t.Fatalf("%d deliver jobs, want 3", n)
	}
	if n := dbtest.Count(t, b.db, `SELECT count(*) FROM hookd_events WHERE fanout_job <> 0`); n != 0 {
		t.Fatalf("%d events still awaiting fanout", n)
	}
	// The fanout job of the first is River's to complete; the others' are gone.
	if n := dbtest.Count(t, b.db, `SELECT count(*) FROM river_job WHERE kind = 'webhook.fanout'`); n != 1 {
		t.Fatalf("%d fanout jobs left, want the one that ran", n)
	}
	for _, id := range ids {
		must(t, b.svc.Fanout(ctx, id))
	}
	if n := dbtest.Count(t, b.db, `SELECT count(*) FROM river_job WHERE kind = 'webhook.deliver'`); n != 3 {
		t.Fatalf("after fanning out again: %d deliver jobs, want 3", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(writes) != 1 {
		t.Fatalf("fanning out again wrote %v", writes[1:])
	}
}
