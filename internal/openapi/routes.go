package openapi

import (
	"reflect"
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hookd/hookd/internal/ops"
)

// Routes that are not ops: they stream (NDJSON, Server-Sent Events) or
// are a polling endpoint's consumer's, authenticated by its poll token
// instead of an API key, so no MCP tool projects them (an MCP client
// reads a polling endpoint with webhooks.poll). Written here by hand; each
// carries x-hookd-route: true and an operationId that is no op's.

// pollTokenSecurity is the consumer routes' security: the poll token.
var pollTokenSecurity = []map[string][]string{{"pollToken": {}}}

func (b *builder) routes() (map[string]map[string]any, error) {
	str := &jsonschema.Schema{Type: "string"}
	intg := &jsonschema.Schema{Type: "integer"}
	param := func(name, in, desc string, s *jsonschema.Schema) map[string]any {
		return map[string]any{"name": name, "in": in, "required": in == "path", "description": desc, "schema": s}
	}
	id := param("id", "path", "the endpoint id (ep_…)", str)
	var names [4]string
	for i, t := range []reflect.Type{reflect.TypeFor[ops.PollPage](), reflect.TypeFor[ops.Position](), reflect.TypeFor[ops.ExportLine](), reflect.TypeFor[ops.PollMessage]()} {
		var err error
		if names[i], err = b.component(t); err != nil {
			return nil, err
		}
	}
	page, pos, line, msg := names[0], names[1], names[2], names[3]
	errs := func(statuses ...string) map[string]any {
		out := map[string]any{}
		for _, s := range statuses {
			for _, e := range errorResponses {
				if s == strconv.Itoa(e.status) {
					out[s] = ref("responses", e.name)
				}
			}
			if s == "503" {
				out[s] = map[string]any{"description": "Too many polls wait on this process; poll again after Retry-After.", "content": jsonContent(ref("schemas", "Error"))}
			}
		}
		return out
	}
	with := func(ok map[string]any, statuses ...string) map[string]any {
		r := errs(statuses...)
		r["200"] = ok
		return r
	}
	body := func(props map[string]*jsonschema.Schema, order ...string) map[string]any {
		return map[string]any{"required": true, "content": jsonContent(&jsonschema.Schema{Type: "object", Properties: props, PropertyOrder: order})}
	}
	consumer := func(o map[string]any) map[string]any {
		o["security"] = pollTokenSecurity
		o["tags"] = []string{"poll"}
		o["x-hookd-route"] = true
		return o
	}
	return map[string]map[string]any{
		"/api/admin/webhooks/{id}/deliveries/export": {"get": map[string]any{
			"operationId":   "webhooks.export_deliveries",
			"summary":       "Stream the endpoint's deliveries as NDJSON: one delivery with its envelope a line, in constant memory (a dead-letter archive).",
			"description":   "Needs an admin key, or an operator key naming the owner (Hookd-Owner). A stream, so no MCP tool of its own: webhooks.export_page answers the same lines a bounded page at a time, with a cursor and this URL.",
			"tags":          []string{"webhooks"},
			"x-hookd-route": true,
			"parameters": []any{id,
				param("state", "query", "failed (default), delivered, pending or all", str),
				param("since", "query", "only deliveries created at or after this RFC 3339 time", str),
				param("until", "query", "only deliveries created before this RFC 3339 time", str),
				param("Hookd-Owner", "header", "Operator keys: the owner to act on.", str)},
			"responses": with(map[string]any{"description": "One JSON object a line.", "content": map[string]any{"application/x-ndjson": map[string]any{"schema": ref("schemas", line)}}}, "401", "403", "404", "422"),
		}},
		"/api/v1/poll/{id}": {"get": consumer(map[string]any{
			"operationId": "poll.read",
			"summary":     "Read a polling endpoint's messages after a cursor, in order, each with its signature headers; wait long-polls until one is published.",
			"parameters": []any{id,
				param("after", "query", "read after this cursor (default: the acknowledged position)", str),
				param("limit", "query", "at most this many (default 100, max 500)", intg),
				param("wait", "query", "long-poll: wait up to this long (e.g. 30s, at most 60s) for a message", str)},
			"responses": with(map[string]any{"description": "OK", "content": jsonContent(ref("schemas", page))}, "401", "404", "422", "503"),
		})},
		"/api/v1/poll/{id}/stream": {"get": consumer(map[string]any{
			"operationId": "poll.stream",
			"summary":     "The polling endpoint's messages as Server-Sent Events: each event's id is its cursor, its data a PollMessage; a comment every 15 s while idle. Reconnect with Last-Event-ID to resume.",
			"parameters": []any{id,
				param("after", "query", "start after this cursor (default: the acknowledged position)", str),
				param("Last-Event-ID", "header", "resume after this event id (a cursor); wins over after", str)},
			"responses": with(map[string]any{"description": "A text/event-stream of PollMessage events.", "content": map[string]any{"text/event-stream": map[string]any{"schema": ref("schemas", msg)}}}, "401", "404", "422", "503"),
		})},
		"/api/v1/poll/{id}/ack": {"post": consumer(map[string]any{
			"operationId": "poll.ack",
			"summary":     "Acknowledge up to a cursor: the acknowledged position moves on (never back) and a poll without after reads after it.",
			"parameters":  []any{id},
			"requestBody": body(map[string]*jsonschema.Schema{"cursor": str}, "cursor"),
			"responses":   with(map[string]any{"description": "OK", "content": jsonContent(ref("schemas", pos))}, "400", "401", "404", "422"),
		})},
		"/api/v1/poll/{id}/seek": {"post": consumer(map[string]any{
			"operationId": "poll.seek",
			"summary":     "Move the acknowledged position to a cursor, to just before an event's message (event_id) or a time (at, RFC 3339): a replay. Exactly one.",
			"parameters":  []any{id},
			"requestBody": body(map[string]*jsonschema.Schema{"cursor": str, "event_id": str, "at": str}, "cursor", "event_id", "at"),
			"responses":   with(map[string]any{"description": "OK", "content": jsonContent(ref("schemas", pos))}, "400", "401", "404", "422"),
		})},
	}, nil
}
