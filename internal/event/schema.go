package event

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/hookd/hookd/internal/apperr"
)

// A type's schema is a JSON Schema (draft 2020-12 unless it names another
// with $schema) that every published event's data must match. It is
// compiled when it is set or loaded, and again in a process that meets it
// first at publish time; compiled schemas are kept by the hash of their
// text, which the publish reads with the type's exposure. A changed schema
// has another hash, so no process can use a compiled copy of the old one.

// MaxSchemaBytes bounds a type's schema; its example is data and is bounded
// by MaxDataBytes.
const MaxSchemaBytes = 64 << 10

// schemaURL names every schema in the compiler's messages ($id, when the
// schema has one, still resolves its own relative references).
const schemaURL = "urn:hookd:schema"

// printer renders the validator's messages (in English).
var printer = message.NewPrinter(language.English)

// Schema is a compiled JSON Schema for an event type's data.
type Schema struct{ s *jsonschema.Schema }

// noLoader refuses every external reference: a schema is one document, and
// hookd reads neither files nor URLs on a publisher's say-so. The draft
// meta-schemas are built in and need no loader.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("hookd does not load external schemas: put the definition in the schema's $defs and refer to it as #/$defs/…")
}

// CompileSchema compiles a schema's JSON text. Its errors are Invalid,
// naming "schema" and carrying the compiler's message.
func CompileSchema(raw []byte) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, apperr.New(apperr.Invalid, "schema is not valid JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, apperr.New(apperr.Invalid, "schema: %v", err)
	}
	s, err := c.Compile(schemaURL)
	var bad *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	switch {
	case errors.As(err, &bad) && errors.As(bad.Err, &ve):
		return nil, apperr.New(apperr.Invalid, "schema is not a valid JSON Schema: %s", describe(ve, "schema"))
	case err != nil:
		return nil, apperr.New(apperr.Invalid, "schema: %s", strings.TrimPrefix(oneLine(err.Error()), "failing "))
	}
	return &Schema{s: s}, nil
}

// Validate checks data (a JSON object) against the schema. The error is
// Invalid and names each failing field by its JSON pointer under data,
// e.g. "data/amount: minimum: got -1, want 0".
func (s *Schema) Validate(data []byte) error { return s.check(data, "data") }

// check validates a value, naming it (and its fields) root.
func (s *Schema) check(data []byte, root string) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return apperr.New(apperr.Invalid, "%s is not valid JSON: %v", root, err)
	}
	err = s.s.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("validate data: %w", err)
	}
	return apperr.New(apperr.Invalid, "%s does not match the event type's schema: %s", root, describe(ve, root))
}

// describe lists the failures at the leaves of a validation error, each as
// "<root>/<pointer>: why", at most 5 of them.
func describe(ve *jsonschema.ValidationError, root string) string {
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			out = append(out, root+pointer(e.InstanceLocation)+": "+e.ErrorKind.LocalizedString(printer))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(out) > 5 {
		out = append(out[:5], fmt.Sprintf("and %d more", len(out)-5))
	}
	return strings.Join(out, "; ")
}

// pointer renders an instance location as a JSON pointer (RFC 6901).
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		t = strings.ReplaceAll(t, "~", "~0")
		b.WriteString(strings.ReplaceAll(t, "/", "~1"))
	}
	return b.String()
}

// oneLine joins a multi-line compiler message into one line.
func oneLine(s string) string {
	lines := strings.Split(s, "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(lines[i]), "- "))
	}
	return strings.Join(lines, "; ")
}

// SchemaHash is the key a compiled schema is kept by: the SHA-256 of its
// (compacted) text.
func SchemaHash(schema []byte) string {
	h := sha256.Sum256(schema)
	return hex.EncodeToString(h[:])
}

// CheckSchema validates a type's schema and example and puts them in their
// stored form: compact JSON, the schema's hash set ("" with no schema), the
// example checked against the schema. An empty or null schema or example
// is none. It returns the compiled schema (nil with none).
func (t *Type) CheckSchema() (*Schema, error) {
	var err error
	if t.Schema, err = compactOrNone(t.Schema, "schema"); err != nil {
		return nil, err
	}
	if t.Example, err = compactOrNone(t.Example, "example"); err != nil {
		return nil, err
	}
	t.SchemaHash = ""
	if len(t.Schema) > MaxSchemaBytes {
		return nil, apperr.New(apperr.TooLarge, "schema is %d bytes; at most %d", len(t.Schema), MaxSchemaBytes)
	}
	if len(t.Example) > MaxDataBytes {
		return nil, apperr.New(apperr.TooLarge, "example is %d bytes; at most %d", len(t.Example), MaxDataBytes)
	}
	if len(t.Example) > 0 && t.Example[0] != '{' {
		return nil, apperr.New(apperr.Invalid, "example must be a JSON object, as an event's data is")
	}
	if len(t.Schema) == 0 {
		return nil, nil
	}
	if t.Schema[0] != '{' {
		// true and false are schemas too, but the API and MCP declare an
		// object, and {} and {"not": {}} say the same.
		return nil, apperr.New(apperr.Invalid, "schema must be a JSON object, e.g. {\"type\": \"object\", \"required\": [\"invoice_id\"]}")
	}
	s, err := CompileSchema(t.Schema)
	if err != nil {
		return nil, err
	}
	if len(t.Example) > 0 {
		if err := s.check(t.Example, "example"); err != nil {
			return nil, err
		}
	}
	t.SchemaHash = SchemaHash(t.Schema)
	return s, nil
}

func compactOrNone(raw json.RawMessage, field string) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, apperr.New(apperr.Invalid, "%s is not valid JSON: %v", field, err)
	}
	return b.Bytes(), nil
}

// SchemaCache keeps compiled schemas by hash. An entry can never be stale
// (another schema has another hash); the cache is bounded by dropping
// everything when it is full, which costs a recompile of the schemas in
// use and nothing else.
type SchemaCache struct {
	mu sync.RWMutex
	m  map[string]*Schema
}

// schemaCacheMax is the most compiled schemas one process keeps.
const schemaCacheMax = 4096

// Get returns the compiled schema of a hash, if kept.
func (c *SchemaCache) Get(hash string) (*Schema, bool) {
	c.mu.RLock()
	s, ok := c.m[hash]
	c.mu.RUnlock()
	return s, ok
}

// Put keeps a compiled schema by its hash.
func (c *SchemaCache) Put(hash string, s *Schema) {
	c.mu.Lock()
	if c.m == nil || len(c.m) >= schemaCacheMax {
		c.m = map[string]*Schema{}
	}
	c.m[hash] = s
	c.mu.Unlock()
}
