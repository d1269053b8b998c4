package main

// The scale-out harness: a cluster of real hookd processes of the built
// binary on one PostgreSQL schema, their logs, and an API client.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/store"
)

// waitUntil polls cond until it holds, failing the test after d.
func waitUntil(t *testing.T, d time.Duration, alive func(*testing.T), what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		alive(t)
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting until %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// --- the cluster: one schema, one master key, the built binary ---

type scaleCluster struct {
	bin    string
	dbURL  string // with application_name and pool size
	schema string
	env    []string
	mu     sync.Mutex
	procs  []*scaleProc
}

func newScaleCluster(t *testing.T) *scaleCluster {
	t.Helper()
	base := dbtest.PostgresURL(t)
	schema := dbtest.NewSchema(t, base)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("HOOKD_TEST_POSTGRES: %v", err)
	}
	q := u.Query()
	q.Set("application_name", "hookd_"+schema) // lets the test find (and kill) exactly these connections
	q.Set("pool_max_conns", "5")               // up to 9 processes at once on a shared server
	u.RawQuery = q.Encode()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	c := &scaleCluster{bin: buildHookd(t), dbURL: u.String(), schema: schema}
	c.env = append(os.Environ(),
		"HOOKD_DATABASE="+c.dbURL,
		"HOOKD_SCHEMA="+schema,
		"HOOKD_MASTER_KEY="+base64.StdEncoding.EncodeToString(key), // every process must share it
		"HOOKD_EGRESS_ALLOW=127.0.0.1/32",
		"HOOKD_LOG_LEVEL=info",
	)
	t.Cleanup(func() { c.stopAll(t) })
	out, err := c.run(t, "migrate")
	if err != nil {
		t.Fatalf("hookd migrate: %v\n%s", err, out)
	}
	return c
}

// buildHookd builds cmd/hookd into t's temp dir, with -race when this test
// binary has it (so the processes' own races are caught too).
func buildHookd(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hookd")
	args := []string{"build", "-o", bin}
	if raceEnabled() {
		args = append(args, "-race")
	}
	began := time.Now()
	cmd := exec.Command("go", append(args, ".")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Logf("built hookd (race %v) in %v", raceEnabled(), time.Since(began).Round(time.Millisecond))
	return bin
}

func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" && s.Value == "true" {
			return true
		}
	}
	return false
}

// run runs a one-shot hookd command and returns its stdout.
func (c *scaleCluster) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Env = c.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

// start runs `hookd serve` with args and waits until it says it is up.
func (c *scaleCluster) start(t *testing.T, name string, args ...string) *scaleProc {
	t.Helper()
	args = append([]string{"serve", "--workers", fmt.Sprint(scaleWorkers), "--rescue-after", "20s", "--shutdown-timeout", "5s"}, args...)
	cmd := exec.Command(c.bin, args...)
	cmd.Env = c.env
	p := &scaleProc{name: name, cmd: cmd, logs: &scaleLog{}, exited: make(chan struct{})}
	cmd.Stderr = p.logs
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(p.logs, "stdout:", line)
			if strings.HasPrefix(line, "hookd listening on http://") || strings.HasPrefix(line, "hookd worker running") {
				select {
				case ready <- line:
				default:
				}
			}
		}
	}()
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	select {
	case line := <-ready:
		if rest, ok := strings.CutPrefix(line, "hookd listening on http://"); ok {
			p.addr, _, _ = strings.Cut(rest, " ")
		}
		return p
	case <-p.exited:
		t.Fatalf("%s exited at start: %v\n%s", name, p.err, p.logs.tail(40))
	case <-time.After(time.Minute):
		t.Fatalf("%s did not start within a minute\n%s", name, p.logs.tail(40))
	}
	return nil
}

// alive returns a check that fails the test as soon as one of ps exits.
func (c *scaleCluster) alive(ps ...*scaleProc) func(t *testing.T) {
	return func(t *testing.T) {
		t.Helper()
		for _, p := range ps {
			select {
			case <-p.exited:
				t.Fatalf("%s exited unexpectedly: %v\n%s", p.name, p.err, p.logs.tail(60))
			default:
			}
		}
	}
}

// stopAll sends SIGTERM to every live process and waits for them; on a
// failed test (or with HOOKD_TEST_PROCESS_LOGS set) it prints the tail of
// each one's log. Race reports in any process's log fail the test.
func (c *scaleCluster) stopAll(t *testing.T) {
	t.Helper()
	c.mu.Lock()
	procs := c.procs
	c.procs = nil
	c.mu.Unlock()
	for _, p := range procs {
		p.stop(t)
	}
	for _, p := range procs {
		logs := p.logs.String()
		if strings.Contains(logs, "WARNING: DATA RACE") {
			t.Errorf("%s reported a data race:\n%s", p.name, logs)
		} else if t.Failed() || os.Getenv("HOOKD_TEST_PROCESS_LOGS") != "" {
			t.Logf("--- %s (last lines)\n%s", p.name, p.logs.tail(40))
		}
	}
}

// terminateBackends ends every PostgreSQL session of this cluster's hookd
// processes (found by application_name) and returns how many it ended.
func (c *scaleCluster) terminateBackends(t *testing.T) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbtest.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	err = conn.QueryRow(ctx, `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name = $1) t`, "hookd_"+c.schema).Scan(&n)
	if err != nil {
		t.Fatalf("terminate backends: %v", err)
	}
	return n
}

// open opens the cluster's database from the test (no migration: the
// processes did it).
func (c *scaleCluster) open(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), store.Config{URL: c.dbURL, Schema: c.schema, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// --- one hookd process ---

type scaleProc struct {
	name   string
	cmd    *exec.Cmd
	addr   string // the API's address (api role)
	logs   *scaleLog
	exited chan struct{}
	err    error
}

func (p *scaleProc) pid() int { return p.cmd.Process.Pid }

// kill ends the process at once (SIGKILL): no shutdown, no lease release.
func (p *scaleProc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill %s: %v", p.name, err)
	}
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s survived SIGKILL", p.name)
	}
}

// stop asks for a graceful shutdown and waits for it (bounded).
func (p *scaleProc) stop(t *testing.T) {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		t.Errorf("%s did not stop within 20s of SIGTERM; killing it", p.name)
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// scaleLog collects a process's output (safe for concurrent writes).
type scaleLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *scaleLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(b)
}

func (l *scaleLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *scaleLog) tail(n int) string {
	lines := strings.Split(strings.TrimRight(l.String(), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// --- the REST client ---

type scaleClient struct {
	base string
	key  string
	http *http.Client
}

func (c *scaleCluster) client(t *testing.T, api *scaleProc) *scaleClient {
	t.Helper()
	return c.clientFor(t, api, "acme")
}

func (c *scaleClient) do(t *testing.T, method, path string, body any, want int) map[string]any {
	t.Helper()
	status, raw, err := c.send(method, path, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if status != want {
		t.Fatalf("%s %s: HTTP %d, want %d: %s", method, path, status, want, raw)
	}
	var out map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
	return out
}

func (c *scaleClient) send(method, path string, body any) (int, []byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(b))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
}

// publish publishes events [from, to) in batches of at most scaleBatch.
// Every event has an idempotency key, so a batch answered 5xx is retried
// (a few times, logged) the way a producer would: a request that reached a
// pooled connection the database had just dropped may fail once.
func (c *scaleClient) publish(t *testing.T, from, to int) {
	t.Helper()
	for lo := from; lo < to; lo += scaleBatch {
		hi := min(lo+scaleBatch, to)
		evs := make([]map[string]any, 0, hi-lo)
		for i := lo; i < hi; i++ {
			evs = append(evs, map[string]any{
				"type": "order.created", "subject": fmt.Sprintf("order://%d", i),
				"data": map[string]any{"n": i, "published": true}, "idempotency_key": fmt.Sprintf("order-%d", i),
			})
		}
		body := map[string]any{"events": evs}
		for try := 1; ; try++ {
			status, raw, err := c.send(http.MethodPost, "/api/v1/events/batch", body)
			if err == nil && status == http.StatusAccepted {
				var out struct{ Data []json.RawMessage }
				if err := json.Unmarshal(raw, &out); err != nil || len(out.Data) != hi-lo {
					t.Fatalf("batch [%d,%d): %d results (%v): %.200s", lo, hi, len(out.Data), err, raw)
				}
				break
			}
			if (err == nil && status < 500) || try == 3 {
				t.Fatalf("publish batch [%d,%d) (try %d): HTTP %d, %v: %.500s", lo, hi, try, status, err, raw)
			}
			t.Logf("publish batch [%d,%d) try %d: HTTP %d, %v: %.200s; retrying with the same idempotency keys", lo, hi, try, status, err, raw)
			time.Sleep(500 * time.Millisecond)
		}
	}
}

// --- the receiver ---
