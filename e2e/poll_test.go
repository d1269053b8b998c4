package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/webhook"
)

type pollEndpointOut struct {
	ID        string `json:"id"`
	Kind      string `json:"kind"`
	URL       string `json:"url"`
	Secret    string `json:"secret"`
	PollToken string `json:"poll_token"`
}

type pollMessageOut struct {
	Cursor  string            `json:"cursor"`
	ID      string            `json:"id"`
	EventID string            `json:"event_id"`
	Type    string            `json:"type"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

type pollPageOut struct {
	Data []pollMessageOut `json:"data"`
	Next string           `json:"next"`
}

func (b *bundle) pollEndpoint(globs ...string) pollEndpointOut {
	b.t.Helper()
	var ep pollEndpointOut
	b.must(201, "POST", "/api/admin/webhooks", map[string]any{"kind": "poll", "event_types": globs}, &ep)
	if ep.Kind != "poll" || ep.URL != "" || !strings.HasPrefix(ep.PollToken, "hkp_") {
		b.t.Fatalf("created %+v, want kind poll, no url and a poll token", ep)
	}
	return ep
}

// consumer calls a polling endpoint's consumer route with token (instead
// of the bundle's key) and returns the status and the raw answer.
func (b *bundle) consumer(token, method, path string, body string, header ...string) (int, []byte) {
	b.t.Helper()
	var raw json.RawMessage
	var in any
	if body != "" {
		in = body
	}
	status := (&bundle{t: b.t, api: b.api, key: token}).do(method, path, in, &raw, header...)
	return status, raw
}

func (b *bundle) poll(ep pollEndpointOut, query string) pollPageOut {
	b.t.Helper()
	status, raw := b.consumer(ep.PollToken, "GET", "/api/v1/poll/"+ep.ID+query, "")
	if status != 200 {
		b.t.Fatalf("poll %s%s: %d %s", ep.ID, query, status, raw)
	}
	var page pollPageOut
	if err := json.Unmarshal(raw, &page); err != nil {
		b.t.Fatal(err)
	}
	return page
}

// eventIDs is the events of a page, checking each message's signature
// with the endpoint's secret on the way.
func eventIDs(t *testing.T, secret string, page pollPageOut) []string {
	t.Helper()
	v, err := webhook.NewVerifier(secret)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		h := http.Header{}
		for k, val := range m.Headers {
			h.Set(k, val)
		}
		ev, err := v.Verify(h, []byte(m.Body))
		if err != nil {
			t.Fatalf("message %s does not verify: %v", m.ID, err)
		}
		if ev.ID != m.ID && ev.ID != m.EventID {
			t.Fatalf("message %s verified as %s", m.ID, ev.ID)
		}
		ids = append(ids, m.EventID)
	}
	return ids
}

// publishPolled publishes n events of typ and waits until the polling
// endpoint has them all (fanout is a job).
func (b *bundle) publishPolled(ep pollEndpointOut, typ string, n int) []string {
	b.t.Helper()
	var ids []string
	for range n {
		ids = append(ids, b.publish(typ, `{"n":1}`))
	}
	want := ids[len(ids)-1]
	if !eventually(20*time.Second, func() bool {
		var page pollPageOut
		b.must(200, "GET", "/api/admin/webhooks/"+ep.ID+"/poll?limit=500", nil, &page)
		for _, m := range page.Data {
			if m.EventID == want {
				return true
			}
		}
		return false
	}) {
		b.t.Fatalf("event %s never reached polling endpoint %s", want, ep.ID)
	}
	return ids
}

// TestPollEndpoint: a polling endpoint gets its events in publish order,
// signed as a push would be; cursors page through them, ack keeps the
// position on the server, seek replays; the token is checked, rotatable
// and never shown again.
func TestPollEndpoint(t *testing.T) {
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		b.registerType("order.created")
		ep := b.pollEndpoint("order.*")
		other := b.pollEndpoint("order.*")
		ids := b.publishPolled(ep, "order.created", 5)

		page := b.poll(ep, "?limit=2")
		if got := eventIDs(t, ep.Secret, page); strings.Join(got, ",") != strings.Join(ids[:2], ",") {
			t.Fatalf("first page %v, want %v", got, ids[:2])
		}
		page = b.poll(ep, "?after="+page.Next)
		if got := eventIDs(t, ep.Secret, page); strings.Join(got, ",") != strings.Join(ids[2:], ",") {
			t.Fatalf("second page %v, want %v", got, ids[2:])
		}
		if rest := b.poll(ep, "?after="+page.Next); len(rest.Data) != 0 || rest.Next != page.Next {
			t.Fatalf("after the last: %+v, want nothing and the same cursor", rest)
		}

		// ack: a poll without after starts at the acknowledged position.
		third := b.poll(ep, "?limit=3").Data[2].Cursor
		if status, raw := b.consumer(ep.PollToken, "POST", "/api/v1/poll/"+ep.ID+"/ack", `{"cursor":"`+third+`"}`); status != 200 {
			t.Fatalf("ack: %d %s", status, raw)
		}
		if got := eventIDs(t, ep.Secret, b.poll(ep, "")); strings.Join(got, ",") != strings.Join(ids[3:], ",") {
			t.Fatalf("after the ack %v, want %v", got, ids[3:])
		}
		// seek back to an event replays from it.
		if status, raw := b.consumer(ep.PollToken, "POST", "/api/v1/poll/"+ep.ID+"/seek", `{"event_id":"`+ids[1]+`"}`); status != 200 {
			t.Fatalf("seek: %d %s", status, raw)
		}
		if got := eventIDs(t, ep.Secret, b.poll(ep, "")); strings.Join(got, ",") != strings.Join(ids[1:], ",") {
			t.Fatalf("after the seek %v, want %v", got, ids[1:])
		}
		// the other endpoint got the same events, with its own numbering.
		if got := eventIDs(t, other.Secret, b.poll(other, "")); len(got) != 5 {
			t.Fatalf("other endpoint has %v", got)
		}

		for _, c := range []struct {
			name, token, path string
			want              int
			says              string
		}{
			{"no token", "", "/api/v1/poll/" + ep.ID, 401, "poll token"},
			{"wrong token", "hkp_nope", "/api/v1/poll/" + ep.ID, 401, "unknown poll token"},
			{"another endpoint than the token's", ep.PollToken, "/api/v1/poll/" + other.ID, 404, other.ID},
			{"garbage cursor", ep.PollToken, "/api/v1/poll/" + ep.ID + "?after=abc", 422, "abc"},
			{"another endpoint's cursor", ep.PollToken, "/api/v1/poll/" + ep.ID + "?after=" + b.poll(other, "").Next, 422, "another endpoint"},
			{"bad wait", ep.PollToken, "/api/v1/poll/" + ep.ID + "?wait=forever", 422, "wait"},
		} {
			status, raw := b.consumer(c.token, "GET", c.path, "")
			if status != c.want || !strings.Contains(string(raw), c.says) {
				t.Errorf("%s: %d %s, want %d naming %q", c.name, status, raw, c.want, c.says)
			}
		}

		// rotation: the old token stops at once, the new one works.
		var rotated struct {
			PollToken string `json:"poll_token"`
		}
		b.must(200, "POST", "/api/admin/webhooks/"+ep.ID+"/rotate_poll_token", nil, &rotated)
		if status, _ := b.consumer(ep.PollToken, "GET", "/api/v1/poll/"+ep.ID, ""); status != 401 {
			t.Errorf("old token after rotation: %d, want 401", status)
		}
		ep.PollToken = rotated.PollToken
		b.poll(ep, "")
		var got json.RawMessage
		b.must(200, "GET", "/api/admin/webhooks/"+ep.ID, nil, &got)
		if strings.Contains(string(got), "hkp_") || strings.Contains(string(got), "poll_token") {
			t.Errorf("the endpoint shows its token again: %s", got)
		}
	})
}

// TestPollForeignOwner: a poll token of one owner's endpoint reaches no
// endpoint of another owner (404), and that owner's admin key no poll.
func TestPollForeignOwner(t *testing.T) {
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		pollForeignOwner(t, backend)
	})
}

func pollForeignOwner(t *testing.T, backend dbtest.Backend) {
	b := setup(t, backend)
	b.registerType("order.created")
	mine := b.pollEndpoint("order.*")
	key, err := b.h.CreateAPIKey(context.Background(), "globex", "admin")
	if err != nil {
		t.Fatal(err)
	}
	theirs := &bundle{t: t, h: b.h, api: b.api, key: key, clock: b.clock}
	theirs.registerType("order.created")
	foreign := theirs.pollEndpoint("order.*")
	if status, raw := b.consumer(mine.PollToken, "GET", "/api/v1/poll/"+foreign.ID, ""); status != 404 {
		t.Fatalf("my token on their endpoint: %d %s, want 404", status, raw)
	}
	if status := b.do("GET", "/api/admin/webhooks/"+foreign.ID+"/poll", nil, nil); status != 404 {
		t.Fatalf("my key on their endpoint: %d, want 404", status)
	}
}

// TestLongPollWakes: a long-poll waiting on an endpoint answers with the
// event published while it waited (before its wait ends); on PostgreSQL
// also when the publish happens on another process (NOTIFY).
func TestLongPollWakes(t *testing.T) {
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		b.registerType("order.created")
		ep := b.pollEndpoint("order.*")
		// On PostgreSQL the poll also waits on a process that runs no
		// fanout: only the NOTIFY of another's commit can wake it.
		pollers := []*bundle{b}
		if backend.Name == "postgres" {
			pollers = append(pollers, setup(t, backend, setupOpts{on: b, noWork: true}))
		}
		for _, poller := range pollers {
			start := b.poll(ep, "").Next
			got := make(chan pollPageOut, 1)
			go func() {
				status, raw := poller.consumer(ep.PollToken, "GET", "/api/v1/poll/"+ep.ID+"?wait=50s&after="+start, "")
				var page pollPageOut
				if status == 200 {
					_ = json.Unmarshal(raw, &page)
				}
				got <- page
			}()
			waitPolling(t, poller)
			id := b.publish("order.created", `{"woke":true}`)
			page := <-got
			if len(page.Data) != 1 || page.Data[0].EventID != id {
				t.Fatalf("long-poll answered %+v, want the event %s published while it waited", page, id)
			}
			if status, raw := b.consumer(ep.PollToken, "POST", "/api/v1/poll/"+ep.ID+"/ack", `{"cursor":"`+page.Next+`"}`); status != 200 {
				t.Fatalf("ack: %d %s", status, raw)
			}
		}
	})
}

// waitPolling waits until a poll is waiting in b's process (registered in
// its hub: a publish from now on must wake it).
func waitPolling(t *testing.T, b *bundle) {
	t.Helper()
	if !eventually(10*time.Second, func() bool { return b.h.Delivery.PollHub().Waiting() > 0 }) {
		t.Fatal("no poll ever waited")
	}
}

// TestPollStreamResumes: the SSE stream sends each message with its cursor
// as the event id, and a reconnect with Last-Event-ID resumes after it.
func TestPollStreamResumes(t *testing.T) {
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		b.registerType("order.created")
		ep := b.pollEndpoint("order.*")
		ids := b.publishPolled(ep, "order.created", 3)

		read := func(lastID string, n int) (eventIDs, cursors []string) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", b.api.URL+"/api/v1/poll/"+ep.ID+"/stream", nil)
			req.Header.Set("Authorization", "Bearer "+ep.PollToken)
			if lastID != "" {
				req.Header.Set("Last-Event-ID", lastID)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Fatalf("stream content type %q", ct)
			}
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			var id string
			for len(eventIDs) < n && sc.Scan() {
				line := sc.Text()
				switch {
				case strings.HasPrefix(line, "id: "):
					id = strings.TrimPrefix(line, "id: ")
				case strings.HasPrefix(line, "data: "):
					var m pollMessageOut
					if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &m); err != nil {
						t.Fatal(err)
					}
					if m.Cursor != id {
						t.Fatalf("event id %q, message cursor %q", id, m.Cursor)
					}
					eventIDs, cursors = append(eventIDs, m.EventID), append(cursors, id)
				}
			}
			return eventIDs, cursors
		}
		first, cursors := read("", 2)
		if strings.Join(first, ",") != strings.Join(ids[:2], ",") {
			t.Fatalf("stream sent %v, want %v", first, ids[:2])
		}
		more := b.publishPolled(ep, "order.created", 1)
		rest, _ := read(cursors[1], 2)
		if want := append([]string{ids[2]}, more...); strings.Join(rest, ",") != strings.Join(want, ",") {
			t.Fatalf("resumed stream sent %v, want %v", rest, want)
		}
		if status, raw := b.consumer(ep.PollToken, "GET", "/api/v1/poll/"+ep.ID+"/stream", "", "Last-Event-ID", "garbage"); status != 422 {
			t.Fatalf("stream with a garbage Last-Event-ID: %d %s", status, raw)
		}
	})
}

// TestPollConsumerRestarts: a consumer that keeps no cursor of its own
// (it acks each page, and starts every poll from hookd's position, as a
// restarted one does) gets every event exactly once and in publish order,
// while they are being published.
func TestPollConsumerRestarts(t *testing.T) {
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		b.registerType("order.created")
		ep := b.pollEndpoint("order.*")
		const n = 30
		published := make(chan []string, 1)
		go func() {
			var ids []string
			for i := range n {
				var out struct {
					ID string `json:"id"`
				}
				if status := b.do("POST", "/api/v1/events", map[string]any{"type": "order.created", "subject": "test://x", "data": map[string]int{"n": i}}, &out); status != 202 {
					break
				}
				ids = append(ids, out.ID)
			}
			published <- ids
		}()
		var got []string
		deadline := time.Now().Add(60 * time.Second)
		for len(got) < n && time.Now().Before(deadline) {
			page := b.poll(ep, "?limit=7&wait=5s") // from hookd's position: a fresh consumer
			got = append(got, eventIDs(t, ep.Secret, page)...)
			if len(page.Data) > 0 {
				if status, raw := b.consumer(ep.PollToken, "POST", "/api/v1/poll/"+ep.ID+"/ack", `{"cursor":"`+page.Next+`"}`); status != 200 {
					t.Fatalf("ack: %d %s", status, raw)
				}
			}
		}
		ids := <-published
		if strings.Join(got, ",") != strings.Join(ids, ",") {
			t.Fatalf("the consumer got %d events %v, want the %d published, once each in order: %v", len(got), got, len(ids), ids)
		}
	})
}

// TestPollEndpointSelects: a polling endpoint is chosen as any endpoint
// is (its types and its filter): of four events it gets the one that
// matches both, and nothing of a type it is not subscribed to.
func TestPollEndpointSelects(t *testing.T) {
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		b.registerType("order.created")
		b.registerType("refund.created")
		var ep pollEndpointOut
		b.must(201, "POST", "/api/admin/webhooks", map[string]any{"kind": "poll", "event_types": []string{"order.*"}, "filter": "data.n > 1"}, &ep)
		all := b.pollEndpoint("*") // sees every event: the fanouts are done once it has them all
		b.publish("order.created", `{"n":1}`)
		want := b.publish("order.created", `{"n":2}`)
		b.publish("refund.created", `{"n":3}`)
		if !eventually(20*time.Second, func() bool { return len(b.poll(all, "").Data) == 3 }) {
			t.Fatal("the three events never all reached the polling endpoint subscribed to everything")
		}
		if got := eventIDs(t, ep.Secret, b.poll(ep, "")); strings.Join(got, ",") != want {
			t.Fatalf("the filtered polling endpoint has %v, want only %s", got, want)
		}
	})
}
