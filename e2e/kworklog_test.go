package e2e_test

// The kwork delivery log: its window, retention, send-test and redeliver.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/profile"
)

// TestKworkDeliveryLogWindow: a subscription's log lists its newest 50
// deliveries: type, time, attempts, last status or error, state — no
// duration, no body.
func TestKworkDeliveryLogWindow(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		shop := b.kworkOwner("shop", shopApp)
		rc := newReceiver(t)
		rc.setRespond(func(r *http.Request, _ int) (int, http.Header) {
			switch r.Header.Get("X-Kwork-Event") {
			case "order.reject":
				return 400, nil
			case "order.flaky":
				return 500, nil
			}
			return 200, nil
		})
		for _, typ := range []string{"order.created", "order.reject", "order.flaky"} {
			shop.registerType(typ)
		}
		ep := shop.subscribe(rc.URL, []string{"order.*"}, nil)
		const bulk = 3 * wait // 60 deliveries on a loaded CI machine
		allDelivered := func(n int) {
			t.Helper()
			var ds []deliveryOut
			ok := eventually(bulk, func() bool {
				ds = shop.deliveries(ep.ID)
				done := len(ds) == n
				for _, d := range ds {
					done = done && d.State == "delivered"
				}
				return done
			})
			if !ok {
				t.Fatalf("want %d delivered records, have %+v", n, ds)
			}
		}
		old := shop.publishMany("order.created", 10)
		rc.waitFor(t, 10, bulk)
		allDelivered(10)
		newer := shop.publishMany("order.created", 48)
		rc.waitFor(t, 58, bulk)
		allDelivered(50) // the window already shows only 50 of 58
		reject := shop.publishFor("order.reject", "acme_corp", `{}`)
		shop.exhaust(ep.ID, reject) // a 400 is retried too, until the sends run out
		// Clear the failure so the next event is sent at once, not after the
		// failing endpoint's cooldown.
		shop.must(200, "PATCH", "/api/admin/webhooks/"+ep.ID, map[string]any{"enabled": true}, nil)
		flaky := shop.publishFor("order.flaky", "acme_corp", `{}`)
		shop.waitDelivery(ep.ID, flaky, wait, func(d deliveryOut) bool { return d.Attempts == 1 })

		var page struct {
			Data []map[string]json.RawMessage `json:"data"`
			Next string                       `json:"next"`
		}
		shop.must(200, "GET", "/api/admin/webhooks/"+ep.ID+"/deliveries?limit=500", nil, &page)
		if len(page.Data) != 50 || page.Next != "" {
			t.Fatalf("log has %d records (next %q), want exactly the newest 50", len(page.Data), page.Next)
		}
		want := map[string]bool{reject: true, flaky: true}
		for _, id := range newer {
			want[id] = true
		}
		var prevID string
		var prevAt time.Time
		for i, rec := range page.Data {
			var d struct {
				ID         string    `json:"id"`
				EventID    string    `json:"event_id"`
				EventType  string    `json:"event_type"`
				CreatedAt  time.Time `json:"created_at"`
				Attempts   *int      `json:"attempts"`
				LastStatus int       `json:"last_status"`
				LastError  string    `json:"last_error"`
				State      string    `json:"state"`
			}
			raw, _ := json.Marshal(rec)
			if err := json.Unmarshal(raw, &d); err != nil {
				t.Fatal(err)
			}
			if !want[d.EventID] {
				t.Fatalf("record %d is for %s, not one of the newest 50 (old ones: %v)", i, d.EventID, slices.Contains(old, d.EventID))
			}
			delete(want, d.EventID)
			// Newest first by delivery id: a ULID, so ordered by creation
			// time to the millisecond (ties within one are in any order).
			if i > 0 && (d.ID >= prevID || d.CreatedAt.Truncate(time.Millisecond).After(prevAt.Truncate(time.Millisecond))) {
				t.Fatalf("record %d is not older than record %d", i, i-1)
			}
			prevID, prevAt = d.ID, d.CreatedAt
			if d.EventType == "" || d.CreatedAt.IsZero() || d.Attempts == nil || *d.Attempts < 1 {
				t.Fatalf("record lacks type, time or attempts: %s", raw)
			}
			switch d.EventID {
			case reject:
				if d.State != "failed" || d.LastStatus != 400 || d.LastError == "" {
					t.Fatalf("rejected delivery: %s", raw)
				}
			case flaky:
				if d.State != "pending" || d.LastStatus != 500 || d.LastError == "" {
					t.Fatalf("retrying delivery: %s", raw)
				}
			default:
				if d.State != "delivered" || d.LastStatus != 200 || d.EventType != "order.created" {
					t.Fatalf("delivered record: %s", raw)
				}
			}
			for k := range rec {
				lk := strings.ToLower(k)
				for _, banned := range []string{"duration", "latency", "elapsed", "took", "body", "response", "request", "payload", "data"} {
					if strings.Contains(lk, banned) {
						t.Fatalf("record has field %q: the kwork log keeps no duration and no body", k)
					}
				}
			}
		}
		if newest := string(page.Data[0]["event_id"]); newest != strconv.Quote(flaky) {
			t.Fatalf("newest record is for %s, want the last published event %s", newest, flaky)
		}
		// No paging past the window; smaller pages still work.
		var past struct {
			Data []json.RawMessage `json:"data"`
		}
		var last struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(mustJSON(t, page.Data[49]), &last)
		shop.must(200, "GET", "/api/admin/webhooks/"+ep.ID+"/deliveries?before="+last.ID, nil, &past)
		if len(past.Data) != 0 {
			t.Fatalf("paging past the window returned %d records", len(past.Data))
		}
		if got := len(shop.deliveries(ep.ID)); got != 50 {
			t.Fatalf("default page %d records, want 50", got)
		}
		shop.must(200, "GET", "/api/admin/webhooks/"+ep.ID+"/deliveries?limit=10", nil, &past)
		if len(past.Data) != 10 {
			t.Fatalf("limit=10 gave %d", len(past.Data))
		}
	})
}

// TestKworkRetention: finished records are deleted 30 days after they
// finished; unfinished ones stay; deleting a subscription deletes its
// records at once.
func TestKworkRetention(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		shop := b.kworkOwner("shop", shopApp)
		ok, failing, bad := newReceiver(t), newReceiver(t), newReceiver(t)
		failing.setRespond(status(500))
		bad.setRespond(status(400))
		for _, typ := range []string{"order.ok", "order.retry", "order.bad"} {
			shop.registerType(typ)
		}
		epOK := shop.subscribe(ok.URL, []string{"order.ok"}, nil)
		epRetry := shop.subscribe(failing.URL, []string{"order.retry"}, nil)
		epBad := shop.subscribe(bad.URL, []string{"order.bad"}, nil)

		delivered := shop.publishFor("order.ok", "acme_corp", `{}`)
		pending := shop.publishFor("order.retry", "acme_corp", `{}`)
		failed := shop.publishFor("order.bad", "acme_corp", `{}`)
		shop.waitDelivery(epOK.ID, delivered, wait, func(d deliveryOut) bool { return d.State == "delivered" })
		d := shop.waitDelivery(epRetry.ID, pending, wait, func(d deliveryOut) bool { return d.Attempts == 1 })
		b.waitJob(d.JobID, waitingRetry)
		shop.exhaust(epBad.ID, failed)

		prune := func() int64 {
			t.Helper()
			n, _, err := b.h.Delivery.Prune(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		ids := func(epID string) []string {
			var out []string
			for _, d := range shop.deliveries(epID) {
				out = append(out, d.EventID)
			}
			return out
		}

		// Just short of 30 days: nothing goes.
		b.clock.Advance(30*24*time.Hour - time.Hour)
		if n := prune(); n != 0 {
			t.Fatalf("pruned %d records younger than 30 days", n)
		}
		recent := shop.publishFor("order.ok", "acme_corp", `{}`)
		shop.waitDelivery(epOK.ID, recent, wait, func(d deliveryOut) bool { return d.State == "delivered" })

		// Past 30 days: the two finished records go from the log at once; the
		// pending one and the recent one stay. Their rows are deleted now, or
		// (PostgreSQL's daily partitions) with the partition that holds the
		// cutoff, which the row loop leaves to its drop.
		b.clock.Advance(2 * time.Hour)
		if n := prune(); n != 2 && (backend.Name == "sqlite" || n != 0) {
			t.Fatalf("pruned %d records, want the 2 finished over 30 days ago (or, partitioned, none yet)", n)
		}
		if got := ids(epOK.ID); !slices.Equal(got, []string{recent}) {
			t.Fatalf("subscription log after 30 days: %v, want only %s", got, recent)
		}
		if got := ids(epBad.ID); len(got) != 0 {
			t.Fatalf("failed record older than 30 days kept: %v", got)
		}
		if got := shop.deliveries(epRetry.ID); len(got) != 1 || got[0].EventID != pending || got[0].State != "pending" {
			t.Fatalf("unfinished record: %+v", got)
		}

		// A day later no row of them is left, whatever the layout.
		b.clock.Advance(25 * time.Hour)
		prune()
		if n := dbtest.Count(t, b.h.DB, `SELECT count(*) FROM hookd_deliveries WHERE event_id IN ($1, $2)`, delivered, failed); n != 0 {
			t.Fatalf("%d rows of the expired records left a day after they expired", n)
		}

		// Deleting a subscription deletes its records at once, finished or not.
		for _, id := range []string{epOK.ID, epRetry.ID} {
			shop.must(204, "DELETE", "/api/admin/webhooks/"+id, nil, nil)
			left, err := b.h.DB.Q().ListDeliveries(context.Background(), "shop", id, 500, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(left) != 0 {
				t.Fatalf("subscription %s deleted but %d records remain", id, len(left))
			}
			shop.must(404, "GET", "/api/admin/webhooks/"+id+"/deliveries", nil, nil)
		}
	})
}

// TestKworkSendTestAndRedeliver: send_test sends open.ping to that one
// subscription as a new event (not a resend of anything); redeliver re-sends
// a failed delivery with its X-Kwork-Delivery and body unchanged.
func TestKworkSendTestAndRedeliver(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		shop := b.kworkOwner("shop", shopApp)
		rc, star, none := newReceiver(t), newReceiver(t), newReceiver(t)
		rc.setRespond(status(400)) // the order is refused until its sends run out
		shop.registerType("order.paid")
		ep := shop.subscribe(rc.URL, []string{"order.paid"}, nil)
		epStar := shop.subscribe(star.URL, []string{"*"}, nil)
		epNone := shop.subscribe(none.URL, nil, nil)

		order := shop.publishFor("order.paid", "acme_corp", `{"order":"o_1"}`)
		failed := shop.exhaust(ep.ID, order)
		sends := profile.KworkRetry.MaxAttempts
		orderReq := rc.waitFor(t, sends, wait)[sends-1]

		rc.setRespond(status(200))
		// The failure made the subscription "failing". A failing
		// endpoint's new deliveries wait out a 5-minute cooldown, but not
		// a test event, which goes at once
		// (TestKworkSendTestOnFailingSubscription): clearing the failure
		// here is what an owner who fixed the receiver does, not what lets
		// open.ping go.
		shop.must(200, "PATCH", "/api/admin/webhooks/"+ep.ID, map[string]any{"enabled": true}, nil)
		ping := shop.sendTest(ep.ID)
		if ping == order {
			t.Fatal("send_test reused the failed event")
		}
		shop.fanoutNow(ping)

		pd := shop.waitDelivery(ep.ID, ping, wait, func(d deliveryOut) bool { return d.State == "delivered" })
		r := rc.waitFor(t, sends+1, wait)[sends]
		env := checkKwork(t, ep.Secret, r)
		if env.Type != "open.ping" || env.ID != ping || r.Header.Get("X-Kwork-Event") != "open.ping" {
			t.Fatalf("test request: %+v", env)
		}
		if r.Header.Get("X-Kwork-Delivery") != pd.ID || pd.ID == failed.ID || pd.Attempts != 1 {
			t.Fatalf("open.ping delivery %+v reuses the failed delivery %s", pd, failed.ID)
		}
		// Not a redelivery: the failed order stays failed and unsent.
		if d := shop.deliveryOf(ep.ID, order); d == nil || d.State != "failed" || d.Attempts != sends {
			t.Fatalf("send_test touched the failed delivery: %+v", d)
		}
		// That subscription only: the "*" and the empty one have no record of it.
		for _, other := range []string{epStar.ID, epNone.ID} {
			if d := shop.deliveryOf(other, ping); d != nil {
				t.Fatalf("open.ping reached subscription %s: %+v", other, d)
			}
		}
		for _, r := range star.receipts() {
			if r.Header.Get("X-Kwork-Event") == "open.ping" {
				t.Fatal("open.ping reached the * subscription")
			}
		}
		if n := len(none.receipts()); n != 0 {
			t.Fatalf("the subscription listing nothing got %d requests", n)
		}
		// A second send_test is another new event, not a resend.
		if again := shop.sendTest(ep.ID); again == ping {
			t.Fatal("second send_test resent the first test event")
		}
		rc.waitFor(t, sends+2, wait)

		// Redeliver: the failed order again, same delivery id and body.
		var red struct {
			Redelivered int `json:"redelivered"`
		}
		shop.must(202, "POST", "/api/admin/webhooks/"+ep.ID+"/redeliver", nil, &red)
		if red.Redelivered != 1 {
			t.Fatalf("redelivered %d, want 1 (the failed order only)", red.Redelivered)
		}
		d := shop.waitDelivery(ep.ID, order, wait, func(d deliveryOut) bool { return d.State == "delivered" })
		var again receipt
		for _, r := range rc.waitFor(t, sends+3, wait) {
			if r.Header.Get("X-Kwork-Event") == "order.paid" && r.At.After(orderReq.At) {
				again = r
			}
		}
		if again.Body == nil || again.Header.Get("X-Kwork-Delivery") != orderReq.Header.Get("X-Kwork-Delivery") || again.Header.Get("X-Kwork-Delivery") != d.ID || !bytes.Equal(again.Body, orderReq.Body) {
			t.Fatalf("redelivered request differs: %q vs %q", again.Header.Get("X-Kwork-Delivery"), orderReq.Header.Get("X-Kwork-Delivery"))
		}
		checkKwork(t, ep.Secret, again)
		if d.LastStatus != 200 || d.Attempts < 1 {
			t.Fatalf("redelivered record %+v", d)
		}
		if n := len(rc.receipts()); n != sends+3 {
			t.Fatalf("receiver got %d requests, want %d (the order's sends, 2 pings, the redelivered order)", n, sends+3)
		}
	})
}
