package event

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/hookd/hookd/internal/apperr"
)

// builtin holds the catalogs hookd ships, by name.
var builtin = map[string][]Type{
	"standmeet": standmeet,
}

// BuiltinCatalogs lists the built-in catalog names, sorted.
func BuiltinCatalogs() []string {
	names := make([]string, 0, len(builtin))
	for n := range builtin {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// BuiltinCatalog returns a copy of a built-in catalog.
func BuiltinCatalog(name string) ([]Type, bool) {
	c, ok := builtin[name]
	return slices.Clone(c), ok
}

// LoadCatalogs resolves catalog references, each a built-in catalog's name
// or the path of a YAML or JSON file, and returns their types in order (a
// later entry for a name replaces an earlier one).
func LoadCatalogs(refs []string) ([]Type, error) {
	var out []Type
	for _, ref := range refs {
		ref = strings.TrimSpace(ref)
		if ref == "" {
			continue
		}
		if c, ok := BuiltinCatalog(ref); ok {
			out = append(out, c...)
			continue
		}
		c, err := LoadCatalogFile(ref)
		if err != nil {
			return nil, err
		}
		out = append(out, c...)
	}
	return out, nil
}

// LoadCatalogFile reads event types from a YAML or JSON file (YAML is a
// superset of JSON): either a list of {name, exposure, scoped, description,
// schema, example} or {event_types: [...]}. A schema is compiled, and the
// example checked against it, here.
func LoadCatalogFile(path string) ([]Type, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("catalog %q is neither a built-in catalog (%s) nor a readable file: %w", path, strings.Join(BuiltinCatalogs(), ", "), err)
	}
	type entry struct {
		Name        string `yaml:"name"`
		Exposure    string `yaml:"exposure"`
		Scoped      bool   `yaml:"scoped"`
		Description string `yaml:"description"`
		// Schema and Example are JSON values written in YAML or JSON.
		Schema  any `yaml:"schema"`
		Example any `yaml:"example"`
	}
	var list []entry
	if err := yaml.Unmarshal(b, &list); err != nil {
		var doc struct {
			EventTypes []entry `yaml:"event_types"`
		}
		if err2 := yaml.Unmarshal(b, &doc); err2 != nil {
			return nil, fmt.Errorf("catalog %s: %v (expected a list of {name, exposure, scoped, description, schema, example} or {event_types: [...]})", path, err2)
		}
		list = doc.EventTypes
	}
	out := make([]Type, 0, len(list))
	for i, e := range list {
		if err := ValidateTypeName(e.Name); err != nil {
			return nil, fmt.Errorf("catalog %s entry %d: %v", path, i, err)
		}
		exp, err := ParseExposure(e.Exposure)
		if err != nil {
			return nil, fmt.Errorf("catalog %s entry %d (%s): %v", path, i, e.Name, err)
		}
		t := Type{Name: e.Name, Exposure: exp, Scoped: e.Scoped, Description: e.Description}
		if t.Schema, err = asJSON(e.Schema); err == nil {
			t.Example, err = asJSON(e.Example)
		}
		if err == nil {
			_, err = t.CheckSchema()
		}
		if err != nil {
			return nil, fmt.Errorf("catalog %s entry %d (%s): %v", path, i, e.Name, apperr.MessageOf(err))
		}
		out = append(out, t)
	}
	return out, nil
}

// asJSON turns a value decoded from YAML into JSON (nil: none).
func asJSON(v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, apperr.New(apperr.Invalid, "schema or example is not a JSON value (mapping keys must be strings): %v", err)
	}
	return b, nil
}
