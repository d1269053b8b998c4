package event

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/apperr"
)

// TestSchemaMessages: a refusal names each failing field by its JSON
// pointer under data and says why; a schema that does not compile is
// refused naming schema and the place in it.
func TestSchemaMessages(t *testing.T) {
	t.Parallel()
	s, err := CompileSchema([]byte(`{"type":"object","required":["id"],"properties":{
		"amount":{"type":"number","minimum":0},
		"a/b":{"properties":{"~x":{"type":"string"}}},
		"tags":{"type":"array","items":{"type":"string"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		data string
		want []string // "" data: valid
	}{
		{`{"id":1,"amount":0}`, nil},
		{`{"id":1,"amount":-1}`, []string{"data/amount: minimum: got -1, want 0"}},
		{`{"amount":1}`, []string{"data: missing property 'id'"}},
		{`{"id":1,"a/b":{"~x":3}}`, []string{"data/a~1b/~0x: got number, want string"}},
		{`{"id":1,"tags":["ok",7]}`, []string{"data/tags/1: got number, want string"}},
		{`{"amount":-1}`, []string{"data: missing property 'id'", "data/amount: minimum"}},
	} {
		err := s.Validate([]byte(c.data))
		if c.want == nil {
			if err != nil {
				t.Errorf("%s: %v; want valid", c.data, err)
			}
			continue
		}
		if apperr.CodeOf(err) != apperr.Invalid {
			t.Errorf("%s: %v; want invalid", c.data, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(apperr.MessageOf(err), w) {
				t.Errorf("%s: %q does not say %q", c.data, apperr.MessageOf(err), w)
			}
		}
	}
	for schema, want := range map[string]string{
		`{"type":"objekt"}`:                     "schema/type",
		`{"properties":{"a":{"pattern":"("}}}`:  "schema/properties/a/pattern",
		`[1]`:                                   "schema: got array",
		`{"$ref":"https://example.com/s.json"}`: "does not load external schemas",
		`{"$ref":"file:///etc/passwd"}`:         "does not load external schemas",
		`{`:                                     "schema is not valid JSON",
	} {
		_, err := CompileSchema([]byte(schema))
		if apperr.CodeOf(err) != apperr.Invalid || !strings.Contains(apperr.MessageOf(err), want) {
			t.Errorf("schema %s: %v; want invalid saying %q", schema, err, want)
		}
	}
}

// TestCheckSchema: the stored form is compact, hashed by its text; an
// example must match; null and empty are none.
func TestCheckSchema(t *testing.T) {
	t.Parallel()
	ty := Type{Schema: []byte(" {\"type\": \"object\",\n \"maxProperties\": 1} "), Example: []byte(`{"a": 1}`)}
	sch, err := ty.CheckSchema()
	if err != nil || sch == nil {
		t.Fatal(err)
	}
	if string(ty.Schema) != `{"type":"object","maxProperties":1}` || string(ty.Example) != `{"a":1}` || ty.SchemaHash != SchemaHash(ty.Schema) {
		t.Fatalf("stored as %s, %s, %s", ty.Schema, ty.Example, ty.SchemaHash)
	}
	other := Type{Schema: []byte(`{"type":"object","maxProperties":2}`)}
	if _, err := other.CheckSchema(); err != nil || other.SchemaHash == ty.SchemaHash {
		t.Fatalf("another schema, hash %q (err %v): want another hash", other.SchemaHash, err)
	}
	ty.Example = []byte(`{"a": 1, "b": 2}`)
	if _, err := ty.CheckSchema(); err == nil || !strings.Contains(apperr.MessageOf(err), "example: maxProperties: got 2, want 1") {
		t.Fatalf("an example that does not match: %v", err)
	}
	for _, notObject := range []string{"true", "false", "[]", `"x"`} {
		nt := Type{Schema: []byte(notObject)}
		if _, err := nt.CheckSchema(); apperr.CodeOf(err) != apperr.Invalid || !strings.Contains(err.Error(), "schema must be a JSON object") {
			t.Errorf("schema %s: %v; want refused as not an object", notObject, err)
		}
	}
	none := Type{Schema: []byte("null"), Example: []byte(" ")}
	if sch, err := none.CheckSchema(); err != nil || sch != nil || none.Schema != nil || none.SchemaHash != "" {
		t.Fatalf("null schema: %v, %v, %+v", sch, err, none)
	}
}

// TestCatalogSchema: a catalog file's types carry a schema and example
// written in YAML; a bad one is refused naming the file, entry and field.
func TestCatalogSchema(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	must(t, os.WriteFile(good, []byte(`event_types:
  - name: order.paid
    exposure: webhook
    schema:
      type: object
      required: [amount]
      properties:
        amount: {type: integer, minimum: 0}
    example: {amount: 5}
`), 0o600))
	c, err := LoadCatalogFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if len(c) != 1 || c[0].SchemaHash == "" || string(c[0].Example) != `{"amount":5}` {
		t.Fatalf("loaded %+v", c)
	}
	sch, err := CompileSchema(c[0].Schema)
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate([]byte(`{"amount":-1}`)); err == nil {
		t.Fatal("the loaded schema takes a negative amount")
	}
	bad := filepath.Join(dir, "bad.json")
	must(t, os.WriteFile(bad, []byte(`[{"name": "ok.one"}, {"name": "order.paid", "schema": {"type": "integer"}, "example": {"a": 1}}]`), 0o600))
	_, err = LoadCatalogFile(bad)
	if err == nil || !strings.Contains(err.Error(), "entry 1 (order.paid): example does not match the event type's schema: example: got object, want integer") || !strings.Contains(err.Error(), bad) {
		t.Fatalf("bad catalog: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkSchemaValidate is the check alone, per event: a typical order
// schema and payload (internal/delivery's BenchmarkPublishSchema measures
// it inside a publish).
func BenchmarkSchemaValidate(b *testing.B) {
	s, err := CompileSchema([]byte(`{"type":"object","required":["order_id","amount","currency"],"properties":{
	"order_id":{"type":"string","pattern":"^ord_[a-z0-9]+$"},
	"amount":{"type":"integer","minimum":0},
	"currency":{"enum":["EUR","USD","GBP"]},
	"customer":{"type":"object","properties":{"id":{"type":"string"},"email":{"type":"string","maxLength":254}}},
	"items":{"type":"array","maxItems":100,"items":{"type":"object","required":["sku","qty"],"properties":{"sku":{"type":"string"},"qty":{"type":"integer","minimum":1}}}}}}`))
	if err != nil {
		b.Fatal(err)
	}
	data := []byte(`{"order_id":"ord_12","amount":12,"currency":"EUR","customer":{"id":"cus_1","email":"a@example.com"},"items":[{"sku":"tea","qty":2},{"sku":"cup","qty":1}]}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Validate(data); err != nil {
			b.Fatal(err)
		}
	}
}

// TestReadmeSchemaExample: README's catalog entry with a schema loads, and
// its schema refuses what README says it refuses.
func TestReadmeSchemaExample(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	must(t, err)
	_, rest, ok := strings.Cut(string(b), "```yaml\n- name: invoice.paid\n")
	block, _, closed := strings.Cut(rest, "```")
	if !ok || !closed {
		t.Fatal("README.md has no ```yaml block starting with - name: invoice.paid")
	}
	path := filepath.Join(t.TempDir(), "types.yaml")
	must(t, os.WriteFile(path, []byte("- name: invoice.paid\n"+block), 0o600))
	c, err := LoadCatalogFile(path)
	if err != nil || len(c) != 1 || c[0].Example == nil {
		t.Fatalf("README's catalog: %+v, %v", c, err)
	}
	sch, err := CompileSchema(c[0].Schema)
	must(t, err)
	err = sch.Validate([]byte(`{"invoice_id":"inv_1","amount":-1}`))
	if !strings.Contains(apperr.MessageOf(err), "data/amount: minimum: got -1, want 0") {
		t.Fatalf("README's schema answers %v", err)
	}
}
