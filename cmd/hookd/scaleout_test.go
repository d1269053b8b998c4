package main

// Scale-out, proven with real processes: one `hookd serve --role api` and
// several `--role worker` processes of the built binary on one PostgreSQL
// schema, delivering to a local receiver that verifies every signature and
// watches per-endpoint concurrency. PostgreSQL only; skipped with -short.

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
	"net/http/httptest"
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
	"github.com/hookd/hookd/webhook"
)

// scaleHeavy makes the tests that run several hookd processes flat out take
// turns: together (race-instrumented) they would starve each other of CPU
// on a small CI machine. The light tests still run beside them.
var scaleHeavy sync.Mutex

const (
	scaleEndpoints = 5
	scaleEvents    = 2000
	scaleBatch     = 1000
	scaleWorkers   = 4  // --workers of each worker process
	drainBatch     = 32 // the delivery engine's DrainBatch default
	// scaleDeadline bounds the wait for every (event, endpoint) pair.
	scaleDeadline = 3 * time.Minute
)

// TestScaleOut: 1 API + 3 worker processes deliver 2,000 events to 5
// endpoints (10,000 pairs); one worker is killed with SIGKILL mid-run. Every
// pair arrives, duplicates stay within what the dead worker had in flight,
// no endpoint ever has two deliveries in flight, every signature verifies.
func TestScaleOut(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process scale-out test skipped with -short")
	}
	t.Parallel()
	scaleHeavy.Lock()
	defer scaleHeavy.Unlock()
	c := newScaleCluster(t)
	began := time.Now()
	api := c.start(t, "api", "--role", "api", "--addr", "127.0.0.1:0")
	var workers []*scaleProc
	for i := range 3 {
		workers = append(workers, c.start(t, fmt.Sprintf("worker%d", i+1), "--role", "worker"))
	}
	t.Logf("processes up in %v", time.Since(began).Round(time.Millisecond))

	rcv := newScaleReceiver(t)
	client := c.client(t, api)
	rcv.register(t, client, scaleEndpoints)

	start := time.Now()
	client.publish(t, 0, scaleEvents)
	t.Logf("published %d events in %v", scaleEvents, time.Since(start).Round(time.Millisecond))

	// Kill one worker once deliveries are flowing (a fifth of the pairs).
	rcv.waitFor(t, scaleEvents*scaleEndpoints/5, scaleDeadline, c.alive(workers...))
	victim := workers[0]
	victim.kill(t)
	killedAt := time.Now()
	before := rcv.snapshot()
	t.Logf("killed %s (pid %d) with SIGKILL after %v, %d pairs delivered", victim.name, victim.pid(), killedAt.Sub(start).Round(time.Millisecond), before.unique)

	rcv.waitFor(t, scaleEvents*scaleEndpoints, scaleDeadline-time.Since(start), c.alive(append([]*scaleProc{api}, workers[1:]...)...))
	done := time.Since(start)
	s := rcv.snapshot()
	t.Logf("all %d pairs delivered in %v (%.0f/s); %v after the kill; %d requests, %d duplicates",
		s.unique, done.Round(time.Millisecond), float64(s.unique)/done.Seconds(), time.Since(killedAt).Round(time.Millisecond), s.requests, s.requests-s.unique)
	// Sent again after the kill: what the dead worker had sent but not yet
	// recorded, on the endpoints whose leases it held (at most its
	// --workers). That is one request in flight per endpoint, plus a lease
	// drain's successes still waiting for the recorder's group commit; a
	// drain waits for its records before it reads its next batch, so at
	// most one batch (32) per endpoint (docs/design.md, "The lease drain").
	// Usually one or two: 0-5 in all were seen.
	rcv.check(t, scaleEvents, min(scaleWorkers, scaleEndpoints)*drainBatch)
	c.stopAll(t)
}

// TestScaleOutPostgresRestart: while deliveries run, every PostgreSQL
// connection of the hookd processes is terminated (what a database restart
// or failover does to them). Without restarting hookd, the API keeps
// accepting events and the workers deliver every pair.
func TestScaleOutPostgresRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process scale-out test skipped with -short")
	}
	t.Parallel()
	scaleHeavy.Lock()
	defer scaleHeavy.Unlock()
	c := newScaleCluster(t)
	api := c.start(t, "api", "--role", "api", "--addr", "127.0.0.1:0")
	workers := []*scaleProc{
		c.start(t, "worker1", "--role", "worker"),
		c.start(t, "worker2", "--role", "worker"),
	}
	all := c.alive(append([]*scaleProc{api}, workers...)...)
	rcv := newScaleReceiver(t)
	client := c.client(t, api)
	rcv.register(t, client, scaleEndpoints)

	const events = scaleEvents / 2
	start := time.Now()
	half := events / 2
	client.publish(t, 0, half)
	rcv.waitFor(t, half*scaleEndpoints/4, scaleDeadline, all)
	n := c.terminateBackends(t)
	if n == 0 {
		t.Fatal("no hookd backend to terminate: is application_name in the URL?")
	}
	t.Logf("terminated %d PostgreSQL backends of hookd after %v, %d pairs delivered", n, time.Since(start).Round(time.Millisecond), rcv.snapshot().unique)

	// The API's pooled connections are dead: publishing must still work.
	client.publish(t, half, events)
	rcv.waitFor(t, half*scaleEndpoints+half*scaleEndpoints/4, scaleDeadline-time.Since(start), all)
	n = c.terminateBackends(t)
	t.Logf("terminated %d backends again after %v, %d pairs delivered", n, time.Since(start).Round(time.Millisecond), rcv.snapshot().unique)

	rcv.waitFor(t, events*scaleEndpoints, scaleDeadline-time.Since(start), all)
	s := rcv.snapshot()
	t.Logf("all %d pairs delivered in %v; %d requests, %d duplicates", s.unique, time.Since(start).Round(time.Millisecond), s.requests, s.requests-s.unique)
	// A delivery whose settle failed on a dead connection is sent again:
	// at most one in flight per endpoint, per termination.
	rcv.check(t, events, 2*scaleEndpoints)
	c.stopAll(t)
}

// TestScaleOutLostCompletion: River records job completions in batches
// (every 50–250 ms). A worker killed after hookd recorded a delivery as
// delivered, but before River flushed that job's completion, leaves the job
// "running"; the rescuer retries it. The delivery must not be sent again:
// hookd's own record says it was delivered. The test puts finished deliver
// jobs into exactly the state such a SIGKILL leaves (TestScaleOut hits the
// same window only by chance).
func TestScaleOutLostCompletion(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process scale-out test skipped with -short")
	}
	t.Parallel()
	const events = 3
	c := newScaleCluster(t)
	api := c.start(t, "api", "--role", "api", "--addr", "127.0.0.1:0")
	worker := c.start(t, "worker", "--role", "worker")
	alive := c.alive(api, worker)
	rcv := newScaleReceiver(t)
	client := c.client(t, api)
	rcv.register(t, client, 1)
	client.publish(t, 0, events)
	rcv.waitFor(t, events, time.Minute, alive)

	db := c.open(t)
	deliverJobs := func(states string) int {
		t.Helper()
		n, err := db.Count(context.Background(), `SELECT count(*) FROM river_job WHERE kind = 'webhook.deliver' AND state IN (`+states+`)`)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Deliveries sent by the endpoint's lease drain have their jobs deleted
	// unrun (or, if River had fetched them, completed without sending).
	waitUntil(t, time.Minute, alive, "River records the deliver jobs completed", func() bool {
		return deliverJobs("'available', 'scheduled', 'running', 'retryable', 'pending'") == 0
	})
	jobs := deliverJobs("'completed'")
	if jobs < 1 || jobs > events {
		t.Fatalf("%d completed deliver jobs for %d events", jobs, events)
	}

	// A SIGKILL before the completer's flush leaves: running, attempted long
	// ago (so past --rescue-after), not finalized.
	_, err := db.Pool().Exec(context.Background(), `UPDATE river_job SET state = 'running', finalized_at = NULL, attempted_at = now() - interval '1 hour'
		WHERE kind = 'webhook.deliver'`)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	// The leader's rescuer (every 30 s) makes them retryable, the scheduler
	// makes them available, a worker runs them again.
	waitUntil(t, 2*time.Minute, alive, "the rescued jobs run to completion", func() bool {
		return deliverJobs("'completed', 'cancelled', 'discarded'") == jobs
	})
	t.Logf("rescued and re-run in %v", time.Since(began).Round(time.Millisecond))
	if s := rcv.snapshot(); s.requests != events {
		t.Errorf("the receiver got %d requests for %d delivered events: rescued jobs re-sent deliveries already recorded as delivered", s.requests, events)
	}
	c.stopAll(t)
}

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

type scaleReceiver struct {
	srv       *httptest.Server
	mu        sync.Mutex
	verifiers map[string]*webhook.Verifier // by URL path: one per endpoint
	seen      map[string]map[string]int    // path → webhook-id → times received
	inFlight  map[string]int
	maxFlight map[string]int
	requests  int
	badSigs   int
	firstBad  string
}

type scaleSnapshot struct{ unique, requests int }

func newScaleReceiver(t *testing.T) *scaleReceiver {
	r := &scaleReceiver{
		verifiers: map[string]*webhook.Verifier{}, seen: map[string]map[string]int{},
		inFlight: map[string]int{}, maxFlight: map[string]int{},
	}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *scaleReceiver) serve(w http.ResponseWriter, req *http.Request) {
	path := req.URL.Path
	r.mu.Lock()
	r.inFlight[path]++
	r.maxFlight[path] = max(r.maxFlight[path], r.inFlight[path])
	v := r.verifiers[path]
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.inFlight[path]--
		r.mu.Unlock()
	}()

	body, err := io.ReadAll(req.Body)
	if err == nil && v == nil {
		err = fmt.Errorf("no endpoint at %s", path)
	}
	if err == nil {
		_, err = v.Verify(req.Header, body)
	}
	// A receiver does some work: it widens the window in which a second
	// delivery to the same endpoint would be seen overlapping.
	time.Sleep(2 * time.Millisecond)

	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	if err != nil {
		r.badSigs++
		if r.firstBad == "" {
			r.firstBad = fmt.Sprintf("%s %s: %v", path, req.Header.Get("webhook-id"), err)
		}
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if r.seen[path] == nil {
		r.seen[path] = map[string]int{}
	}
	r.seen[path][req.Header.Get("webhook-id")]++
	w.WriteHeader(http.StatusNoContent)
}

// register creates one event type and n endpoints (paths /ep/0 … /ep/n-1).
func (r *scaleReceiver) register(t *testing.T, c *scaleClient, n int) {
	t.Helper()
	c.do(t, http.MethodPut, "/api/admin/event_types/order.created", map[string]any{"exposure": "webhook"}, http.StatusOK)
	for i := range n {
		path := fmt.Sprintf("/ep/%d", i)
		out := c.do(t, http.MethodPost, "/api/admin/webhooks", map[string]any{"url": r.srv.URL + path, "event_types": []string{"*"}}, http.StatusCreated)
		secret, _ := out["secret"].(string)
		v, err := webhook.NewVerifier(secret)
		if err != nil {
			t.Fatalf("endpoint %d secret %q: %v", i, secret, err)
		}
		r.mu.Lock()
		r.verifiers[path] = v
		r.mu.Unlock()
	}
}

func (r *scaleReceiver) snapshot() scaleSnapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := scaleSnapshot{requests: r.requests}
	for _, ids := range r.seen {
		s.unique += len(ids)
	}
	return s
}

// waitFor polls until want distinct pairs arrived, failing the test at the
// deadline or as soon as alive finds a dead process.
func (r *scaleReceiver) waitFor(t *testing.T, want int, d time.Duration, alive func(*testing.T)) {
	t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	last, lastAt := -1, time.Now()
	nextLog := time.Now().Add(10 * time.Second)
	for {
		s := r.snapshot()
		if s.unique >= want {
			return
		}
		if s.unique != last {
			last, lastAt = s.unique, time.Now()
		}
		if time.Now().After(nextLog) {
			t.Logf("… %d of %d pairs (%d requests)", s.unique, want, s.requests)
			nextLog = nextLog.Add(10 * time.Second)
		}
		alive(t)
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d pairs delivered by the deadline (no progress for %v); %d requests, %d bad signatures",
				s.unique, want, time.Since(lastAt).Round(time.Second), s.requests, r.badSigs)
		}
		<-tick.C
	}
}

// check asserts what the receiver saw: every (event, endpoint) pair of
// events [0, events), at most maxDup extra requests, one request in flight
// per endpoint at any time, and no bad signature.
func (r *scaleReceiver) check(t *testing.T, events, maxDup int) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.badSigs > 0 {
		t.Errorf("%d deliveries failed verification; first: %s", r.badSigs, r.firstBad)
	}
	unique := 0
	for path := range r.verifiers {
		ids := r.seen[path]
		if len(ids) != events {
			t.Errorf("%s received %d distinct events, want %d", path, len(ids), events)
		}
		unique += len(ids)
		var dups []string
		for id, n := range ids {
			if n > 1 {
				dups = append(dups, fmt.Sprintf("%s×%d", id, n))
			}
		}
		if len(dups) > 0 {
			t.Logf("%s duplicates (receivers dedupe on webhook-id): %v", path, dups)
		}
		if r.maxFlight[path] != 1 {
			t.Errorf("%s had %d deliveries in flight at once, want 1 (the endpoint lease)", path, r.maxFlight[path])
		}
	}
	if dup := r.requests - unique; dup > maxDup {
		t.Errorf("%d duplicate deliveries, want at most %d", dup, maxDup)
	}
}
