package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/store"
)

var (
	serveBinOnce sync.Once
	serveBinPath string
	serveBinErr  error
)

// serveBinary builds the hookd binary once per test run.
func serveBinary(t *testing.T) string {
	t.Helper()
	serveBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hookd-bin")
		if err != nil {
			serveBinErr = err
			return
		}
		serveBinPath = filepath.Join(dir, "hookd")
		out, err := exec.Command("go", "build", "-race", "-o", serveBinPath, ".").CombinedOutput()
		if err != nil {
			serveBinErr = err
			serveBinPath = string(out)
		}
	})
	if serveBinErr != nil {
		t.Fatalf("build hookd: %v\n%s", serveBinErr, serveBinPath)
	}
	return serveBinPath
}

// proc is a running `hookd serve`.
type proc struct {
	cmd  *exec.Cmd
	addr string
	done chan struct{} // closed when the process has exited
	err  error         // its exit error, once done is closed
	logs *bytes.Buffer
	errw *syncWriter // writes logs; signals each write
}

func startServe(t *testing.T, dir string, extra ...string) *proc {
	t.Helper()
	return startServeEnv(t, dir, nil, extra...)
}

// startServeEnv is startServe with env added to the process's environment.
func startServeEnv(t *testing.T, dir string, env []string, extra ...string) *proc {
	t.Helper()
	args := append([]string{"serve", "--db", filepath.Join(dir, "hookd.db"), "--addr", "127.0.0.1:0", "--egress-allow", "127.0.0.1/32", "--log-level", "debug"}, extra...)
	cmd := exec.Command(serveBinary(t), args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	stdout, _ := cmd.StdoutPipe()
	logs := &bytes.Buffer{}
	errw := &syncWriter{w: logs, wrote: make(chan struct{}, 1)}
	cmd.Stderr = errw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{}), logs: logs, errw: errw}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "hookd listening on http://"); ok {
				line <- strings.Fields(a)[0]
			}
		}
	}()
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("hookd logs:\n%s", logs.String())
		}
	})
	select {
	case p.addr = <-line:
	case <-p.done:
		t.Fatalf("hookd exited at start: %v\n%s", p.err, logs)
	case <-time.After(30 * time.Second):
		t.Fatalf("hookd did not start\n%s", logs)
	}
	return p
}

type syncWriter struct {
	mu    sync.Mutex
	w     io.Writer
	wrote chan struct{} // if not nil, signalled after each write
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	n, err := s.w.Write(b)
	s.mu.Unlock()
	if s.wrote != nil {
		select {
		case s.wrote <- struct{}{}:
		default:
		}
	}
	return n, err
}

// waitLog waits until hookd has logged text, failing after d or if it exits.
func (p *proc) waitLog(t *testing.T, text string, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		p.errw.mu.Lock()
		logged := strings.Contains(p.logs.String(), text)
		p.errw.mu.Unlock()
		if logged {
			return
		}
		select {
		case <-p.errw.wrote:
		case <-p.done:
			t.Fatalf("hookd exited before logging %q: %v", text, p.err)
		case <-deadline:
			t.Fatalf("hookd did not log %q within %s", text, d)
		}
	}
}

func createKey(t *testing.T, dir string) string {
	t.Helper()
	out, err := exec.Command(serveBinary(t), "apikey", "create", "--owner", "acme", "--db", filepath.Join(dir, "hookd.db")).Output()
	if err != nil {
		t.Fatalf("apikey create: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

func call(t *testing.T, p *proc, key, method, path, body string, want int) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+p.addr+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, raw)
	}
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return out
}

// holdingReceiver answers each request when release is closed (or at once
// when it is nil), and reports arrivals on got.
type holdingReceiver struct {
	*httptest.Server
	got     chan http.Header
	release chan struct{}
}

func newHoldingReceiver(t *testing.T) *holdingReceiver {
	h := &holdingReceiver{got: make(chan http.Header, 100), release: make(chan struct{})}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		h.got <- r.Header.Clone()
		select {
		case <-h.release:
		case <-r.Context().Done():
			return
		}
		w.WriteHeader(200)
	}))
	t.Cleanup(func() {
		select {
		case <-h.release:
		default:
			close(h.release)
		}
		h.Close()
	})
	return h
}

func recv(t *testing.T, ch chan http.Header, d time.Duration) http.Header {
	t.Helper()
	select {
	case h := <-ch:
		return h
	case <-time.After(d):
		t.Fatalf("no delivery within %s", d)
		return nil
	}
}

// TestServeGracefulShutdown: SIGTERM stops fetching, lets the in-flight
// delivery finish, then exits 0; the delivery is recorded delivered.
func TestServeGracefulShutdown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := createKey(t, dir)
	p := startServe(t, dir)
	rc := newHoldingReceiver(t)
	call(t, p, key, "PUT", "/api/admin/event_types/order.paid", `{"exposure":"webhook"}`, 200)
	call(t, p, key, "POST", "/api/admin/webhooks", `{"url":"`+rc.URL+`","event_types":["order.*"]}`, 201)
	ev := call(t, p, key, "POST", "/api/v1/events", `{"type":"order.paid","data":{"n":1}}`, 202)
	recv(t, rc.got, 15*time.Second)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The signal has landed, and the POST is still in flight, once hookd
	// says it is shutting down.
	p.waitLog(t, "shutting down", 15*time.Second)
	close(rc.release)
	select {
	case <-p.done:
		if p.err != nil {
			t.Fatalf("hookd exited with %v\n%s", p.err, p.logs)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("hookd did not stop after SIGTERM")
	}
	db, err := store.Open(context.Background(), store.Config{URL: filepath.Join(dir, "hookd.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n, err := db.Count(context.Background(), `SELECT count(*) FROM hookd_deliveries WHERE event_id = $1 AND state = 'delivered'`, ev["id"])
	if err != nil || n != 1 {
		t.Fatalf("delivered count %d, %v; logs:\n%s", n, err, p.logs)
	}
}

// TestServeKilledMidFlight: a process killed during a delivery leaves a
// running job and a held lease; a new process rescues the job and delivers
// it with the same webhook-id.
func TestServeKilledMidFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for River's rescuer")
	}
	t.Parallel()
	dir := t.TempDir()
	key := createKey(t, dir)
	fast := []string{"--rescue-after", "3s", "--job-timeout", "2s", "--http-timeout", "1s", "--lease-for", "3s"}
	a := startServe(t, dir, fast...)
	rc := newHoldingReceiver(t)
	call(t, a, key, "PUT", "/api/admin/event_types/order.paid", `{"exposure":"webhook"}`, 200)
	call(t, a, key, "POST", "/api/admin/webhooks", `{"url":"`+rc.URL+`","event_types":["order.*"]}`, 201)
	ev := call(t, a, key, "POST", "/api/v1/events", `{"type":"order.paid","data":{"n":1}}`, 202)
	first := recv(t, rc.got, 15*time.Second)
	if err := a.cmd.Process.Kill(); err != nil { // kill -9, mid-flight
		t.Fatal(err)
	}
	<-a.done
	close(rc.release)
	start := time.Now()
	startServe(t, dir, fast...)
	second := recv(t, rc.got, 120*time.Second)
	t.Logf("redelivered %s after the restart", time.Since(start))
	if second.Get("webhook-id") != first.Get("webhook-id") || second.Get("webhook-id") != ev["id"] {
		t.Fatalf("webhook-id %q then %q, want %q", first.Get("webhook-id"), second.Get("webhook-id"), ev["id"])
	}
}

// TestServeCatalog: --catalog registers event types at start, from
// built-in catalogs and YAML files, comma-separated.
func TestServeCatalog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cat := filepath.Join(dir, "catalog.yaml")
	if err := os.WriteFile(cat, []byte("event_types:\n  - name: invoice.paid\n    exposure: webhook\n    description: An invoice was paid.\n  - name: audit.log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	key := createKey(t, dir)
	p := startServe(t, dir, "--catalog", "standmeet,"+cat)
	out := call(t, p, key, "GET", "/api/admin/webhooks/event_types", "", 200)
	raw, _ := json.Marshal(out["data"])
	if !strings.Contains(string(raw), `"invoice.paid"`) || strings.Contains(string(raw), "audit.log") {
		t.Fatalf("webhook event types %s: want invoice.paid, not the internal audit.log", raw)
	}
	if n := len(out["data"].([]any)); n != 43 || !strings.Contains(string(raw), `"name":"corpus.note.changed","scoped":true`) {
		t.Fatalf("%d webhook event types %s: want standmeet's 39 (corpus.note.changed scoped), invoice.paid and hookd's 3 failure notifications", n, raw)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("- name: Bad Name\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(serveBinary(t), "serve", "--db", filepath.Join(dir, "x.db"), "--catalog", bad, "--addr", "127.0.0.1:0")
	msg, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(msg), "Bad Name") {
		t.Fatalf("bad catalog: err %v, output %s", err, msg)
	}
}

// TestServeGCHeapFloor: hookd serve raises GOGC while its live heap is far
// below --gc-heap-floor (a fresh process holds a few MB), as its own
// /metrics shows (go_gc_gogc_percent); 0 leaves Go's 100, and an
// operator's GOGC stays unless a floor is asked for too; a value that is
// not a size in MiB exits 2 before anything is opened, saying what to use.
func TestServeGCHeapFloor(t *testing.T) {
	t.Parallel()
	gogc := func(p *proc) float64 {
		t.Helper()
		resp, err := http.Get("http://" + p.addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "go_gc_gogc_percent "); ok {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatal(err)
				}
				return f
			}
		}
		t.Fatalf("no go_gc_gogc_percent in /metrics:\n%s", b)
		return 0
	}
	if got := gogc(startServe(t, t.TempDir())); got <= 100 {
		t.Errorf("default floor: GOGC %v, want above 100 for a fresh process's small heap", got)
	}
	if got := gogc(startServe(t, t.TempDir(), "--gc-heap-floor", "0")); got != 100 {
		t.Errorf("--gc-heap-floor 0: GOGC %v, want Go's 100", got)
	}
	// An operator's GOGC is theirs, unless they also ask for a floor.
	if got := gogc(startServeEnv(t, t.TempDir(), []string{"GOGC=150"})); got != 150 {
		t.Errorf("GOGC=150: GOGC %v, want 150 and no floor", got)
	}
	if got := gogc(startServeEnv(t, t.TempDir(), []string{"GOGC=150", "HOOKD_GC_HEAP_FLOOR=64"})); got <= 150 {
		t.Errorf("GOGC=150 with HOOKD_GC_HEAP_FLOOR=64: GOGC %v, want the floor to raise it", got)
	}
	for _, bad := range []string{"abc", "-1", "1e9"} {
		dir := t.TempDir()
		cmd := exec.Command(serveBinary(t), "serve", "--db", filepath.Join(dir, "hookd.db"), "--addr", "127.0.0.1:0", "--gc-heap-floor", bad)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), `--gc-heap-floor "`+bad+`": a whole number of MiB`) {
			t.Errorf("--gc-heap-floor %s: %v, output %s; want exit 2 and what to use", bad, err, out)
		}
		if es, _ := os.ReadDir(dir); len(es) > 0 {
			t.Errorf("--gc-heap-floor %s created %v", bad, es)
		}
	}
	out, err := exec.Command(serveBinary(t), "bench", "--gc-heap-floor", "abc").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), `--gc-heap-floor "abc": a whole number of MiB`) {
		t.Errorf("bench --gc-heap-floor abc: %v, output %s; want exit 2 and what to use", err, out)
	}
}
