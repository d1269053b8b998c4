package e2e_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/owner"
)

// TestBadInput: every client mistake gets a clear JSON error with the right
// status, and writes nothing.
func TestBadInput(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		rc := newReceiver(t)
		b.registerType("good.type")
		ep := b.endpoint(rc.URL, "good.type")
		// Another owner's endpoint, for the 404 rows.
		ctx := context.Background()
		k2, err := b.h.Ops.CreateKey(ctx, "globex", owner.Admin)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("POST", b.api.URL+"/api/admin/webhooks", strings.NewReader(`{"url":"`+rc.URL+`","event_types":["*"]}`))
		req.Header.Set("Authorization", "Bearer "+k2.Secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 201 {
			t.Fatalf("globex endpoint: %v %v", err, resp)
		}
		var foreign endpointOut
		decodeBody(t, resp, &foreign)

		huge := `{"type":"good.type","data":{"x":"` + strings.Repeat("a", 1<<20) + `"}}`
		cases := []struct {
			name, method, path, body string
			key                      string // "" = the admin key; "-" = none
			status                   int
			mentions                 string
		}{
			{"no key", "GET", "/api/admin/webhooks", "", "-", 401, "Authorization"},
			{"bad key", "GET", "/api/admin/webhooks", "", "hkd_nope", 401, "not recognised"},
			{"malformed JSON create", "POST", "/api/admin/webhooks", `{"url":`, "", 400, "malformed"},
			{"malformed JSON publish", "POST", "/api/v1/events", `{nope}`, "", 400, "malformed"},
			{"body not an object", "POST", "/api/v1/events", `[1,2]`, "", 422, "object"},
			{"unknown field", "POST", "/api/admin/webhooks", `{"url":"` + rc.URL + `","event_types":["*"],"colour":"red"}`, "", 422, "colour"},
			{"wrong type", "POST", "/api/admin/webhooks", `{"url":5}`, "", 422, "url"},
			{"url missing", "POST", "/api/admin/webhooks", `{"event_types":["*"]}`, "", 422, "url is required"},
			{"url relative", "POST", "/api/admin/webhooks", `{"url":"/hook","event_types":["*"]}`, "", 422, "url"},
			{"url ftp", "POST", "/api/admin/webhooks", `{"url":"ftp://example.com/x","event_types":["*"]}`, "", 422, "url"},
			{"url internal", "POST", "/api/admin/webhooks", `{"url":"http://10.0.0.1/x","event_types":["*"]}`, "", 422, "10.0.0.1"},
			{"bad glob", "POST", "/api/admin/webhooks", `{"url":"` + rc.URL + `","event_types":["Bad Glob"]}`, "", 422, "glob"},
			{"unregistered type", "POST", "/api/admin/webhooks", `{"url":"` + rc.URL + `","event_types":["nobody.registered"]}`, "", 422, "PUT /api/admin/event_types/nobody.registered"},
			{"update bad url", "PATCH", "/api/admin/webhooks/" + ep.ID, `{"url":"nope"}`, "", 422, "url"},
			{"bad exposure", "PUT", "/api/admin/event_types/a.b", `{"exposure":"public"}`, "", 422, "exposure"},
			{"bad type name", "PUT", "/api/admin/event_types/A%20B", `{"exposure":"webhook"}`, "", 422, "not valid"},
			{"publish no type", "POST", "/api/v1/events", `{"data":{}}`, "", 422, "type is required"},
			{"publish bad data", "POST", "/api/v1/events", `{"type":"good.type","data":"{"}`, "", 422, "data"},
			{"publish bad time", "POST", "/api/v1/events", `{"type":"good.type","occurred_at":"yesterday"}`, "", 422, "RFC 3339"},
			{"publish too large", "POST", "/api/v1/events", huge, "", 413, "bytes"},
			{"batch empty", "POST", "/api/v1/events/batch", `{"events":[]}`, "", 422, "empty"},
			{"deliveries bad limit", "GET", "/api/admin/webhooks/" + ep.ID + "/deliveries?limit=abc", "", "", 422, "limit"},
			{"deliveries limit range", "GET", "/api/admin/webhooks/" + ep.ID + "/deliveries?limit=9999", "", "", 422, "limit"},
			{"unknown route", "GET", "/api/admin/nothing", "", "", 404, "no route"},
			{"foreign get", "GET", "/api/admin/webhooks/" + foreign.ID, "", "", 404, "not found"},
			{"foreign update", "PATCH", "/api/admin/webhooks/" + foreign.ID, `{"enabled":false}`, "", 404, "not found"},
			{"foreign delete", "DELETE", "/api/admin/webhooks/" + foreign.ID, "", "", 404, "not found"},
			{"foreign rotate", "POST", "/api/admin/webhooks/" + foreign.ID + "/rotate_secret", "", "", 404, "not found"},
			{"foreign send_test", "POST", "/api/admin/webhooks/" + foreign.ID + "/send_test", "", "", 404, "not found"},
			{"foreign deliveries", "GET", "/api/admin/webhooks/" + foreign.ID + "/deliveries", "", "", 404, "not found"},
			{"foreign redeliver", "POST", "/api/admin/webhooks/" + foreign.ID + "/redeliver", "", "", 404, "not found"},
			{"missing endpoint", "GET", "/api/admin/webhooks/ep_nope", "", "", 404, "not found"},
			{"other owner named", "GET", "/api/admin/webhooks?owner=globex", "", "", 404, "not found"},
		}
		before := counts(t, b)
		for _, c := range cases {
			req, _ := http.NewRequest(c.method, b.api.URL+c.path, strings.NewReader(c.body))
			switch c.key {
			case "":
				req.Header.Set("Authorization", "Bearer "+b.key)
			case "-":
			default:
				req.Header.Set("Authorization", "Bearer "+c.key)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var out struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			decodeBody(t, resp, &out)
			if resp.StatusCode != c.status {
				t.Errorf("%s: status %d, want %d (%s)", c.name, resp.StatusCode, c.status, out.Error.Message)
				continue
			}
			if out.Error.Code == "" || !strings.Contains(out.Error.Message, c.mentions) {
				t.Errorf("%s: error %+v does not mention %q", c.name, out.Error, c.mentions)
			}
		}
		if after := counts(t, b); after != before {
			t.Fatalf("bad requests wrote something: before %v, after %v", before, after)
		}
		if e := b.getEndpoint(ep.ID); e.URL != rc.URL {
			t.Fatalf("a rejected update changed the endpoint: %+v", e)
		}
	})
}

type rowCounts struct{ events, endpoints, deliveries, jobs, types int }

func counts(t *testing.T, b *bundle) rowCounts {
	t.Helper()
	var c rowCounts
	for q, dst := range map[string]*int{
		"SELECT count(*) FROM hookd_events":                          &c.events,
		"SELECT count(*) FROM hookd_endpoints":                       &c.endpoints,
		"SELECT count(*) FROM hookd_deliveries":                      &c.deliveries,
		"SELECT count(*) FROM river_job WHERE kind LIKE 'webhook.%'": &c.jobs,
		"SELECT count(*) FROM hookd_event_types":                     &c.types,
	} {
		n, err := b.h.DB.Count(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		*dst = n
	}
	return c
}

func decodeBody(t *testing.T, resp *http.Response, v any) {
	t.Helper()
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if len(raw) == 0 {
		return
	}
	if err := jsonUnmarshal(raw, v); err != nil {
		t.Fatalf("decode %q: %v", raw, err)
	}
}

// TestRequestLimits: a request body may be 1 MiB and no more, an event's
// data 256 KiB, and a batch publish takes 1 to 1,000 events.
func TestRequestLimits(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		b.registerType("good.type")
		refused := func(what string, status int, mentions string, body any, path string) {
			t.Helper()
			var out struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			if got := b.do("POST", path, body, &out); got != status || !strings.Contains(out.Error.Message, mentions) {
				t.Errorf("%s: status %d (%+v), want %d naming %q", what, got, out.Error, status, mentions)
			}
		}
		// A body padded with spaces to exactly 1 MiB, then one byte more.
		const small = `{"type":"good.type","data":{}}`
		padded := func(n int) string { return small + strings.Repeat(" ", n-len(small)) }
		b.must(http.StatusAccepted, "POST", "/api/v1/events", padded(1<<20), nil)
		refused("a body of 1 MiB + 1 byte", http.StatusRequestEntityTooLarge, "1048576 bytes", padded(1<<20+1), "/api/v1/events")
		// Data of exactly 256 KiB ({"x":"aaa…"}), then one byte more.
		data := func(n int) string {
			return `{"type":"good.type","data":{"x":"` + strings.Repeat("a", n-len(`{"x":""}`)) + `"}}`
		}
		b.must(http.StatusAccepted, "POST", "/api/v1/events", data(256<<10), nil)
		refused("data of 256 KiB + 1 byte", http.StatusRequestEntityTooLarge, "at most 262144", data(256<<10+1), "/api/v1/events")
		batch := func(n int) map[string]any {
			events := make([]map[string]any, n)
			for i := range events {
				events[i] = map[string]any{"type": "good.type", "data": map[string]int{"i": i}}
			}
			return map[string]any{"events": events}
		}
		b.must(http.StatusAccepted, "POST", "/api/v1/events/batch", batch(1000), nil)
		refused("a batch of 1001", http.StatusUnprocessableEntity, "at most 1000 per batch", batch(1001), "/api/v1/events/batch")
	})
}
