package e2e_test

import (
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/dbtest"
)

type eventListOut struct {
	Data []struct {
		ID          string    `json:"id"`
		Type        string    `json:"type"`
		Subject     string    `json:"subject"`
		PublishedAt time.Time `json:"published_at"`
	} `json:"data"`
	NextCursor string `json:"next_cursor"`
}

// publishAbout publishes one event of typ about subject and returns its id.
func (b *bundle) publishAbout(typ, subject string) string {
	b.t.Helper()
	var out struct {
		ID string `json:"id"`
	}
	b.must(202, "POST", "/api/v1/events", map[string]any{"type": typ, "subject": subject, "data": json.RawMessage(`{}`)}, &out)
	return out.ID
}

// listEvents pages through events.list with query q to the end, limit a
// page, and returns every id in the order answered and the pages taken.
func (b *bundle) listEvents(q url.Values, limit int) (ids []string, pages int) {
	b.t.Helper()
	q.Set("limit", strconv.Itoa(limit))
	for {
		var page eventListOut
		b.must(200, "GET", "/api/v1/events?"+q.Encode(), nil, &page)
		pages++
		for _, e := range page.Data {
			ids = append(ids, e.ID)
		}
		if page.NextCursor == "" {
			return ids, pages
		}
		if len(page.Data) != limit {
			b.t.Fatalf("a page with a next cursor had %d events, want %d", len(page.Data), limit)
		}
		q.Set("cursor", page.NextCursor)
	}
}

// TestEventsList: events.list answers exactly the owner's events that
// match the type glob, the subject prefix and the window, newest first,
// each once across pages; another owner's never; bad input 422.
func TestEventsList(t *testing.T) {
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend, setupOpts{noWork: true})
		// Two hours of events: invoices and orders, about two customers.
		type pub struct {
			id, typ, subject string
			at               time.Time
		}
		var all []pub
		for i := range 12 {
			typ := []string{"invoice.paid", "invoice.created", "order_x.shipped"}[i%3]
			subject := []string{"invoice://cus_1/", "invoice://cus_2/"}[i%2] + strconv.Itoa(i)
			at := b.clock.Now() // the event's publish time is at or after it
			all = append(all, pub{b.publishAbout(typ, subject), typ, subject, at})
			b.clock.Advance(10 * time.Minute)
		}
		bob := ownerBundle(b, "bob")
		bobs := bob.publishAbout("invoice.paid", "invoice://cus_1/bob")

		want := func(keep func(p pub) bool) []string {
			var ids []string
			for _, p := range slices.Backward(all) {
				if keep(p) {
					ids = append(ids, p.id)
				}
			}
			return ids
		}
		start, end := all[3].at, all[9].at
		for _, c := range []struct {
			name  string
			q     url.Values
			limit int
			want  []string
		}{
			{"everything, 5 a page", url.Values{}, 5, want(func(pub) bool { return true })},
			{"type glob", url.Values{"type": {"invoice.*"}}, 3, want(func(p pub) bool { return strings.HasPrefix(p.typ, "invoice.") })},
			{"an underscore is no wildcard", url.Values{"type": {"order_x.*"}}, 50, want(func(p pub) bool { return p.typ == "order_x.shipped" })},
			{"subject prefix", url.Values{"subject_prefix": {"invoice://cus_2/"}}, 4, want(func(p pub) bool { return strings.HasPrefix(p.subject, "invoice://cus_2/") })},
			{"window", url.Values{"since": {start.Format(time.RFC3339Nano)}, "until": {end.Format(time.RFC3339Nano)}}, 2,
				want(func(p pub) bool { return !p.at.Before(start) && p.at.Before(end) })},
			{"all three", url.Values{"type": {"invoice.paid"}, "subject_prefix": {"invoice://cus_1/"}, "since": {start.Format(time.RFC3339Nano)}}, 1,
				want(func(p pub) bool {
					return p.typ == "invoice.paid" && strings.HasPrefix(p.subject, "invoice://cus_1/") && !p.at.Before(start)
				})},
		} {
			got, pages := b.listEvents(c.q, c.limit)
			if !slices.Equal(got, c.want) {
				t.Errorf("%s: got %v, want %v", c.name, got, c.want)
			}
			if wantPages := max(1, (len(c.want)+c.limit-1)/c.limit); pages != wantPages && pages != wantPages+1 {
				t.Errorf("%s: %d pages of %d for %d events", c.name, pages, c.limit, len(c.want))
			}
			if slices.Contains(got, bobs) {
				t.Errorf("%s: bob's event listed for acme", c.name)
			}
		}
		if got, _ := bob.listEvents(url.Values{}, 50); !slices.Equal(got, []string{bobs}) {
			t.Errorf("bob's list = %v, want his one event", got)
		}
		now := b.clock.Now()
		for _, c := range []struct{ q, want string }{
			{"since=" + url.QueryEscape(now.Format(time.RFC3339)) + "&until=" + url.QueryEscape(now.Add(-time.Hour).Format(time.RFC3339)), "must be before until"},
			{"since=yesterday", `since "yesterday" is not an RFC 3339 time`},
			{"cursor=garbage", `cursor "garbage" is not a cursor of events.list`},
			{"type=Invoice%3B", "event type glob"},
			{"limit=201", "limit 201: give 1 to 200"},
		} {
			var e struct {
				Error struct{ Message string } `json:"error"`
			}
			if code := b.do("GET", "/api/v1/events?"+c.q, nil, &e); code != 422 || !strings.Contains(e.Error.Message, c.want) {
				t.Errorf("?%s: %d %q, want 422 with %q", c.q, code, e.Error.Message, c.want)
			}
		}
	})
}

// TestEventsResend: events.resend sends one event again to the endpoints
// it went to, or only to those named; a named endpoint subscribed since
// gets it too; one not subscribed answers 422, another owner's endpoint or
// event 404, and none of those sends anything.
func TestEventsResend(t *testing.T) {
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		b.registerType("order.created")
		b.registerType("invoice.paid")
		rc := newReceiver(t)
		one := b.endpoint(rc.URL+"/one", "order.*")
		two := b.endpoint(rc.URL+"/two", "order.created")
		other := b.endpoint(rc.URL+"/other", "invoice.*")
		id := b.publish("order.created", `{"n":1}`)
		for _, ep := range []endpointOut{one, two} {
			b.waitDelivery(ep.ID, id, 20*time.Second, func(d deliveryOut) bool { return d.State == "delivered" })
		}
		rc.waitFor(t, 2, 20*time.Second)
		paths := func(from int) []string {
			var ps []string
			for _, r := range rc.receipts()[from:] {
				ps = append(ps, r.Path)
			}
			slices.Sort(ps)
			return ps
		}

		var got struct{ Resent, Pending, Disabled []string }
		b.must(202, "POST", "/api/v1/events/"+id+"/resend", map[string]any{}, &got)
		if want := []string{one.ID, two.ID}; !slices.Equal(sorted(got.Resent), sorted(want)) || len(got.Pending)+len(got.Disabled) != 0 {
			t.Fatalf("resend = %+v, want both endpoints", got)
		}
		rc.waitFor(t, 4, 20*time.Second)
		if p := paths(2); !slices.Equal(p, []string{"/one", "/two"}) {
			t.Fatalf("after the resend the receiver got %v, want /one and /two once each", p)
		}
		for _, ep := range []endpointOut{one, two} {
			b.waitDelivery(ep.ID, id, 20*time.Second, func(d deliveryOut) bool { return d.State == "delivered" })
		}

		// Only the one named; and one subscribed since the event.
		three := b.endpoint(rc.URL+"/three", "order.*")
		b.must(202, "POST", "/api/v1/events/"+id+"/resend", map[string]any{"endpoint_ids": []string{two.ID, three.ID}}, &got)
		if !slices.Equal(sorted(got.Resent), sorted([]string{two.ID, three.ID})) {
			t.Fatalf("resend to two and three = %+v", got)
		}
		rc.waitFor(t, 6, 20*time.Second)
		if p := paths(4); !slices.Equal(p, []string{"/three", "/two"}) {
			t.Fatalf("after the named resend the receiver got %v, want /three and /two", p)
		}
		b.waitDelivery(three.ID, id, 20*time.Second, func(d deliveryOut) bool { return d.State == "delivered" })

		bob := ownerBundle(b, "bob")
		bob.registerType("order.created")
		bobEP := bob.endpoint(rc.URL+"/bob", "order.*")
		bobEvent := bob.publish("order.created", `{"bob":true}`)
		rc.waitFor(t, 7, 20*time.Second)
		before := len(rc.receipts())
		for _, c := range []struct {
			name, event string
			body        map[string]any
			code        int
			want        string
		}{
			{"not subscribed", id, map[string]any{"endpoint_ids": []string{other.ID}}, 422, "is not subscribed to order.created"},
			{"another owner's endpoint", id, map[string]any{"endpoint_ids": []string{bobEP.ID}}, 404, "not found"},
			{"another owner's event", bobEvent, map[string]any{}, 404, "not found"},
			{"no such event", "evt_01J0000000000000000000000", map[string]any{}, 404, "not found"},
		} {
			var e struct {
				Error struct{ Message string } `json:"error"`
			}
			if code := b.do("POST", "/api/v1/events/"+c.event+"/resend", c.body, &e); code != c.code || !strings.Contains(e.Error.Message, c.want) {
				t.Errorf("%s: %d %q, want %d with %q", c.name, code, e.Error.Message, c.code, c.want)
			}
		}
		// Nothing was enqueued by the refusals: a test event to one
		// endpoint is the next and only request.
		sent := b.sendTestTo(one.ID)
		rc.waitFor(t, before+1, 20*time.Second)
		b.waitDelivery(one.ID, sent, 20*time.Second, func(d deliveryOut) bool { return d.State == "delivered" })
		if n := len(rc.receipts()); n != before+1 {
			t.Fatalf("the refused resends sent %d requests", n-before-1)
		}
	})
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
