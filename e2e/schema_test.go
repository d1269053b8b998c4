package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	"github.com/hookd/hookd"
	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/store"
)

const orderSchema = `{
	"type": "object",
	"properties": {
		"order_id": {"type": "string", "pattern": "^ord_"},
		"amount": {"type": "integer", "minimum": 0}
	},
	"required": ["order_id", "amount"]
}`

type schemaTypeOut struct {
	Name     string          `json:"name"`
	Exposure string          `json:"exposure"`
	Schema   json.RawMessage `json:"schema"`
	Example  json.RawMessage `json:"example"`
}

type errorOut struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// refused sends a request that must be answered 422 and returns the
// error's message, which must mention every one of mentions.
func (b *bundle) refused(method, path string, body any, mentions ...string) string {
	b.t.Helper()
	var out errorOut
	if got := b.do(method, path, body, &out); got != 422 {
		b.t.Fatalf("%s %s: status %d, want 422: %+v", method, path, got, out)
	}
	for _, m := range mentions {
		if !strings.Contains(out.Error.Message, m) {
			b.t.Fatalf("%s %s: message %q does not mention %q", method, path, out.Error.Message, m)
		}
	}
	return out.Error.Message
}

func (b *bundle) countEvents() int {
	b.t.Helper()
	n, err := b.h.DB.Count(context.Background(), `SELECT count(*) FROM hookd_events`)
	if err != nil {
		b.t.Fatal(err)
	}
	return n
}

// TestEventTypeSchema: a type's schema is checked when it is set (a bad
// one, or an example that does not match it, is refused and nothing is
// written), shown by get and list, and enforced on every publish: single,
// batch (all or none) and after an update, at once, in another process on
// the same database too.
func TestEventTypeSchema(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		other := setup(t, backend, setupOpts{on: b}) // a second process
		const path = "/api/admin/event_types/order.paid"

		before := counts(t, b)
		b.refused("PUT", path, map[string]any{"exposure": "webhook", "schema": json.RawMessage(`{"type": "objekt"}`)}, "schema/type")
		b.refused("PUT", path, map[string]any{"exposure": "webhook", "schema": json.RawMessage(`{"$ref": "file:///etc/passwd"}`)}, "schema", "external")
		b.refused("PUT", path, map[string]any{"exposure": "webhook", "schema": json.RawMessage(orderSchema),
			"example": json.RawMessage(`{"order_id": "ord_1", "amount": -5}`)}, "example/amount", "minimum")
		b.refused("PUT", path, map[string]any{"exposure": "webhook", "example": json.RawMessage(`[1]`)}, "example")
		if after := counts(t, b); after != before {
			t.Fatalf("refused schemas wrote something: before %v, after %v", before, after)
		}
		var missing errorOut
		if got := b.do("GET", path, nil, &missing); got != 404 {
			t.Fatalf("GET of a type never registered: %d %+v, want 404", got, missing)
		}

		example := `{"order_id":"ord_1","amount":1250}`
		var put schemaTypeOut
		b.must(200, "PUT", path, map[string]any{"exposure": "webhook", "schema": json.RawMessage(orderSchema), "example": json.RawMessage(example)}, &put)
		var got schemaTypeOut
		b.must(200, "GET", path, nil, &got)
		var list struct{ Data []schemaTypeOut }
		b.must(200, "GET", "/api/admin/event_types", nil, &list)
		var listed schemaTypeOut
		for _, x := range list.Data {
			if x.Name == "order.paid" {
				listed = x
			}
		}
		compact := func(s string) string {
			var buf bytes.Buffer
			if err := json.Compact(&buf, []byte(s)); err != nil {
				t.Fatal(err)
			}
			return buf.String()
		}
		for what, x := range map[string]schemaTypeOut{"put": put, "get": got, "list": listed} {
			if string(x.Schema) != compact(orderSchema) || string(x.Example) != example || x.Exposure != "webhook" {
				t.Fatalf("%s shows schema %s, example %s, exposure %q", what, x.Schema, x.Example, x.Exposure)
			}
		}

		events := b.countEvents()
		b.publish("order.paid", `{"order_id": "ord_2", "amount": 0}`)
		b.refused("POST", "/api/v1/events", map[string]any{"type": "order.paid", "data": json.RawMessage(`{"order_id": "ord_3", "amount": -1}`)},
			"data/amount", "minimum: got -1, want 0")
		b.refused("POST", "/api/v1/events", map[string]any{"type": "order.paid", "data": json.RawMessage(`{"amount": 1}`)},
			"missing property 'order_id'")
		if n := b.countEvents(); n != events+1 {
			t.Fatalf("%d events written; want %d (the valid one only)", n, events+1)
		}

		// A batch is all or none: one bad event refuses it, naming its index.
		batch := []map[string]any{
			{"type": "order.paid", "data": json.RawMessage(`{"order_id": "ord_4", "amount": 1}`)},
			{"type": "order.paid", "data": json.RawMessage(`{"order_id": "x_5", "amount": 1}`)},
			{"type": "order.paid", "data": json.RawMessage(`{"order_id": "ord_6", "amount": 1}`)},
		}
		b.refused("POST", "/api/v1/events/batch", map[string]any{"events": batch}, "events[1]", "data/order_id")
		if n := b.countEvents(); n != events+1 {
			t.Fatalf("a refused batch wrote %d events", n-events-1)
		}
		batch[1]["data"] = json.RawMessage(`{"order_id": "ord_5", "amount": 1}`)
		b.must(202, "POST", "/api/v1/events/batch", map[string]any{"events": batch}, nil)

		// The other process has compiled the schema at its own publish.
		other.publish("order.paid", `{"order_id": "ord_7", "amount": 3}`)
		other.refused("POST", "/api/v1/events", map[string]any{"type": "order.paid", "data": json.RawMessage(`{"order_id": "ord_8"}`)}, "amount")

		// An update takes effect at the next publish, in both processes.
		stricter := `{"type": "object", "properties": {"amount": {"type": "integer", "maximum": 10}}}`
		b.must(200, "PUT", path, map[string]any{"exposure": "webhook", "schema": json.RawMessage(stricter)}, nil)
		for name, p := range map[string]*bundle{"updating process": b, "other process": other} {
			p.publish("order.paid", `{"amount": 10}`) // no order_id needed any more
			if msg := p.refused("POST", "/api/v1/events", map[string]any{"type": "order.paid", "data": json.RawMessage(`{"order_id": "ord_9", "amount": 11}`)}, "data/amount"); !strings.Contains(msg, "maximum") {
				t.Fatalf("%s: %q; want the new schema's maximum", name, msg)
			}
		}
		// Without a schema, any object again.
		var cleared schemaTypeOut
		b.must(200, "PUT", path, map[string]any{"exposure": "webhook"}, &cleared)
		if cleared.Schema != nil || cleared.Example != nil {
			t.Fatalf("a put without schema shows %s, %s", cleared.Schema, cleared.Example)
		}
		other.publish("order.paid", `{"amount": "lots"}`)
		if n := b.countEvents(); n != events+8 { // 1 + a batch of 3 + 1 + 2 + 1

			t.Fatalf("%d events; want %d", n, events+8)
		}
	})
}

// TestLibrarySchema: Config.EventTypes take a schema; Open refuses one
// that does not compile or whose example does not match, and Publish
// refuses data that does not match it, naming the field, writing nothing.
func TestLibrarySchema(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		dbc := backend.Config(t)
		cfg := hookd.Config{Database: dbc.URL, Schema: dbc.Schema, MasterKey: bytes.Repeat([]byte{7}, 32),
			EgressAllow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
		ctx := context.Background()
		for _, bad := range []struct {
			t       hookd.EventType
			mention string
		}{
			{hookd.EventType{Name: "order.paid", Schema: json.RawMessage(`{"minimum": "zero"}`)}, "schema/minimum"},
			{hookd.EventType{Name: "order.paid", Schema: json.RawMessage(orderSchema), Example: json.RawMessage(`{"order_id": "ord_1"}`)}, "example"},
		} {
			c := cfg
			c.EventTypes = []hookd.EventType{bad.t}
			if h, err := hookd.Open(ctx, c); err == nil {
				h.Close()
				t.Fatalf("Open took %s", bad.t.Schema)
			} else if !strings.Contains(err.Error(), bad.mention) || !strings.Contains(err.Error(), "EventTypes[0]") {
				t.Fatalf("Open: %v; want it to name EventTypes[0] and %s", err, bad.mention)
			}
		}
		cfg.EventTypes = []hookd.EventType{{Name: "order.paid", Schema: json.RawMessage(orderSchema), Example: json.RawMessage(`{"order_id": "ord_1", "amount": 1}`)}}
		h, err := hookd.Open(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		if _, err := h.CreateAPIKey(ctx, "acme", "admin"); err != nil {
			t.Fatal(err)
		}
		ok := hookd.Event{Owner: "acme", Type: "order.paid", Data: json.RawMessage(`{"order_id": "ord_1", "amount": 1}`)}
		bad := hookd.Event{Owner: "acme", Type: "order.paid", Data: json.RawMessage(`{"order_id": "ord_2", "amount": 1.5}`)}
		if _, err := h.Publish(ctx, ok); err != nil {
			t.Fatal(err)
		}
		_, err = h.Publish(ctx, ok, bad)
		if apperr.CodeOf(err) != apperr.Invalid || !strings.Contains(err.Error(), "events[1]") || !strings.Contains(err.Error(), "data/amount") {
			t.Fatalf("Publish of a bad event: %v; want invalid naming events[1] and data/amount", err)
		}
		// A second handle on the database: the test counts rows beside
		// hookd, through the public API only.
		db, err := store.Open(ctx, dbc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if n, err := db.Count(ctx, `SELECT count(*) FROM hookd_events`); err != nil || n != 1 {
			t.Fatalf("%d events, %v; want 1: a refused publish writes nothing", n, err)
		}
	})
}
