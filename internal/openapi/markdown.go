package openapi

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hookd/hookd/internal/ops"
)

// Markdown renders docs/api.md from the op declarations: one table row per
// route, then each op's fields, from the same declarations and schemas as
// the OpenAPI document, so the two cannot disagree.
func Markdown(list []*ops.Op) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("# hookd's API\n\n")
	b.WriteString("<!-- Generated from internal/ops by `make docs` (go test ./internal/openapi -run TestAPIDoc -update); do not edit. -->\n\n")
	b.WriteString("Every route takes `Authorization: Bearer <key>` and answers JSON; an error is\n")
	b.WriteString("`{\"error\": {\"code\", \"message\"}}`. Every op is also the MCP tool of the same\n")
	b.WriteString("name at `/mcp` and in `hookd mcp`, and an operation of `GET /openapi.json`.\n")
	b.WriteString("Operator keys name the owner they act on with the `Hookd-Owner` header (or the\n")
	b.WriteString("`owner` query parameter, or the MCP argument `owner`). Roles: an `admin` key\n")
	b.WriteString("may do what a `publisher` may; an `operator` may do everything.\n\n")
	b.WriteString("| op | route | least role | what |\n|---|---|---|---|\n")
	for _, op := range list {
		fmt.Fprintf(&b, "| [`%s`](#%s) | `%s %s` | %s | %s |\n", op.Name, anchor(op.Name), op.Method, op.Path, op.Role, cell(op.Summary))
	}
	for _, op := range list {
		fmt.Fprintf(&b, "\n## %s\n\n`%s %s` → %d. %s\n", op.Name, op.Method, op.Path, op.Status, op.Summary)
		in, err := fields(op.In)
		if err != nil {
			return nil, fmt.Errorf("api doc %s input: %w", op.Name, err)
		}
		if len(in) > 0 {
			b.WriteString("\n| input | in | type | what |\n|---|---|---|---|\n")
			for _, f := range in {
				fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", f.name, f.in, f.typ, cell(f.desc))
			}
		}
		out, err := fields(op.Out)
		if err != nil {
			return nil, fmt.Errorf("api doc %s output: %w", op.Name, err)
		}
		if len(out) > 0 {
			b.WriteString("\n| answer field | type | what |\n|---|---|---|\n")
			for _, f := range out {
				fmt.Fprintf(&b, "| `%s` | %s | %s |\n", f.name, f.typ, cell(f.desc))
			}
		}
	}
	return b.Bytes(), nil
}

type docField struct{ name, in, typ, desc string }

// fields lists a type's top-level JSON fields: where each goes (path,
// query, header or body), its schema type and its description.
func fields(t reflect.Type) ([]docField, error) {
	s, err := Schema(t)
	if err != nil {
		return nil, err
	}
	where := map[string]string{}
	for _, f := range reflect.VisibleFields(t) {
		if f.Anonymous || !f.IsExported() {
			continue
		}
		for _, loc := range []string{"path", "query", "header"} {
			if name := f.Tag.Get(loc); name != "" {
				where[jsonName(f)] = loc + " `" + name + "`"
			}
		}
	}
	var out []docField
	for _, name := range s.PropertyOrder {
		p := s.Properties[name]
		if p == nil {
			continue
		}
		in := where[name]
		if in == "" {
			in = "body"
		}
		out = append(out, docField{name: name, in: in, typ: typeOf(p), desc: p.Description})
	}
	return out, nil
}

func typeOf(s *jsonschema.Schema) string {
	switch {
	case len(s.Enum) > 0:
		vs := make([]string, len(s.Enum))
		for i, v := range s.Enum {
			vs[i] = fmt.Sprint(v)
		}
		return strings.Join(vs, " \\| ")
	case s.Type == "array" && s.Items != nil:
		return "array of " + typeOf(s.Items)
	case s.Type != "":
		if s.Format != "" {
			return s.Type + " (" + s.Format + ")"
		}
		return s.Type
	case len(s.Types) > 0:
		return strings.Join(s.Types, " \\| ")
	}
	return "any"
}

func cell(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

func anchor(name string) string { return strings.ReplaceAll(name, ".", "") }
