package openapi

import (
	"encoding/json"
	"reflect"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/owner"
)

// typeSchemas override what jsonschema.ForType infers for types whose JSON
// is not their Go shape, and give hookd's string enums their values.
var typeSchemas = map[reflect.Type]*jsonschema.Schema{
	// An event's data: a JSON object of any shape, not the []byte it is
	// in Go. Not the empty schema: it encodes as `true`, a boolean schema
	// the official MCP TypeScript SDK refuses in a tool's properties, and
	// with it the whole tools/list.
	reflect.TypeFor[json.RawMessage](): {Type: "object"},
	reflect.TypeFor[time.Time]():       {Type: "string", Format: "date-time"},
	reflect.TypeFor[owner.Role]():      {Type: "string", Enum: []any{string(owner.Operator), string(owner.Admin), string(owner.Publisher)}},
	reflect.TypeFor[event.Exposure]():  {Type: "string", Enum: []any{string(event.Internal), string(event.Webhook)}},
	reflect.TypeFor[endpoint.State]():  {Type: "string", Enum: []any{string(endpoint.Enabled), string(endpoint.Failing), string(endpoint.Disabled)}},
	reflect.TypeFor[endpoint.DeliveryState](): {Type: "string", Enum: []any{
		string(endpoint.Pending), string(endpoint.Delivered), string(endpoint.Failed)}},
}

// Schema returns the JSON Schema (draft 2020-12, the dialect of OpenAPI 3.1
// and of MCP tool schemas) of an op's input or output type: the JSON
// encoding/json reads or writes for it. Both projections use it, so REST and
// MCP describe the same shapes.
func Schema(t reflect.Type) (*jsonschema.Schema, error) {
	return jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: typeSchemas})
}
