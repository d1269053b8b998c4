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
	// Not parallel: t.Setenv (run reads HOOKD_* from the process environment).
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
	t.Parallel()
	db := filepath.Join(t.TempDir(), "hookd.db")
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"mcp", "--db", db, "--key", "hkd_nope"}, strings.NewReader(""), io.Discard, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "not recognised") {
		t.Errorf("exit %d, stderr %q: want 1 and the key refused", code, stderr.String())
	}
}

// TestMCPStdioClosedPipe: a client that writes initialize, initialized and
// tools/list and then closes stdin gets both answers, in order, and hookd
// mcp exits 0 — 20 runs in a row (it answered about half of them when the
// end of stdin cancelled the requests still queued).
func TestMCPStdioClosedPipe(t *testing.T) {
	// Not parallel: t.Setenv (run reads HOOKD_* from the process environment).
	db := filepath.Join(t.TempDir(), "hookd.db")
	t.Setenv("HOOKD_MASTER_KEY", "")
	t.Setenv("HOOKD_API_KEY", "")
	const in = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
`
	tools := len((&ops.Service{}).Ops())
	for run1 := range 20 {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"mcp", "--db", db, "--log-level", "warn"}, strings.NewReader(in), &stdout, &stderr)
		if code != 0 {
			t.Fatalf("run %d: exit %d, stderr %s", run1, code, stderr.String())
		}
		type answer struct {
			ID     int `json:"id"`
			Result struct {
				ProtocolVersion string            `json:"protocolVersion"`
				Tools           []json.RawMessage `json:"tools"`
			} `json:"result"`
		}
		var answers []answer
		dec := json.NewDecoder(&stdout)
		for dec.More() {
			var a answer
			if err := dec.Decode(&a); err != nil {
				t.Fatalf("run %d: stdout is not JSON lines: %v", run1, err)
			}
			answers = append(answers, a)
		}
		if len(answers) != 2 || answers[0].ID != 1 || answers[0].Result.ProtocolVersion == "" || answers[1].ID != 2 || len(answers[1].Result.Tools) != tools {
			t.Fatalf("run %d: answers %+v (stderr %s); want initialize's then tools/list's with %d tools", run1, answers, stderr.String(), tools)
		}
		if strings.Contains(stderr.String(), "before initialize") {
			t.Fatalf("run %d: stderr %s", run1, stderr.String())
		}
	}
}
