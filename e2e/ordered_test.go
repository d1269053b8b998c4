package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/dbtest"
)

// TestOrderedDelivery: 20 events, published one by one, to an ordered
// endpoint whose receiver answers 500 to the 3rd event's first attempt
// (then 2xx): the first 2xx of each event arrives in publish order, one
// request at a time, and while the 3rd waits for its retry the log shows
// every later delivery waiting behind it. A second endpoint answers 400
// (discard) to its 3rd event: the discard lets the next go at once.
func TestOrderedDelivery(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		b.registerType("seq.step")
		// The receiver holds its first request until all 20 are published
		// (one by one: 20 fanouts), so none is published while the endpoint
		// is failing (that would schedule it 5 min out: the cooldown). It
		// refuses the first request of the 3rd distinct event it sees (with
		// ordering, the 3rd published) with code.
		published := make(chan struct{})
		third := func(code int) func(r *http.Request, _ int) (int, http.Header) {
			var mu sync.Mutex
			var order []string
			tried := false
			return func(r *http.Request, _ int) (int, http.Header) {
				<-published
				mu.Lock()
				defer mu.Unlock()
				id := r.Header.Get("webhook-id")
				if !slices.Contains(order, id) {
					order = append(order, id)
				}
				if len(order) == 3 && order[2] == id && !tried {
					tried = true
					return code, nil
				}
				return 200, nil
			}
		}
		retried, discarded := newReceiver(t), newReceiver(t)
		retried.setRespond(third(500))
		discarded.setRespond(third(400))
		epR := b.subscribe(retried.URL, []string{"seq.step"}, map[string]any{"ordered": true})
		epD := b.subscribe(discarded.URL, []string{"seq.step"}, map[string]any{"ordered": true})
		if c := b.getEndpointControls(epR.ID); !c.Ordered {
			t.Fatal("record does not show ordered: true")
		}
		ids := make([]string, 20)
		for i := range ids {
			ids[i] = b.publish("seq.step", fmt.Sprintf(`{"n":%d}`, i))
		}
		// …and fanned out: a fanout after the 500 would find the endpoint
		// failing and schedule its delivery 5 min out (the cooldown).
		if !eventually(30*time.Second, func() bool { return len(b.deliveries(epR.ID)) == 20 && len(b.deliveries(epD.ID)) == 20 }) {
			t.Fatal("20 events were not fanned out to both endpoints within 30 s")
		}
		close(published)

		// The discard lets the rest go: all but the 3rd well before the
		// 5 s the 500's retry waits.
		if !eventually(time.Minute, func() bool { return len(discarded.receipts()) >= 20 }) {
			b.logDeliveries(epD.ID)
			t.Fatalf("discarded: %d of 20 arrived", len(discarded.receipts()))
		}
		checkOrder(t, "discarded", arrivalIDs(discarded.receipts()), ids, 2)
		if d := b.waitDelivery(epD.ID, ids[2], wait, func(d deliveryOut) bool { return d.State != "pending" }); d.State != "failed" || d.Attempts != 1 {
			t.Fatalf("the 400'd delivery = %+v, want failed after 1 attempt", d)
		}

		// While the 3rd waits for its retry, the log says what waits behind it.
		// (Under load the retry may already have come: then there is
		// nothing left waiting to look at.)
		head := b.waitDelivery(epR.ID, ids[2], wait, func(d deliveryOut) bool { return d.Attempts >= 1 })
		if head.State == "pending" {
			waiting, wrong := 0, ""
			for _, d := range b.deliveriesWaiting(epR.ID) {
				if d.State == "pending" && d.ID != head.ID {
					if d.WaitingFor != head.ID && wrong == "" {
						wrong = fmt.Sprintf("pending delivery %s shows waiting_for %q, want the head %s", d.ID, d.WaitingFor, head.ID)
					}
					waiting++
				}
			}
			// The retry may have come between the two reads: then the
			// next event is the head and nothing is wrong. Otherwise the
			// head still waits, and every other pending one must name it.
			still := b.waitDelivery(epR.ID, ids[2], wait, func(deliveryOut) bool { return true }).State == "pending"
			switch {
			case wrong != "" && still:
				t.Fatal(wrong)
			case waiting == 0 && still:
				t.Fatal("nothing waits behind a failing head of an ordered endpoint")
			}
		}
		if !eventually(time.Minute, func() bool { return len(retried.receipts()) >= 21 }) { // 20 events + the 3rd's retry
			b.logDeliveries(epR.ID)
			t.Fatalf("retried: %d of 21 requests arrived", len(retried.receipts()))
		}
		got := retried.receipts()
		checkOrder(t, "retried", arrivalIDs(got), ids, -1)
		if m := retried.maxInFl.Load(); m != 1 {
			t.Fatalf("%d requests in flight at once to an ordered endpoint, want 1", m)
		}

		// ordered needs one in flight: a kwork subscription with parallel
		// slots is refused, one with max_in_flight 1 is accepted.
		shop := b.kworkOwner("shop", shopApp)
		shop.registerType("seq.step")
		if st := shop.do("POST", "/api/admin/webhooks", map[string]any{"url": retried.URL, "event_types": []string{"seq.step"}, "ordered": true}, nil); st != 422 {
			t.Fatalf("ordered kwork subscription with parallel slots: status %d, want 422", st)
		}
		shop.subscribe(retried.URL, []string{"seq.step"}, map[string]any{"ordered": true, "max_in_flight": 1})
	})
}

// arrivalIDs returns the webhook-id of every request, in arrival order.
func arrivalIDs(rs []receipt) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Header.Get("webhook-id")
	}
	return out
}

// checkOrder fails unless each event's first 2xx arrived in publish
// order. The 3rd event's first arrival was refused (400 or 500); it is
// expected again (retried) unless skip is its index (discarded).
func checkOrder(t *testing.T, what string, arrivals, ids []string, skip int) {
	t.Helper()
	var got []string
	seen := map[string]bool{}
	refused := map[string]bool{}
	for _, id := range arrivals {
		if id == ids[2] && !refused[id] {
			refused[id] = true // its first attempt was answered 400/500
			continue
		}
		if !seen[id] {
			seen[id] = true
			got = append(got, id)
		}
	}
	var want []string
	for i, id := range ids {
		if i != skip {
			want = append(want, id)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: first 2xx per event in order\n%v\nwant publish order\n%v", what, got, want)
	}
}

type waitingOut struct {
	ID         string `json:"id"`
	State      string `json:"state"`
	WaitingFor string `json:"waiting_for"`
}

func (b *bundle) deliveriesWaiting(epID string) []waitingOut {
	b.t.Helper()
	var out struct {
		Data []waitingOut `json:"data"`
	}
	b.must(200, "GET", "/api/admin/webhooks/"+epID+"/deliveries", nil, &out)
	return out.Data
}

// logDeliveries logs an endpoint's delivery log (when a test is about to fail).
func (b *bundle) logDeliveries(epID string) {
	for _, d := range b.deliveries(epID) {
		b.t.Logf("%s %s %s attempts=%d next=%v job=%d %s", d.ID, d.EventID, d.State, d.Attempts, d.NextAttemptAt, d.JobID, d.LastError)
		if j, err := b.h.Jobs.JobGet(context.Background(), d.JobID); err == nil {
			b.t.Logf("  job %d %s attempt %d scheduled %v errors %d", j.ID, j.State, j.Attempt, j.ScheduledAt, len(j.Errors))
		}
	}
}
