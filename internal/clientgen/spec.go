package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// document is the part of hookd's OpenAPI document the clients are made of.
type document struct {
	Paths      map[string]map[string]*operation `json:"paths"`
	Components struct {
		Schemas map[string]*schema `json:"schemas"`
	} `json:"components"`
}

type operation struct {
	OperationID string       `json:"operationId"`
	Summary     string       `json:"summary"`
	Parameters  []*parameter `json:"parameters"`
	RequestBody *struct {
		Content map[string]struct {
			Schema *schema `json:"schema"`
		} `json:"content"`
	} `json:"requestBody"`
	Responses map[string]struct {
		Content map[string]struct {
			Schema *schema `json:"schema"`
		} `json:"content"`
	} `json:"responses"`
}

type parameter struct {
	Name        string  `json:"name"`
	In          string  `json:"in"`
	Required    bool    `json:"required"`
	Description string  `json:"description"`
	Schema      *schema `json:"schema"`
}

type schema struct {
	Ref                  string             `json:"$ref,omitempty"`
	Type                 any                `json:"type,omitempty"` // "string" or ["null", "string"]
	Format               string             `json:"format,omitempty"`
	Enum                 []string           `json:"enum,omitempty"`
	Description          string             `json:"description,omitempty"`
	Properties           map[string]*schema `json:"properties,omitempty"`
	Required             []string           `json:"required,omitempty"`
	Items                *schema            `json:"items,omitempty"`
	AdditionalProperties json.RawMessage    `json:"additionalProperties,omitempty"`
}

// UnmarshalJSON reads a schema, or the boolean schema true (any value, as
// for a field of Go type any: the audit log's old and new values); false
// (no value) is refused.
func (s *schema) UnmarshalJSON(b []byte) error {
	switch string(bytes.TrimSpace(b)) {
	case "true":
		*s = schema{}
		return nil
	case "false":
		return fmt.Errorf("the boolean schema false (no value is valid) is not handled")
	}
	type plain schema // without this method
	return json.Unmarshal(b, (*plain)(s))
}

// baseType is the schema's type without "null", and whether null is allowed.
func (s *schema) baseType() (string, bool) {
	switch t := s.Type.(type) {
	case string:
		return t, false
	case []any:
		var base string
		nullable, several := false, false
		for _, x := range t {
			if x == "null" {
				nullable = true
			} else {
				several = several || base != ""
				base, _ = x.(string)
			}
		}
		if several {
			return "", nullable // any of several: any JSON value
		}
		return base, nullable
	}
	return "", false
}

// mapOf is the schema of a map's values (additionalProperties as a schema).
func (s *schema) mapOf() *schema {
	if len(s.AdditionalProperties) == 0 || s.AdditionalProperties[0] != '{' {
		return nil
	}
	var v schema
	if json.Unmarshal(s.AdditionalProperties, &v) != nil {
		return nil
	}
	return &v
}

// Kinds of a typeRef.
const (
	kString = "string"
	kInt    = "integer"
	kBool   = "boolean"
	kTime   = "time"  // an RFC 3339 string
	kJSON   = "json"  // any JSON object
	kMap    = "map"   // string keys, elem values
	kArray  = "array" // of elem
	kNamed  = "named" // a struct: name
	kAny    = "any"   // any JSON value (a schema without one type)
)

// typeRef is a field's type in every language's terms.
type typeRef struct {
	Kind     string
	Elem     *typeRef
	Name     string
	Nullable bool
	Enum     []string
}

// field is a property of a struct, or a parameter of an op.
type field struct {
	JSON     string // the JSON property, or the parameter's name
	Doc      string
	Type     typeRef
	Required bool
	In       string // body, path, query or header
	Header   string // the header's name (In == header)
}

// structDef is a named object type.
type structDef struct {
	Name   string
	Doc    string
	Fields []field
	// Input: part of an op's input (not of an answer); Patch: the input of
	// a PATCH or PUT, where an absent field and a zero one differ.
	Input, Patch bool
}

// op is one operation as the clients call it.
type op struct {
	ID, Group, Name string // "webhooks.create", "webhooks", "create"
	Summary         string
	Method, Path    string
	Input           *structDef // nil: the op takes nothing
	HasBody         bool       // the request has a JSON body
	Output          string     // the answer's struct; "" for none (204)
}

// model is everything the emitters write.
type model struct {
	Ops     []op
	Structs []*structDef
	byKey   map[string]string // canonical schema → struct name
	byName  map[string]*structDef
}

// ownerParams are every owner-scoped op's Hookd-Owner header and owner
// query parameter: the clients set them once (WithOwner), not per call.
var ownerParams = map[string]bool{"Hookd-Owner": true, "owner": true}

func load(raw []byte) (*model, error) {
	var d document
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("read the OpenAPI document: %w", err)
	}
	m := &model{byKey: map[string]string{}, byName: map[string]*structDef{}}
	// Error is every error answer's body: each client's own error type.
	delete(d.Components.Schemas, "Error")
	names := sortedKeys(d.Components.Schemas)
	for _, n := range names {
		m.byKey[canonical(d.Components.Schemas[n])] = n
	}
	for _, n := range names {
		if _, err := m.structOf(n, d.Components.Schemas[n]); err != nil {
			return nil, err
		}
	}
	for _, path := range sortedKeys(d.Paths) {
		for _, method := range sortedKeys(d.Paths[path]) {
			o, err := m.opOf(strings.ToUpper(method), path, d.Paths[path][method])
			if err != nil {
				return nil, err
			}
			m.Ops = append(m.Ops, o)
		}
	}
	sort.Slice(m.Ops, func(i, j int) bool { return m.Ops[i].ID < m.Ops[j].ID })
	sort.Slice(m.Structs, func(i, j int) bool { return m.Structs[i].Name < m.Structs[j].Name })
	return m, nil
}

func (m *model) opOf(method, path string, o *operation) (op, error) {
	group, name, ok := strings.Cut(o.OperationID, ".")
	if !ok {
		return op{}, fmt.Errorf("operationId %q is not group.name", o.OperationID)
	}
	out := op{ID: o.OperationID, Group: group, Name: name, Summary: o.Summary, Method: method, Path: path}
	in := &structDef{Name: camel(o.OperationID) + "Input", Doc: "is the input of " + o.OperationID + ".", Input: true, Patch: method == "PATCH" || method == "PUT"}
	seen := map[string]bool{}
	for _, p := range o.Parameters {
		if ownerParams[p.Name] {
			continue
		}
		f := field{JSON: p.Name, Doc: p.Description, Required: p.Required, In: p.In}
		if p.In == "header" {
			f.Header, f.JSON = p.Name, snake(p.Name)
		}
		t, err := m.typeOf(in.Name+camel(f.JSON), p.Schema)
		if err != nil {
			return op{}, err
		}
		f.Type = t
		seen[f.JSON] = true
		in.Fields = append(in.Fields, f)
	}
	if o.RequestBody != nil {
		out.HasBody = true
		body := o.RequestBody.Content["application/json"].Schema
		fs, err := m.fieldsOf(in.Name, body)
		if err != nil {
			return op{}, err
		}
		for _, f := range fs {
			if seen[f.JSON] {
				return op{}, fmt.Errorf("%s: body property %q is also a parameter", o.OperationID, f.JSON)
			}
		}
		in.Fields = append(in.Fields, fs...)
	}
	if len(in.Fields) > 0 || out.HasBody {
		out.Input = in
		m.Structs = append(m.Structs, in)
		m.markInput(in)
	}
	for status, r := range o.Responses {
		if status[0] != '2' {
			continue
		}
		s := r.Content["application/json"].Schema
		switch {
		case s == nil:
		case s.Ref != "":
			out.Output = strings.TrimPrefix(s.Ref, "#/components/schemas/")
		default: // an answer declared in place
			t, err := m.typeOf(camel(o.OperationID)+"Output", s)
			if err != nil {
				return op{}, err
			}
			if t.Kind != kNamed {
				return op{}, fmt.Errorf("%s answers a %s, not an object", o.OperationID, t.Kind)
			}
			out.Output = t.Name
		}
	}
	return out, nil
}

// isOpInput reports whether s is an op's input itself.
func (m *model) isOpInput(s *structDef) bool {
	for _, o := range m.Ops {
		if o.Input == s {
			return true
		}
	}
	return false
}

// markInput marks the structs s's fields hold as parts of an input.
func (m *model) markInput(s *structDef) {
	for _, f := range s.Fields {
		t := f.Type
		for t.Elem != nil {
			t = *t.Elem
		}
		if d := m.byName[t.Name]; t.Kind == kNamed && d != nil && !d.Input {
			d.Input, d.Patch = true, s.Patch
			d.Doc = "is a part of " + s.Name + "."
			m.markInput(d)
		}
	}
}

// structOf registers the object schema s as the struct name.
func (m *model) structOf(name string, s *schema) (string, error) {
	if _, ok := m.byName[name]; ok {
		return name, nil
	}
	def := &structDef{Name: name, Doc: firstSentence(s.Description)}
	m.byName[name] = def
	m.byKey[canonical(s)] = name
	fs, err := m.fieldsOf(name, s)
	if err != nil {
		return "", err
	}
	def.Fields = fs
	m.Structs = append(m.Structs, def)
	return name, nil
}

func (m *model) fieldsOf(parent string, s *schema) ([]field, error) {
	var fs []field
	for _, p := range sortedKeys(s.Properties) {
		ps := s.Properties[p]
		t, err := m.typeOf(nestedName(parent, p), ps)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", parent, p, err)
		}
		fs = append(fs, field{JSON: p, Doc: ps.Description, Type: t, Required: slices.Contains(s.Required, p), In: "body"})
	}
	return fs, nil
}

// nestedName names an object found in parent's property p: a list's items
// are named for the list (DeliveryList.data → Delivery).
func nestedName(parent, p string) string {
	if base, ok := strings.CutSuffix(parent, "List"); ok && p == "data" {
		return base
	}
	return strings.TrimSuffix(parent, "Input") + camel(p)
}

func (m *model) typeOf(name string, s *schema) (typeRef, error) {
	if s == nil {
		return typeRef{Kind: kString}, nil
	}
	if s.Ref != "" {
		return typeRef{Kind: kNamed, Name: strings.TrimPrefix(s.Ref, "#/components/schemas/")}, nil
	}
	base, nullable := s.baseType()
	t := typeRef{Nullable: nullable, Enum: s.Enum}
	switch base {
	case "string":
		t.Kind = kString
		if s.Format == "date-time" {
			t.Kind = kTime
		}
	case "integer", "number":
		t.Kind = kInt
	case "boolean":
		t.Kind = kBool
	case "array":
		e, err := m.typeOf(name, s.Items)
		if err != nil {
			return t, err
		}
		e.Nullable = false
		t.Kind, t.Elem = kArray, &e
	case "object":
		switch {
		case s.mapOf() != nil:
			e, err := m.typeOf(name, s.mapOf())
			if err != nil {
				return t, err
			}
			t.Kind, t.Elem = kMap, &e
		case len(s.Properties) == 0:
			t.Kind = kJSON
		default:
			if known, ok := m.byKey[canonical(s)]; ok {
				name = known
			} else if _, taken := m.byName[name]; taken {
				// A list's items that are not the object of their name
				// (events.list's summaries beside events.get's Event) are
				// its summary.
				if _, taken := m.byName[name+"Summary"]; taken {
					return t, fmt.Errorf("two different objects would be named %s (and %sSummary)", name, name)
				}
				name += "Summary"
			}
			n, err := m.structOf(name, s)
			if err != nil {
				return t, err
			}
			t.Kind, t.Name = kNamed, n
		}
	case "":
		t.Kind, t.Nullable = kAny, false
	default:
		return t, fmt.Errorf("schema type %v is not handled", s.Type)
	}
	return t, nil
}

// canonical is s's shape without descriptions and nullability: two objects
// with the same canonical form are one type.
func canonical(s *schema) string {
	var strip func(*schema) *schema
	strip = func(s *schema) *schema {
		if s == nil {
			return nil
		}
		c := *s
		c.Description = ""
		c.Type, _ = s.baseType()
		c.Items = strip(s.Items)
		if s.Properties != nil {
			c.Properties = map[string]*schema{}
			for k, v := range s.Properties {
				c.Properties[k] = strip(v)
			}
		}
		return &c
	}
	b, _ := json.Marshal(strip(s))
	return string(b)
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// initialisms are written in capitals in Go names.
var initialisms = map[string]string{"id": "ID", "url": "URL", "api": "API", "ttl": "TTL", "json": "JSON", "http": "HTTP", "ip": "IP"}

// camel turns "webhooks.create", "api_keys" or "Idempotency-Key" into
// WebhooksCreate, APIKeys, IdempotencyKey.
func camel(s string) string {
	var b strings.Builder
	for _, w := range words(s) {
		if up, ok := initialisms[w]; ok {
			b.WriteString(up)
			continue
		}
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return b.String()
}

// lowerCamel is camel with a lower-case first word: apiKeys, publishBatch.
func lowerCamel(s string) string {
	ws := words(s)
	if len(ws) == 0 {
		return ""
	}
	rest := camel(strings.Join(ws[1:], "_"))
	return ws[0] + rest
}

// snake is "Idempotency-Key" as idempotency_key.
func snake(s string) string { return strings.Join(words(s), "_") }

func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return r == '.' || r == '_' || r == '-' })
}

func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}
