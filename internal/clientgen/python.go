package main

import (
	"fmt"
	"strings"
)

// pyKeywords are Python's reserved words a parameter may not be named.
var pyKeywords = map[string]bool{"from": true, "class": true, "def": true, "import": true, "global": true, "in": true, "is": true, "not": true, "or": true, "and": true, "pass": true, "return": true, "with": true, "lambda": true, "async": true, "await": true}

// pyClient writes clients/python/hookd/_ops.py: the answers as TypedDicts
// and the ops as methods with keyword arguments, grouped by the op's first
// word (client.webhooks.create(...)).
func pyClient(m *model) ([]byte, error) {
	var b strings.Builder
	b.WriteString(header("#"))
	b.WriteString("from __future__ import annotations\n\nfrom typing import Any, Callable, Literal, Optional, Required, TypedDict\n\nfrom ._spec import OpSpec\n\n")
	b.WriteString("OPERATIONS: tuple[str, ...] = (\n")
	opList(&b, m, "    ")
	b.WriteString(")\n\"\"\"The operationId of every op the client calls, as in hookd's /openapi.json.\"\"\"\n\n")
	for _, s := range m.Structs {
		if m.isOpInput(s) {
			continue // the ops take keyword arguments
		}
		fmt.Fprintf(&b, "\nclass %s(TypedDict, total=False):\n", s.Name)
		if s.Doc != "" {
			fmt.Fprintf(&b, "    %s\n", pyDoc(s.Doc))
		}
		if len(s.Fields) == 0 {
			b.WriteString("    pass\n")
		}
		for _, f := range s.Fields {
			t := pyType(f.Type)
			if f.Required {
				t = "Required[" + t + "]"
			}
			fmt.Fprintf(&b, "    %s: %s\n", f.JSON, t)
		}
		b.WriteString("\n")
	}
	b.WriteString("\nCall = Callable[[OpSpec, dict[str, Any]], Any]\n\n")
	for _, g := range groups(m) {
		fmt.Fprintf(&b, "\nclass %sOps:\n    \"\"\"The %s ops.\"\"\"\n\n    def __init__(self, call: Call) -> None:\n        self._call = call\n", camel(g), g)
		for _, o := range m.Ops {
			if o.Group == g {
				pyMethod(&b, o)
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("\n__all__ = [\"OPERATIONS\", \"Ops\"")
	for _, s := range m.Structs {
		if !m.isOpInput(s) {
			fmt.Fprintf(&b, ", %q", s.Name)
		}
	}
	b.WriteString("]\n\n")
	b.WriteString("\nclass Ops:\n    \"\"\"The ops, grouped as in their operationId: client.webhooks.create(...) is webhooks.create.\"\"\"\n\n    def __init__(self, call: Call) -> None:\n")
	for _, g := range groups(m) {
		fmt.Fprintf(&b, "        self.%s = %sOps(call)\n", g, camel(g))
	}
	return []byte(b.String()), nil
}

func pyMethod(b *strings.Builder, o op) {
	params := []string{"self"}
	var args, query, headers []string
	if o.Input != nil {
		params = append(params, "*")
		for _, f := range o.Input.Fields {
			name := f.JSON
			if pyKeywords[name] {
				name += "_"
			}
			if f.Required {
				params = append(params, fmt.Sprintf("%s: %s", name, pyType(f.Type)))
			} else {
				params = append(params, fmt.Sprintf("%s: Optional[%s] = None", name, pyType(f.Type)))
			}
			args = append(args, fmt.Sprintf("%q: %s", f.JSON, name))
			switch f.In {
			case "query":
				query = append(query, fmt.Sprintf("%q", f.JSON))
			case "header":
				headers = append(headers, fmt.Sprintf("%q: %q", f.JSON, f.Header))
			}
		}
	}
	out := "None"
	if o.Output != "" {
		out = o.Output
	}
	fmt.Fprintf(b, "\n    def %s(%s) -> %s:\n", o.Name, strings.Join(params, ", "), out)
	fmt.Fprintf(b, "        %s\n", pyDoc(fmt.Sprintf("%s (%s %s)", o.Summary, o.Method, o.Path)))
	query = append(query, "") // a one-element tuple needs its comma
	fmt.Fprintf(b, "        spec = OpSpec(%q, %q, %q, query=(%s), headers={%s}, body=%s)\n",
		o.ID, o.Method, o.Path, strings.Join(query, ", "), strings.Join(headers, ", "), pyBool(o.HasBody))
	call := fmt.Sprintf("self._call(spec, {%s})", strings.Join(args, ", "))
	if o.Output == "" {
		fmt.Fprintf(b, "        %s\n", call)
		return
	}
	fmt.Fprintf(b, "        result: %s = %s\n        return result\n", out, call)
}

func pyType(t typeRef) string {
	var s string
	switch t.Kind {
	case kString, kTime:
		s = "str"
		if len(t.Enum) > 0 {
			var alts []string
			for _, e := range t.Enum {
				alts = append(alts, fmt.Sprintf("%q", e))
			}
			s = "Literal[" + strings.Join(alts, ", ") + "]"
		}
	case kInt:
		s = "int"
	case kBool:
		s = "bool"
	case kJSON:
		s = "dict[str, Any]"
	case kAny:
		s = "Any"
	case kMap:
		s = "dict[str, " + pyType(*t.Elem) + "]"
	case kArray:
		s = "list[" + pyType(*t.Elem) + "]"
	case kNamed:
		s = t.Name
	}
	if t.Nullable {
		s = "Optional[" + s + "]"
	}
	return s
}

func pyDoc(s string) string {
	return `"""` + strings.ReplaceAll(oneLine(s), `"""`, `'''`) + `"""`
}

func pyBool(v bool) string {
	if v {
		return "True"
	}
	return "False"
}
