// Package openapi projects hookd's op declarations onto an OpenAPI 3.1
// document: one operation per op, its parameters from the input's path,
// query and header tags, its request body from the rest of the input, its
// response from the output, and the errors its declaration can produce.
package openapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/ops"
	"github.com/hookd/hookd/internal/owner"
)

// Info is the document's info object.
type Info struct {
	Title       string `json:"title"`
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
}

// DefaultInfo describes hookd's API.
var DefaultInfo = Info{
	Title:   "hookd",
	Version: "1",
	Description: "hookd's admin and publish API. Every operation is also an MCP tool of the same name at /mcp. " +
		"Authenticate with Authorization: Bearer <API key>. Operator keys name the owner they act on with the " +
		"Hookd-Owner header (or the owner query parameter). A resource of another owner is answered 404.",
}

// conflicts lists the ops whose handlers answer 409: a clash with current
// state that the declaration cannot show. The route test in
// internal/httpapi fails on any status the document does not list.
var conflicts = map[string]bool{
	"owners.create":      true, // the id is taken
	"owners.update":      true, // profile change under live endpoints
	"webhooks.send_test": true, // endpoint disabled
	"webhooks.redeliver": true, // endpoint disabled
	"webhooks.retry_now": true, // endpoint disabled
}

// errorResponses names each error status's shared response component.
var errorResponses = []struct {
	status int
	code   apperr.Code
	name   string
	desc   string
}{
	{400, apperr.BadRequest, "BadRequest", "The body is not JSON."},
	{401, apperr.Unauthorized, "Unauthorized", "No API key, an unknown one, or a revoked one."},
	{403, apperr.Forbidden, "Forbidden", "The key's role may not do this."},
	{404, apperr.NotFound, "NotFound", "No such resource for this owner (another owner's resources are answered the same)."},
	{409, apperr.Conflict, "Conflict", "The request clashes with the resource's current state."},
	{413, apperr.TooLarge, "TooLarge", "The body is over 1 MiB."},
	{422, apperr.Invalid, "Invalid", "A value is wrong; the message says which and how to fix it."},
}

// Build returns the OpenAPI document of ops.
func Build(list []*ops.Op, info Info) (*Document, error) {
	b := &builder{schemas: map[string]any{}, types: map[string]reflect.Type{}}
	errSchema, err := Schema(reflect.TypeFor[errorBody]())
	if err != nil {
		return nil, err
	}
	b.schemas["Error"] = errSchema
	responses := map[string]any{}
	for _, e := range errorResponses {
		responses[e.name] = map[string]any{
			"description": e.desc + " error.code is " + strconv.Quote(string(e.code)) + ".",
			"content":     jsonContent(ref("schemas", "Error")),
		}
	}
	paths := map[string]map[string]any{}
	for _, op := range list {
		o, err := b.operation(op)
		if err != nil {
			return nil, fmt.Errorf("openapi: op %s: %w", op.Name, err)
		}
		if paths[op.Path] == nil {
			paths[op.Path] = map[string]any{}
		}
		m := strings.ToLower(op.Method)
		if _, dup := paths[op.Path][m]; dup {
			return nil, fmt.Errorf("openapi: two ops on %s %s", op.Method, op.Path)
		}
		paths[op.Path][m] = o
	}
	routes, err := b.routes()
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	for path, methods := range routes {
		if paths[path] == nil {
			paths[path] = map[string]any{}
		}
		for m, o := range methods {
			if _, dup := paths[path][m]; dup {
				return nil, fmt.Errorf("openapi: an op and a route on %s %s", m, path)
			}
			paths[path][m] = o
		}
	}
	return &Document{
		OpenAPI:  "3.1.0",
		Info:     info,
		Security: []map[string][]string{{"bearer": {}}},
		Paths:    paths,
		Components: map[string]any{
			"schemas":   b.schemas,
			"responses": responses,
			"securitySchemes": map[string]any{
				"bearer":    map[string]any{"type": "http", "scheme": "bearer", "description": "An API key (hkd_…): `hookd apikey create --owner NAME --role admin|publisher|operator`."},
				"pollToken": map[string]any{"type": "http", "scheme": "bearer", "description": "A polling endpoint's poll token (hkp_…): shown once by webhooks.create (kind poll) and webhooks.rotate_poll_token."},
			},
		},
	}, nil
}

// Document is an OpenAPI 3.1 document (the parts hookd uses).
type Document struct {
	OpenAPI    string                    `json:"openapi"`
	Info       Info                      `json:"info"`
	Servers    []Server                  `json:"servers,omitempty"`
	Security   []map[string][]string     `json:"security"`
	Paths      map[string]map[string]any `json:"paths"`
	Components map[string]any            `json:"components"`
}

// Server is where the API is served, when not at the root of the host
// serving the document (hookd mounted under a prefix).
type Server struct {
	URL string `json:"url"`
}

// JSON returns the document as indented JSON (stable: map keys sorted,
// schema properties in field order).
func JSON(list []*ops.Op, info Info) ([]byte, error) {
	doc, err := Build(list, info)
	if err != nil {
		return nil, err
	}
	return doc.JSON()
}

// JSON returns d as indented JSON.
func (d *Document) JSON() ([]byte, error) {
	out, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// Handler serves the document of list (GET /openapi.json), built once;
// served under a prefix, its servers entry names it (e.g. "/webhooks").
func Handler(list []*ops.Op, info Info, prefix string) (http.Handler, error) {
	doc, err := Build(list, info)
	if err != nil {
		return nil, err
	}
	if prefix != "" {
		doc.Servers = []Server{{URL: prefix}}
	}
	body, err := doc.JSON()
	if err != nil {
		return nil, err
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}), nil
}

// errorBody is every error answer, as internal/httpapi writes it.
type errorBody struct {
	Error struct {
		Code    apperr.Code `json:"code" jsonschema:"invalid, bad_request, not_found, conflict, unauthorized, forbidden, too_large, internal or unavailable"`
		Message string      `json:"message" jsonschema:"what is wrong and how to fix it"`
	} `json:"error"`
}

type builder struct {
	schemas map[string]any
	types   map[string]reflect.Type // component name → the type it describes
}

var pathParam = regexp.MustCompile(`\{([^}]+)\}`)

func (b *builder) operation(op *ops.Op) (map[string]any, error) {
	params, inBody, err := parameters(op)
	if err != nil {
		return nil, err
	}
	o := map[string]any{
		"operationId":  op.Name,
		"summary":      op.Summary,
		"description":  roleText(op),
		"tags":         []string{strings.SplitN(op.Name, ".", 2)[0]},
		"x-hookd-role": string(op.Role),
	}
	if len(params) > 0 {
		o["parameters"] = params
	}
	hasBody := op.Method == http.MethodPost || op.Method == http.MethodPut || op.Method == http.MethodPatch
	if hasBody {
		body, required, err := bodySchema(op.In, inBody)
		if err != nil {
			return nil, err
		}
		if body != nil {
			o["requestBody"] = map[string]any{"required": required, "content": jsonContent(body)}
		}
	}
	success := map[string]any{"description": http.StatusText(op.Status)}
	if op.Status != http.StatusNoContent {
		name, err := b.component(op.Out)
		if err != nil {
			return nil, err
		}
		success["content"] = jsonContent(ref("schemas", name))
	}
	responses := map[string]any{strconv.Itoa(op.Status): success}
	for _, e := range errorResponses {
		if errorApplies(op, e.status, hasBody, params) {
			responses[strconv.Itoa(e.status)] = ref("responses", e.name)
		}
	}
	o["responses"] = responses
	return o, nil
}

// errorApplies reports whether op can answer status, from its declaration.
func errorApplies(op *ops.Op, status int, hasBody bool, params []any) bool {
	hasPath := strings.Contains(op.Path, "{")
	hasQuery := slices.ContainsFunc(params, func(p any) bool {
		m := p.(map[string]any)
		return m["in"] == "query" && m["name"] != "owner"
	})
	switch status {
	case 400, 413:
		return hasBody
	case 401:
		return true
	case 403:
		// Every key may publish; anything more needs a role some key lacks.
		return op.Role != owner.Publisher
	case 404:
		return hasPath || op.TakesOwner()
	case 409:
		return conflicts[op.Name]
	case 422:
		return hasBody || hasQuery || op.OwnerScoped
	}
	return false
}

func roleText(op *ops.Op) string {
	var s string
	switch op.Role {
	case owner.Operator:
		s = "Needs an operator key."
	case owner.Admin:
		s = "Needs an admin key, or an operator key."
	default:
		s = "Any key: publisher, admin or operator."
	}
	switch {
	case op.OwnerScoped:
		s += " Acts on the key's owner; an operator key must name it (Hookd-Owner)."
	case op.TakesOwner():
		s += " Acts on the key's owner; an operator key may name one (Hookd-Owner)."
	}
	return s + " MCP tool: " + op.Name + "."
}

// parameters returns op's path, query and header parameters (and the
// operator's owner selector), and the JSON names of the input fields that
// remain for the body.
func parameters(op *ops.Op) (params []any, body map[string]bool, err error) {
	body = map[string]bool{}
	declared := map[string]bool{}
	for _, f := range reflect.VisibleFields(op.In) {
		if f.Anonymous || !f.IsExported() {
			continue
		}
		name := jsonName(f)
		var in, pname string
		switch {
		case f.Tag.Get("path") != "":
			in, pname = "path", f.Tag.Get("path")
			declared[pname] = true
		case f.Tag.Get("query") != "":
			in, pname = "query", f.Tag.Get("query")
		case f.Tag.Get("header") != "":
			in, pname = "header", f.Tag.Get("header")
		default:
			if name != "" {
				body[name] = true
			}
			continue
		}
		s, err := Schema(f.Type)
		if err != nil {
			return nil, nil, err
		}
		p := map[string]any{"name": pname, "in": in, "required": in == "path", "schema": s}
		if d := f.Tag.Get("jsonschema"); d != "" {
			p["description"] = d
		}
		params = append(params, p)
	}
	for _, m := range pathParam.FindAllStringSubmatch(op.Path, -1) {
		if !declared[m[1]] {
			return nil, nil, fmt.Errorf("path %s has {%s} but %s has no field tagged path:%q", op.Path, m[1], op.In, m[1])
		}
		delete(declared, m[1])
	}
	for name := range declared {
		return nil, nil, fmt.Errorf("%s tags path:%q but path %s has no {%s}", op.In, name, op.Path, name)
	}
	if op.TakesOwner() {
		desc := "Operator keys: the owner to act on."
		if op.OwnerScoped {
			desc += " Required for operator keys."
		}
		str := &jsonschema.Schema{Type: "string"}
		params = append(params,
			map[string]any{"name": "Hookd-Owner", "in": "header", "required": false, "description": desc, "schema": str},
			map[string]any{"name": "owner", "in": "query", "required": false, "description": desc + " (Same as the Hookd-Owner header.)", "schema": str})
	}
	return params, body, nil
}

// bodySchema is the schema of In restricted to the body fields; nil when
// no field is left. required: the body must be sent (a field is required).
func bodySchema(in reflect.Type, fields map[string]bool) (*jsonschema.Schema, bool, error) {
	if len(fields) == 0 {
		return nil, false, nil
	}
	s, err := Schema(in)
	if err != nil {
		return nil, false, err
	}
	for name := range s.Properties {
		if !fields[name] {
			delete(s.Properties, name)
		}
	}
	s.PropertyOrder = slices.DeleteFunc(s.PropertyOrder, func(n string) bool { return !fields[n] })
	s.Required = slices.DeleteFunc(s.Required, func(n string) bool { return !fields[n] })
	return s, len(s.Required) > 0, nil
}

// component adds t's schema under a stable name and returns the name.
func (b *builder) component(t reflect.Type) (string, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	name := componentName(t)
	if have, ok := b.types[name]; ok {
		if have != t {
			return "", fmt.Errorf("schema name %s means both %s and %s", name, have, t)
		}
		return name, nil
	}
	s, err := Schema(t)
	if err != nil {
		return "", err
	}
	b.types[name], b.schemas[name] = t, s
	return name, nil
}

// componentName is the type's name, prefixed by its package's unless the
// type is an ops type or already starts with it (event.Type → EventType,
// event.Event → Event, ops.EndpointView → EndpointView).
func componentName(t reflect.Type) string {
	pkg := t.PkgPath()[strings.LastIndex(t.PkgPath(), "/")+1:]
	if pkg == "ops" || strings.HasPrefix(strings.ToLower(t.Name()), pkg) {
		return t.Name()
	}
	r := []rune(pkg)
	r[0] = unicode.ToUpper(r[0])
	return string(r) + t.Name()
}

func jsonName(f reflect.StructField) string {
	tag := f.Tag.Get("json")
	if tag == "-" {
		return ""
	}
	if name, _, _ := strings.Cut(tag, ","); name != "" {
		return name
	}
	return f.Name
}

func ref(kind, name string) map[string]any {
	return map[string]any{"$ref": "#/components/" + kind + "/" + name}
}

func jsonContent(schema any) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": schema}}
}
