package openapi_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/openapi"
	"github.com/hookd/hookd/internal/ops"
)

var update = flag.Bool("update", false, "rewrite testdata/openapi.golden.json from the op declarations")

// TestGolden fails when an op declaration changes and the checked-in
// document does not: the API changed, and the change must be reviewed.
// go test ./internal/openapi -update rewrites it.
func TestGolden(t *testing.T) {
	t.Parallel()
	got, err := openapi.JSON((&ops.Service{}).Ops(), openapi.DefaultInfo)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "openapi.golden.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/openapi -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the OpenAPI document differs from %s: an op changed. Review the difference, then run go test ./internal/openapi -update\n%s", path, firstDiff(string(want), string(got)))
	}
}

func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "line " + itoa(i+1) + ":\n- " + wl + "\n+ " + gl
		}
	}
	return ""
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// TestEveryOp checks the document's shape op by op: each op is one
// operation, under its path and method, with every path parameter declared,
// its success status, bearer auth, and the errors every op can answer.
func TestEveryOp(t *testing.T) {
	t.Parallel()
	list := (&ops.Service{}).Ops()
	b, err := openapi.JSON(list, openapi.DefaultInfo)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI  string                                `json:"openapi"`
		Security []map[string][]string                 `json:"security"`
		Paths    map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" || len(doc.Security) != 1 || doc.Security[0]["bearer"] == nil {
		t.Fatalf("openapi %q security %v", doc.OpenAPI, doc.Security)
	}
	n := 0
	for _, m := range doc.Paths {
		for _, o := range m {
			if !strings.Contains(string(o), `"x-hookd-route": true`) { // a route written by hand (routes.go), not an op
				n++
			}
		}
	}
	if n != len(list) {
		t.Errorf("document has %d operations, ops declare %d", n, len(list))
	}
	for _, op := range list {
		raw, ok := doc.Paths[op.Path][strings.ToLower(op.Method)]
		if !ok {
			t.Errorf("%s: no operation %s %s", op.Name, op.Method, op.Path)
			continue
		}
		var o struct {
			OperationID string `json:"operationId"`
			Parameters  []struct {
				Name, In string
				Required bool
			} `json:"parameters"`
			RequestBody *json.RawMessage           `json:"requestBody"`
			Responses   map[string]json.RawMessage `json:"responses"`
		}
		if err := json.Unmarshal(raw, &o); err != nil {
			t.Fatal(err)
		}
		if o.OperationID != op.Name {
			t.Errorf("%s %s: operationId %q, want %q", op.Method, op.Path, o.OperationID, op.Name)
		}
		for _, seg := range strings.Split(op.Path, "/") {
			if !strings.HasPrefix(seg, "{") {
				continue
			}
			name := strings.Trim(seg, "{}")
			found := false
			for _, p := range o.Parameters {
				found = found || p.In == "path" && p.Name == name && p.Required
			}
			if !found {
				t.Errorf("%s: path parameter %s not declared as required", op.Name, name)
			}
		}
		if _, ok := o.Responses[itoa(op.Status)]; !ok {
			t.Errorf("%s: success status %d not documented", op.Name, op.Status)
		}
		if _, ok := o.Responses["401"]; !ok {
			t.Errorf("%s: 401 not documented", op.Name)
		}
		if op.Method == "GET" && o.RequestBody != nil {
			t.Errorf("%s: a GET with a request body", op.Name)
		}
	}
}

// TestBodyLeavesOutParameters: fields bound from the path, query or headers
// are parameters, not body properties.
func TestBodyLeavesOutParameters(t *testing.T) {
	t.Parallel()
	doc, err := openapi.Build((&ops.Service{}).Ops(), openapi.DefaultInfo)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(doc)
	var d struct {
		Paths map[string]map[string]struct {
			RequestBody struct {
				Content map[string]struct {
					Schema struct {
						Properties map[string]any `json:"properties"`
					} `json:"schema"`
				} `json:"content"`
			} `json:"requestBody"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	update := d.Paths["/api/admin/webhooks/{id}"]["patch"].RequestBody.Content["application/json"].Schema.Properties
	if _, ok := update["id"]; ok || update["url"] == nil {
		t.Errorf("webhooks.update body properties %v: want url, not id", update)
	}
	publish := d.Paths["/api/v1/events"]["post"].RequestBody.Content["application/json"].Schema.Properties
	if _, ok := publish["idempotency_key"]; ok || publish["type"] == nil {
		t.Errorf("events.publish body properties %v: want type, not idempotency_key (a header)", publish)
	}
	if body := d.Paths["/api/admin/webhooks/{id}/send_test"]["post"].RequestBody.Content; len(body) != 0 {
		t.Errorf("webhooks.send_test has a body %v; it takes only the path id", body)
	}
}

// TestAPIDoc keeps docs/api.md, the route list the README points to, in
// step with the op declarations (go test ./internal/openapi -run TestAPIDoc
// -update, or make docs, rewrites it).
func TestAPIDoc(t *testing.T) {
	t.Parallel()
	list := (&ops.Service{}).Ops()
	got, err := openapi.Markdown(list)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "docs", "api.md")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (make docs creates it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("docs/api.md is not what the op declarations give: run make docs\n%s", firstDiff(string(want), string(got)))
	}
	for _, op := range list {
		if !bytes.Contains(want, []byte("`"+op.Method+" "+op.Path+"`")) {
			t.Errorf("docs/api.md lacks %s %s (%s)", op.Method, op.Path, op.Name)
		}
	}
}
