package main

import (
	"strings"
	"testing"
)

// TestServeNoTransformations: hookd serve --no-transformations refuses a
// new endpoint's script with a 422 that says so, and still takes a filter;
// without the flag the same script is saved.
func TestServeNoTransformations(t *testing.T) {
	t.Parallel()
	const script = `{"url": "https://example.com/hook", "event_types": ["*"], "transformation": "function handler(w) { return w }", "filter": "true"}`
	dir := t.TempDir()
	key := createKey(t, dir)
	p := startServe(t, dir, "--no-transformations")
	out := call(t, p, key, "POST", "/api/admin/webhooks", script, 422)
	if msg, _ := out["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "turned off") {
		t.Fatalf("with --no-transformations: %v", out)
	}
	call(t, p, key, "POST", "/api/admin/webhooks", `{"url": "https://example.com/hook", "event_types": ["*"], "filter": "true"}`, 201)

	dir2 := t.TempDir()
	key2 := createKey(t, dir2)
	out = call(t, startServe(t, dir2), key2, "POST", "/api/admin/webhooks", script, 201)
	if out["transformation"] != "function handler(w) { return w }" {
		t.Fatalf("without the flag: %v", out)
	}
}
