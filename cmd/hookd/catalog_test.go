package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// catalogNodes starts `hookd serve` processes on one database and runs
// one-shot commands on it: SQLite (one file) or PostgreSQL (one schema).
type catalogNodes struct {
	start func(t *testing.T, flags ...string) (base string, stop func())
	admin func(t *testing.T, args ...string) (string, error)
}

// TestCatalogSurvivesOtherProcesses: a server started with --catalog
// standmeet, then an admin command on the same database while it runs,
// then another server without the flag: every owner is still offered
// standmeet's 39 types (42 with hookd's 3 failure notifications), and a
// standmeet event is delivered by the second server. On PostgreSQL the
// second node starts while the first runs (a rolling deploy); on SQLite,
// which serves one process, after it stopped. Only `hookd catalog remove`
// takes a shared type away, and it refuses hookd's built-in types and
// names it does not hold, removing nothing.
func TestCatalogSurvivesOtherProcesses(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		db := filepath.Join(dir, "hookd.db")
		checkCatalogSurvives(t, false, catalogNodes{
			start: func(t *testing.T, flags ...string) (string, func()) {
				p := startServe(t, dir, flags...)
				return "http://" + p.addr, func() {
					_ = p.cmd.Process.Signal(syscall.SIGTERM)
					<-p.done
				}
			},
			admin: func(t *testing.T, args ...string) (string, error) {
				out, err := exec.Command(serveBinary(t), append(args, "--db", db)...).CombinedOutput()
				return string(out), err
			},
		})
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		c := newScaleCluster(t)
		n := 0
		checkCatalogSurvives(t, true, catalogNodes{
			start: func(t *testing.T, flags ...string) (string, func()) {
				n++
				p := c.start(t, fmt.Sprintf("node%d", n), append([]string{"--addr", "127.0.0.1:0"}, flags...)...)
				return "http://" + p.addr, func() { p.stop(t) }
			},
			admin: func(t *testing.T, args ...string) (string, error) { return c.run(t, args...) },
		})
	})
}

func checkCatalogSurvives(t *testing.T, together bool, nodes catalogNodes) {
	// An admin command adds nothing, not even hookd's built-in types.
	if out, err := nodes.admin(t, "owner", "create", "beta"); err != nil {
		t.Fatalf("hookd owner create: %v\n%s", err, out)
	}
	if out, err := nodes.admin(t, "catalog", "list", "--json"); err != nil || strings.TrimSpace(out) != "[]" {
		t.Fatalf("the catalog after an admin command on a new database: %v, %s; want it empty", err, out)
	}
	first, stopFirst := nodes.start(t, "--catalog", "standmeet")
	out, err := nodes.admin(t, "apikey", "create", "--owner", "acme")
	if err != nil {
		t.Fatalf("hookd apikey create: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	key := lines[len(lines)-1]
	offered := func(base string) []string {
		t.Helper()
		var got struct {
			Data []struct{ Name string } `json:"data"`
		}
		catalogCall(t, base, key, "GET", "/api/admin/webhooks/event_types", nil, 200, &got)
		var names []string
		for _, d := range got.Data {
			names = append(names, d.Name)
		}
		return names
	}
	wantOffered := func(base, when string, n int, with ...string) {
		t.Helper()
		names := offered(base)
		for _, w := range with {
			if !slices.Contains(names, w) {
				t.Fatalf("%s: %s not offered among %d types %v", when, w, len(names), names)
			}
		}
		if len(names) != n {
			t.Fatalf("%s: %d types offered, want %d: %v", when, len(names), n, names)
		}
	}
	wantOffered(first, "after an admin command", 42, "corpus.note.changed", "booking.created", "hookd.endpoint.failing")

	var second string
	if together {
		second, _ = nodes.start(t)
		wantOffered(second, "a node started without --catalog beside one with it", 42, "corpus.note.changed")
		stopFirst()
	} else {
		stopFirst()
		second, _ = nodes.start(t)
	}
	wantOffered(second, "a node started without --catalog", 42, "corpus.note.changed", "booking.created")

	got := make(chan []byte, 10)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- b
	}))
	t.Cleanup(rc.Close)
	catalogCall(t, second, key, "POST", "/api/admin/webhooks", map[string]any{"url": rc.URL, "event_types": []string{"corpus.*"}}, 201, nil)
	var ev struct{ ID string }
	catalogCall(t, second, key, "POST", "/api/v1/events", map[string]any{"type": "corpus.note.changed", "subject": "note://1", "data": map[string]any{"published": true}}, 202, &ev)
	select {
	case b := <-got:
		if !bytes.Contains(b, []byte(ev.ID)) {
			t.Fatalf("delivered %s, want event %s", b, ev.ID)
		}
	case <-time.After(time.Minute):
		t.Fatal("corpus.note.changed was not delivered by the node without --catalog")
	}

	// Only an operator's explicit removal takes a type away, all or none.
	for _, bad := range []struct{ names, says string }{
		{"booking.created,webhook.test", "webhook.test is built into hookd"},
		{"booking.created,no.such.type", "not in the shared catalog: no.such.type"},
	} {
		out, err := nodes.admin(t, "catalog", "remove", bad.names)
		if err == nil || !strings.Contains(out, bad.says) {
			t.Fatalf("hookd catalog remove %s: %v, %s; want a refusal saying %q", bad.names, err, out, bad.says)
		}
	}
	wantOffered(second, "after refused removals", 42, "booking.created")
	if out, err := nodes.admin(t, "catalog", "remove", "booking.created"); err != nil {
		t.Fatalf("hookd catalog remove: %v\n%s", err, out)
	}
	names := offered(second)
	if slices.Contains(names, "booking.created") || len(names) != 41 {
		t.Fatalf("after removing booking.created: %d types %v", len(names), names)
	}

	// The commands' changes are in the audit log, by the CLI: the key's
	// creation in acme's, the removal (server-wide) in the operators'.
	var records struct {
		Data []struct {
			Op    string
			Actor struct{ Kind, Name string }
		}
	}
	catalogCall(t, second, key, "GET", "/api/admin/audit?op=api_keys.create", nil, 200, &records)
	if len(records.Data) != 1 || records.Data[0].Actor.Kind != "cli" || records.Data[0].Actor.Name != "hookd apikey create" {
		t.Errorf("acme's audit records of api_keys.create: %+v, want one by the CLI", records.Data)
	}
	out, err = nodes.admin(t, "apikey", "create", "--role", "operator")
	if err != nil {
		t.Fatalf("hookd apikey create --role operator: %v\n%s", err, out)
	}
	lines = strings.Split(strings.TrimSpace(out), "\n")
	catalogCall(t, second, lines[len(lines)-1], "GET", "/api/admin/audit?op=catalog.remove", nil, 200, &records)
	if len(records.Data) != 1 || records.Data[0].Actor.Kind != "cli" {
		t.Errorf("the audit records of catalog.remove: %+v, want one by the CLI", records.Data)
	}
}

func catalogCall(t *testing.T, base, key, method, path string, body any, want int, out any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, base+path, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
}
