package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/owner"
)

// TestSchemaTools: over MCP, event_types.put takes a schema (a bad one is
// a tool error naming schema), event_types.get shows it (checked against
// the advertised output schema), and events.publish refuses data that does
// not match it, naming the field.
func TestSchemaTools(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.Backends()[0])
	cs := connectHTTP(t, b, b.key("acme", owner.Admin))
	schema := map[string]any{"type": "object", "required": []string{"amount"}, "properties": map[string]any{"amount": map[string]any{"type": "integer", "minimum": 0}}}
	if e := call(t, cs, "event_types.put", map[string]any{"name": "order.paid", "exposure": "webhook", "schema": map[string]any{"type": 7}}, nil); e == nil || e.Error.Code != "invalid" || !strings.Contains(e.Error.Message, "schema/type") {
		t.Fatalf("a bad schema: %+v; want invalid naming schema/type", e)
	}
	mustCall(t, cs, "event_types.put", map[string]any{"name": "order.paid", "exposure": "webhook", "schema": schema, "example": map[string]any{"amount": 1}}, nil)
	var got struct {
		Schema  map[string]any `json:"schema"`
		Example map[string]any `json:"example"`
	}
	mustCall(t, cs, "event_types.get", map[string]any{"name": "order.paid"}, &got)
	if got.Schema["required"] == nil || got.Example["amount"] != float64(1) {
		t.Fatalf("event_types.get shows %+v", got)
	}
	mustCall(t, cs, "events.publish", map[string]any{"type": "order.paid", "data": map[string]any{"amount": 2}}, nil)
	e := call(t, cs, "events.publish", map[string]any{"type": "order.paid", "data": map[string]any{"amount": -2}}, nil)
	if e == nil || e.Error.Code != "invalid" || !strings.Contains(e.Error.Message, "data/amount: minimum: got -2, want 0") {
		t.Fatalf("publish of bad data: %+v; want invalid naming data/amount", e)
	}
}
