package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/dbtest"
)

// TestOpenAPIRoutes fetches GET /openapi.json from the running server and
// calls every documented operation on the real handler, with an operator
// key naming an owner and real ids: each answers its documented success
// status or a documented error — never a missing route, 405 or a 5xx.
func TestOpenAPIRoutes(t *testing.T) {
	t.Parallel()
	w := newWorld(t, dbtest.Backends()[0])
	resp, err := http.Get(w.api.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /openapi.json: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var doc struct {
		OpenAPI string `json:"openapi"`
		Paths   map[string]map[string]struct {
			OperationID string                     `json:"operationId"`
			Responses   map[string]json.RawMessage `json:"responses"`
			Route       bool                       `json:"x-hookd-route"` // written by hand, not an op
		} `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil || doc.OpenAPI != "3.1.0" {
		t.Fatalf("not an OpenAPI 3.1 document (%v): %.200s", err, raw)
	}

	// A throwaway owner and key for the destructive operations.
	w.must(w.rest(w.op("owners.create"), w.operator, "", map[string]any{"id": "scratch"}))
	keyID := field(t, w.must(w.rest(w.op("api_keys.create"), w.operator, "bob", map[string]any{"role": "publisher"})).body, "id")
	samples := map[string]string{
		"/api/admin/webhooks/{id}":                          w.bob.endpoint,
		"/api/admin/grants/{id}":                            w.bob.grant,
		"/api/v1/events/{id}":                               w.bob.event,
		"/api/admin/event_types/{type}":                     "invoice.paid",
		"/api/admin/owners/{id}":                            "scratch",
		"/api/admin/api_keys/{id}":                          keyID,
		"/api/admin/tasks/{job}":                            strconv.FormatInt(w.bob.job, 10),
		"/api/admin/webhooks/{id}/deliveries/{delivery_id}": w.bob.endpoint + "/deliveries/" + w.bob.delivery,
		"/api/admin/webhooks/{id}/recoveries/{task_id}":     w.bob.endpoint + "/recoveries/" + strconv.FormatInt(w.bob.job, 10),
		"/api/v1/poll/{id}":                                 w.bob.endpoint,
	}

	type route struct{ path, method, op string }
	var routes []route
	opRoutes := 0
	for path, methods := range doc.Paths {
		for method, o := range methods {
			routes = append(routes, route{path, strings.ToUpper(method), o.OperationID})
			if !o.Route {
				opRoutes++
			}
		}
	}
	// Deletes last, so the other routes find what they act on.
	slices.SortFunc(routes, func(a, b route) int {
		if (a.method == "DELETE") != (b.method == "DELETE") {
			if a.method == "DELETE" {
				return 1
			}
			return -1
		}
		return strings.Compare(a.path+a.method, b.path+b.method)
	})
	if opRoutes != len(w.ops) {
		t.Errorf("document has %d operations, hookd declares %d ops", opRoutes, len(w.ops))
	}
	for _, r := range routes {
		url, longest := r.path, 0
		for prefix, v := range samples {
			if rest, ok := strings.CutPrefix(r.path, prefix); ok && len(prefix) > longest {
				url, longest = prefix[:strings.Index(prefix, "{")]+v+rest, len(prefix)
			}
		}
		if strings.Contains(url, "{") {
			t.Errorf("%s %s: no sample value for its path parameter: add one", r.method, r.path)
			continue
		}
		documented := doc.Paths[r.path][strings.ToLower(r.method)].Responses
		// Without a key, with a publisher key, then with an operator's.
		for _, key := range []string{"", w.keys["bob/publisher"], w.operator} {
			var body io.Reader
			if r.method == "POST" || r.method == "PUT" || r.method == "PATCH" {
				body = bytes.NewBufferString("{}")
			}
			req, _ := http.NewRequest(r.method, w.api.URL+url, body)
			if key != "" {
				req.Header.Set("Authorization", "Bearer "+key)
			}
			if key == w.operator {
				req.Header.Set("Hookd-Owner", "bob")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if _, ok := documented[strconv.Itoa(resp.StatusCode)]; !ok || resp.StatusCode == 405 || resp.StatusCode >= 500 || bytes.Contains(got, []byte("no route")) {
				t.Errorf("%s %s (%s) as %s: %d %.200s; documented: %v", r.method, url, r.op, roleOf(w, key), resp.StatusCode, got, keys(documented))
			}
			if key == "" && resp.StatusCode != 401 {
				t.Errorf("%s %s without a key: %d, want 401", r.method, url, resp.StatusCode)
			}
		}
	}
}

func keys(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
