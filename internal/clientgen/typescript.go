package main

import (
	"fmt"
	"strings"
)

// tsClient writes clients/typescript/src/ops.ts: the types, and the ops
// as methods grouped by the op's first word (client.webhooks.create).
func tsClient(m *model) ([]byte, error) {
	var b strings.Builder
	b.WriteString(header("//"))
	b.WriteString("import type { CallOptions, OpSpec } from './spec.js';\n\n")
	b.WriteString("/** The operationId of every op the client calls, as in hookd's /openapi.json. */\nexport const OPERATIONS = [\n")
	opList(&b, m, "  ")
	b.WriteString("] as const;\n\n")
	for _, s := range m.Structs {
		if s.Doc != "" {
			fmt.Fprintf(&b, "/** %s %s */\n", s.Name, oneLine(s.Doc))
		}
		fmt.Fprintf(&b, "export interface %s {\n", s.Name)
		for _, f := range s.Fields {
			if f.Doc != "" {
				fmt.Fprintf(&b, "  /** %s */\n", strings.ReplaceAll(oneLine(f.Doc), "*/", "* /"))
			}
			opt := ""
			if !f.Required {
				opt = "?"
			}
			fmt.Fprintf(&b, "  %s%s: %s;\n", f.JSON, opt, tsType(f.Type))
		}
		b.WriteString("}\n\n")
	}
	b.WriteString("/** The ops, grouped as in their operationId: client.webhooks.create(…) is webhooks.create. */\nexport abstract class Ops {\n")
	b.WriteString("  protected abstract call<T>(spec: OpSpec, input: object | undefined, options: CallOptions | undefined): Promise<T>;\n\n")
	for _, g := range groups(m) {
		fmt.Fprintf(&b, "  /** The %s ops. */\n  readonly %s = {\n", g, lowerCamel(g))
		for _, o := range m.Ops {
			if o.Group == g {
				tsMethod(&b, o)
			}
		}
		b.WriteString("  };\n\n")
	}
	b.WriteString("}\n")
	return []byte(b.String()), nil
}

func tsMethod(b *strings.Builder, o op) {
	out := "void"
	if o.Output != "" {
		out = o.Output
	}
	var query, headers []string
	if o.Input != nil {
		for _, f := range o.Input.Fields {
			switch f.In {
			case "query":
				query = append(query, fmt.Sprintf("%q", f.JSON))
			case "header":
				headers = append(headers, fmt.Sprintf("%s: %q", f.JSON, f.Header))
			}
		}
	}
	hs := "{}"
	if len(headers) > 0 {
		hs = "{ " + strings.Join(headers, ", ") + " }"
	}
	spec := fmt.Sprintf("{ op: %q, method: %q, path: %q, query: [%s], headers: %s, body: %t }",
		o.ID, o.Method, o.Path, strings.Join(query, ", "), hs, o.HasBody)
	fmt.Fprintf(b, "    /** %s (%s %s) */\n", o.Summary, o.Method, o.Path)
	switch {
	case o.Input == nil:
		fmt.Fprintf(b, "    %s: (options?: CallOptions): Promise<%s> =>\n      this.call<%s>(%s, undefined, options),\n", lowerCamel(o.Name), out, out, spec)
	case required(o.Input):
		fmt.Fprintf(b, "    %s: (input: %s, options?: CallOptions): Promise<%s> =>\n      this.call<%s>(%s, input, options),\n", lowerCamel(o.Name), o.Input.Name, out, out, spec)
	default:
		fmt.Fprintf(b, "    %s: (input: %s = {}, options?: CallOptions): Promise<%s> =>\n      this.call<%s>(%s, input, options),\n", lowerCamel(o.Name), o.Input.Name, out, out, spec)
	}
}

// required reports whether s has a required field.
func required(s *structDef) bool {
	for _, f := range s.Fields {
		if f.Required {
			return true
		}
	}
	return false
}

func tsType(t typeRef) string {
	var s string
	switch t.Kind {
	case kString, kTime:
		s = "string"
		if len(t.Enum) > 0 {
			var alts []string
			for _, e := range t.Enum {
				alts = append(alts, fmt.Sprintf("%q", e))
			}
			s = strings.Join(alts, " | ")
		}
	case kInt:
		s = "number"
	case kBool:
		s = "boolean"
	case kJSON:
		s = "{ [key: string]: unknown }"
	case kAny:
		s = "unknown"
	case kMap:
		s = "{ [key: string]: " + tsType(*t.Elem) + " }"
	case kArray:
		e := tsType(*t.Elem)
		if strings.Contains(e, " ") {
			e = "(" + e + ")"
		}
		s = e + "[]"
	case kNamed:
		s = t.Name
	}
	if t.Nullable {
		s += " | null"
	}
	return s
}
