package delivery_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/profile"
)

// TestFanoutsOfAnOwnerTakeTurns: in one process, a fanout of an owner
// whose other fanout runs waits for it instead of running beside it, and
// when that one took its event along it ends without a transaction of its
// own. Another owner's fanout does not wait.
func TestFanoutsOfAnOwnerTakeTurns(t *testing.T) {
	t.Parallel()
	eachGroupBackend(t, func(t *testing.T, b groupBench) {
		ctx := context.Background()
		ids := publishPaid(t, b.svc, 2) // acme has one endpoint
		first, second := ids[0], ids[1]
		other, err := b.svc.PublishOne(ctx, &event.Event{OwnerID: "quiet", Type: "order.paid", Data: []byte(`{}`)})
		must(t, err)

		var mu sync.Mutex
		var txs []string // the events whose fanout reached its transaction
		reached, release := make(chan struct{}), make(chan struct{})
		waiting := make(chan string, 4)
		b.svc.SetHooks(&delivery.Hooks{
			BeforeFanoutTx: func(eventID string) {
				mu.Lock()
				txs = append(txs, eventID)
				mu.Unlock()
				if eventID == first {
					close(reached)
					<-release
				}
			},
			FanoutWaits: func(eventID string) { waiting <- eventID },
		})
		errs := make(chan error, 2)
		go func() { errs <- b.svc.Fanout(ctx, first) }()
		waitFor(t, reached, "the first fanout to reach its transaction")
		go func() { errs <- b.svc.Fanout(ctx, second) }()
		select {
		case id := <-waiting:
			if id != second {
				t.Fatalf("%s waits, want %s", id, second)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the second fanout of acme did not wait for the first")
		}
		// Another owner's fanout runs while acme's is held.
		done := make(chan error, 1)
		go func() { done <- b.svc.Fanout(ctx, other.ID) }()
		select {
		case err := <-done:
			must(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("quiet's fanout waited for acme's")
		}
		close(release)
		for range 2 {
			must(t, <-errs)
		}
		mu.Lock()
		got := slices.Clone(txs)
		mu.Unlock()
		if want := []string{first, other.ID}; !slices.Equal(got, want) {
			t.Fatalf("fanouts that ran a transaction: %v, want %v (the second taken along by the first)", got, want)
		}
		if n := dbtest.Count(t, b.db, `SELECT count(*) FROM hookd_deliveries WHERE event_id IN ($1, $2)`, first, second); n != 2 {
			t.Fatalf("%d deliveries of acme's two events, want 2", n)
		}
		if n := dbtest.Count(t, b.db, `SELECT count(*) FROM hookd_events WHERE fanout_job <> 0`); n != 0 {
			t.Fatalf("%d events still awaiting fanout", n)
		}
		select {
		case id := <-waiting:
			t.Fatalf("%s waited too", id)
		default:
		}
	})
}

// TestFanoutsOfAnOwnerWithManyEndpointsRunSideBySide: the fanouts of an
// owner with too many endpoints for one fanout to take a whole batch of
// others along (FanoutBatch × endpoints > FanoutPairs) run side by side.
func TestFanoutsOfAnOwnerWithManyEndpointsRunSideBySide(t *testing.T) {
	t.Parallel()
	eachGroupBackend(t, func(t *testing.T, b groupBench) {
		// acme's one endpoint is many when a fanout stops at 5 deliveries
		// (and takes along up to 100 events).
		svc := delivery.New(delivery.Config{DB: b.db, Profiles: profile.Default(), FanoutPairs: 5})
		ctx := context.Background()
		ids := publishPaid(t, svc, 2)
		reached, release := make(chan struct{}), make(chan struct{})
		second := make(chan struct{})
		var once [2]sync.Once // a fanout that met the other's row lock runs again
		svc.SetHooks(&delivery.Hooks{
			BeforeFanoutTx: func(eventID string) {
				switch eventID {
				case ids[0]:
					once[0].Do(func() {
						close(reached)
						<-release
					})
				case ids[1]:
					once[1].Do(func() { close(second) })
				}
			},
			FanoutWaits: func(eventID string) { t.Errorf("%s waited", eventID) },
		})
		errs := make(chan error, 2)
		go func() { errs <- svc.Fanout(ctx, ids[0]) }()
		waitFor(t, reached, "the first fanout to reach its transaction")
		go func() { errs <- svc.Fanout(ctx, ids[1]) }()
		waitFor(t, second, "the second fanout to run beside the first")
		close(release)
		for range 2 {
			must(t, <-errs)
		}
	})
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}
