package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hookd/hookd/internal/ops"
)

// TestMCPStdio runs `hookd mcp` on its stdin and stdout, as an MCP host
// launches it, and drives it with the SDK's client: as the local operator
// it lists every op, creates an owner and acts on it.
func TestMCPStdio(t *testing.T) {
	db := filepath.Join(t.TempDir(), "hookd.db")
	t.Setenv("HOOKD_MASTER_KEY", "")
	t.Setenv("HOOKD_API_KEY", "")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		code := run(context.Background(), []string{"mcp", "--db", db, "--log-level", "warn"}, inR, outW, &stderr)
		outW.Close()
		done <- code
	}()
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect: %v (stderr: %s)", err, stderr.String())
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len((&ops.Service{}).Ops()); len(tools.Tools) != n {
		t.Errorf("%d tools, want %d (one per op)", len(tools.Tools), n)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"owners.create", map[string]any{"id": "acme"}, `"id":"acme"`},
		{"webhooks.list", map[string]any{"owner": "acme"}, `"data":[]`},
		{"api_keys.create", map[string]any{"owner": "acme", "role": "publisher"}, `"role":"publisher"`},
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil {
			t.Fatal(err)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if res.IsError || !strings.Contains(text, c.want) {
			t.Errorf("%s: %s, want %s", c.tool, text, c.want)
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "webhooks.list", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	var e struct{ Error struct{ Code string } }
	_ = json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &e)
	if !res.IsError || e.Error.Code != "invalid" {
		t.Errorf("operator without an owner: %+v, want invalid", res)
	}
	cs.Close()
	inW.Close()
	if code := <-done; code != 0 {
		t.Errorf("hookd mcp exited %d: %s", code, stderr.String())
	}
}

// TestMCPStdioBadKey: a key hookd does not know is refused at start.
func TestMCPStdioBadKey(t *testing.T) {
	db := filepath.Join(t.TempDir(), "hookd.db")
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"mcp", "--db", db, "--key", "hkd_nope"}, strings.NewReader(""), io.Discard, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "not recognised") {
		t.Errorf("exit %d, stderr %q: want 1 and the key refused", code, stderr.String())
	}
}
