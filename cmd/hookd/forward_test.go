package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestListenForwardRefused: when hookd refuses the listener's loopback
// address (started without --egress-allow), `hookd listen --forward` says
// how to start hookd instead; a key hookd does not know is named as such.
// Neither leaves an endpoint behind.
func TestListenForwardRefused(t *testing.T) {
	// Not parallel: serveInProcess sets the process environment.
	db, url, key := serveInProcess(t)

	listen := func(key string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"listen", "--forward", "--url", url, "--key", key, "--types", "invoice.*", "--addr", "127.0.0.1:0"}, nil, &stdout, &stderr)
		return code, stderr.String()
	}
	code, msg := listen(key)
	if code != 1 || !strings.Contains(msg, "start hookd with --egress-allow 127.0.0.1/32") {
		t.Errorf("listen --forward against hookd without --egress-allow: exit %d, %q; want 1 and the flag to start hookd with", code, msg)
	}
	code, msg = listen("hkd_unknown")
	if code != 1 || !strings.Contains(msg, "refused --key") {
		t.Errorf("listen --forward with an unknown key: exit %d, %q", code, msg)
	}
	var list bytes.Buffer
	if code := run(context.Background(), []string{"mcp", "--db", db, "--log-level", "warn"},
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"webhooks.list","arguments":{"owner":"acme"}}}
`), &list, io.Discard); code != 0 || !strings.Contains(list.String(), `\"data\":[]`) {
		t.Errorf("after the refusals acme's endpoints are %s, want none", list.String())
	}
}

// serveInProcess runs `hookd serve` in this process on a fresh SQLite
// database, with no master key, egress allowance or API key from the
// environment, and an admin key for acme; it returns the database's path,
// hookd's URL and the key. Not for parallel tests: it sets the process
// environment (run reads HOOKD_*).
func serveInProcess(t *testing.T) (db, url, key string) {
	t.Helper()
	db = filepath.Join(t.TempDir(), "hookd.db")
	t.Setenv("HOOKD_MASTER_KEY", "")
	t.Setenv("HOOKD_EGRESS_ALLOW", "")
	t.Setenv("HOOKD_API_KEY", "")
	var keyOut, stderr bytes.Buffer
	if code := run(context.Background(), []string{"apikey", "create", "--owner", "acme", "--db", db, "--log-level", "warn"}, nil, &keyOut, &stderr); code != 0 {
		t.Fatalf("apikey create: %d %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(keyOut.String()), "\n")
	key = lines[len(lines)-1]

	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	served := make(chan int, 1)
	go func() {
		served <- run(ctx, []string{"serve", "--db", db, "--addr", "127.0.0.1:0", "--log-level", "warn"}, nil, pw, io.Discard)
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
	select {
	case url = <-addr:
	case <-time.After(30 * time.Second):
		t.Fatal("hookd serve did not start")
	}
	return db, url, key
}
