package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMCPOfficialClient runs the official MCP TypeScript SDK's client
// (test/mcp-client, @modelcontextprotocol/sdk) against /mcp with a bearer
// key and against `hookd mcp` over stdio: it connects, lists the tools (the
// SDK refuses the whole list over one schema it rejects), compiles every
// tool's input and output schema with Ajv, creates an endpoint, gets a tool
// error for a bad URL and lists the endpoint.
func TestMCPOfficialClient(t *testing.T) {
	// Not parallel: t.Setenv (run reads HOOKD_* from the process environment).
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is needed for the official MCP client test (Debian package nodejs)")
	}
	clientDir, err := filepath.Abs(filepath.Join("..", "..", "test", "mcp-client"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(clientDir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		t.Fatal("test/mcp-client has no node_modules: run make mcp-client (make test does: npm ci)")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "hookd.db")
	t.Setenv("HOOKD_MASTER_KEY", "")
	t.Setenv("HOOKD_API_KEY", "")
	var keyOut, stderr bytes.Buffer
	if code := run(context.Background(), []string{"apikey", "create", "--owner", "acme", "--db", db, "--log-level", "warn"}, nil, &keyOut, &stderr); code != 0 {
		t.Fatalf("apikey create: %d %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(keyOut.String()), "\n")
	key := lines[len(lines)-1]

	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	served := make(chan int, 1)
	go func() {
		served <- run(ctx, []string{"serve", "--db", db, "--addr", "127.0.0.1:0", "--egress-allow", "127.0.0.1/32", "--log-level", "warn"}, nil, pw, io.Discard)
		pw.Close()
	}()
	t.Cleanup(func() { cancel(); <-served })
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "hookd listening on "); ok {
				addr <- strings.Fields(a)[0]
			}
		}
	}()
	var url string
	select {
	case url = <-addr:
	case <-time.After(30 * time.Second):
		t.Fatal("hookd serve did not start")
	}

	client := func(t *testing.T, args ...string) {
		t.Helper()
		cctx, ccancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer ccancel()
		cmd := exec.CommandContext(cctx, node, append([]string{"client.mjs"}, args...)...)
		cmd.Dir = clientDir
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "ok done") {
			t.Fatalf("official MCP client: %v\n%s", err, out)
		}
		for _, want := range []string{"ok tools/list", "ok schemas", "ok webhooks.create ep_", `ok tool error {"error":{"code":"invalid"`, "ok webhooks.list"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("client output lacks %q:\n%s", want, out)
			}
		}
	}
	t.Run("http", func(t *testing.T) { client(t, "http", url+"/mcp", key) })
	t.Run("stdio", func(t *testing.T) {
		client(t, "stdio", serveBinary(t), "mcp", "--db", db, "--key", key, "--egress-allow", "127.0.0.1/32", "--log-level", "warn")
	})
}
