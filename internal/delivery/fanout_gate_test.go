package delivery_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/delivery/hookstest"
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
		other, err := publishOne(ctx, b.svc, &event.Event{OwnerID: "quiet", Type: "order.paid", Data: []byte(`{}`)})
		must(t, err)

		var mu sync.Mutex
		var txs []string // the events whose fanout reached its transaction
		reached, release := make(chan struct{}), make(chan struct{})
		waiting := make(chan string, 4)
		hookstest.Set(t, b.svc, &delivery.Hooks{
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
		hookstest.Set(t, svc, &delivery.Hooks{
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

// TestFanoutsOfABackloggedOwnerRunSideBySide: once a fanout of an owner
// whose endpoints take several deliveries at once (kwork) took a whole
// batch along (more of its events await fanout than one transaction
// takes), its next fanouts run side by side, each taking along a batch of
// its own; once one takes less, they take turns again. A standard owner's
// fanouts take turns under a backlog too.
func TestFanoutsOfABackloggedOwnerRunSideBySide(t *testing.T) {
	t.Parallel()
	eachGroupBackend(t, func(t *testing.T, b groupBench) {
		// A batch is one event taken along.
		svc := delivery.New(delivery.Config{DB: b.db, Profiles: profile.Default(), FanoutBatch: 1})
		ctx := context.Background()
		var mu sync.Mutex
		hold := ""                        // the event whose fanout waits before its transaction
		reached := make(chan string, 8)   // events whose fanout reached its transaction
		release := make(chan struct{}, 1) // lets the held fanout go on
		waiting := make(chan string, 8)   // events whose fanout waited at the gate
		hookstest.Set(t, svc, &delivery.Hooks{
			BeforeFanoutTx: func(eventID string) {
				reached <- eventID
				mu.Lock()
				held := eventID == hold
				if held {
					hold = "" // once: a held fanout that meets its event locked by the other snoozes and runs again
				}
				mu.Unlock()
				if held {
					<-release
				}
			},
			FanoutWaits: func(eventID string) { waiting <- eventID },
		})
		holdFanout := func(id string) {
			mu.Lock()
			hold = id
			mu.Unlock()
		}
		next := func(what string) string {
			t.Helper()
			select {
			case id := <-reached:
				return id
			case <-time.After(10 * time.Second):
				t.Fatalf("timed out waiting for %s", what)
				return ""
			}
		}
		errs := make(chan error, 2)
		// holdThenRun starts the fanout of held and, once it waits before
		// its transaction, the fanout of then.
		holdThenRun := func(held, then string) {
			t.Helper()
			holdFanout(held)
			go func() { errs <- svc.Fanout(ctx, held) }()
			if id := next("the held fanout"); id != held {
				t.Fatalf("%s reached its transaction, want %s", id, held)
			}
			go func() { errs <- svc.Fanout(ctx, then) }()
		}
		waits := func(want string) {
			t.Helper()
			select {
			case id := <-waiting:
				if id != want {
					t.Fatalf("%s waits, want %s", id, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("the fanout of %s did not wait for the held one", want)
			}
		}
		finish := func() {
			t.Helper()
			release <- struct{}{}
			for range 2 {
				must(t, <-errs)
			}
			for len(reached) > 0 { // a snoozed fanout's second try: nothing runs now
				<-reached
			}
		}

		// Standard: one delivery at a time an endpoint.
		ids := publishPaid(t, svc, 4)
		must(t, svc.Fanout(ctx, ids[0])) // takes ids[1] along: a whole batch
		next("the first fanout")
		holdThenRun(ids[2], ids[3])
		waits(ids[3])
		finish()

		dbtest.Exec(t, b.db, `UPDATE hookd_owners SET profile = 'kwork' WHERE id = 'acme'`)
		dbtest.Exec(t, b.db, `UPDATE hookd_endpoints SET max_in_flight = 8 WHERE owner_id = 'acme'`)
		ids = publishPaid(t, svc, 4)
		must(t, svc.Fanout(ctx, ids[0]))
		next("the first fanout")
		holdThenRun(ids[2], ids[3])
		if id := next("the second fanout to run beside the held one"); id != ids[3] {
			t.Fatalf("%s reached its transaction, want %s", id, ids[3])
		}
		finish()
		select {
		case id := <-waiting:
			t.Fatalf("%s waited at the gate of a backlogged kwork owner", id)
		default:
		}

		// A fanout that takes nothing along ends the backlog: the next
		// two take turns.
		holdFanout("")
		lone := publishPaid(t, svc, 1)
		must(t, svc.Fanout(ctx, lone[0]))
		next("the lone fanout")
		two := publishPaid(t, svc, 2)
		holdThenRun(two[0], two[1])
		waits(two[1])
		finish()
		if n := dbtest.Count(t, b.db, `SELECT count(*) FROM hookd_events WHERE fanout_job <> 0`); n != 0 {
			t.Fatalf("%d events still awaiting fanout", n)
		}
		if n := dbtest.Count(t, b.db, `SELECT count(*) FROM hookd_deliveries`); n != 11 {
			t.Fatalf("%d deliveries, want 11", n)
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
