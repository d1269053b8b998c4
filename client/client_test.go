package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/client"
)

// setup starts a real hookd serve (SQLite in a temporary directory) with
// an admin key of owner acme made by hookd apikey create, and registers
// invoice.paid.
func setup(t *testing.T) (base, key string, c *client.Client) {
	base, key, c, _ = setupDB(t)
	return base, key, c
}

// newKey runs hookd apikey create with args on db and returns the key.
func newKey(t *testing.T, db string, args ...string) string {
	t.Helper()
	out, err := exec.Command(hookdBinary(t), append([]string{"apikey", "create", "--db", db}, args...)...).Output()
	if err != nil {
		t.Fatalf("hookd apikey create %v: %v", args, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// setupDB is setup, and the database's path.
func setupDB(t *testing.T) (base, key string, c *client.Client, db string) {
	t.Helper()
	bin := hookdBinary(t)
	db = filepath.Join(t.TempDir(), "hookd.db")
	key = newKey(t, db, "--owner", "acme")
	cmd := exec.Command(bin, "serve", "--db", db, "--addr", "127.0.0.1:0", "--egress-allow", "127.0.0.1/32")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	var mu sync.Mutex
	cmd.Stderr = writerFunc(func(b []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logs.Write(b) })
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			mu.Lock()
			t.Logf("hookd logs:\n%s", logs.String())
			mu.Unlock()
		}
	})
	addr := make(chan string, 1)
	go func() {
		buf := make([]byte, 4096)
		var seen string
		for {
			n, err := stdout.Read(buf)
			seen += string(buf[:n])
			if i := strings.Index(seen, "hookd listening on http://"); i >= 0 && strings.Contains(seen[i:], "\n") {
				addr <- strings.Fields(seen[i+len("hookd listening on "):])[0]
				_, _ = io.Copy(io.Discard, stdout)
				return
			}
			if err != nil {
				close(addr)
				return
			}
		}
	}()
	select {
	case base = <-addr:
	case <-time.After(60 * time.Second):
		t.Fatal("hookd did not start")
	}
	if base == "" {
		t.Fatal("hookd exited at start")
	}
	c = client.New(base, key)
	if _, err := c.EventTypes().Put(context.Background(), client.EventTypesPutInput{Type: "invoice.paid", Exposure: client.Ptr("webhook")}); err != nil {
		t.Fatal(err)
	}
	return base, key, c, db
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// hookdBinary builds hookd once per test run, from the module around this
// one (without the race detector: it is on the client under test).
func hookdBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hookd-client-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "hookd")
		if out, err := exec.Command("go", "build", "-C", "..", "-o", binPath, "./cmd/hookd").CombinedOutput(); err != nil {
			buildErr = errors.New(err.Error() + ": " + string(out))
		}
	})
	if buildErr != nil {
		t.Fatalf("build hookd: %v", buildErr)
	}
	return binPath
}

// TestOpsOfTheServedDocument: the client has every op of the /openapi.json
// a real hookd serves, and no other.
func TestOpsOfTheServedDocument(t *testing.T) {
	t.Parallel()
	base, _, _ := setup(t)
	resp, err := http.Get(base + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
		} `json:"paths"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	var served []string
	for _, ms := range doc.Paths {
		for _, o := range ms {
			served = append(served, o.OperationID)
		}
	}
	slices.Sort(served)
	ours := slices.Sorted(slices.Values(client.Operations))
	if !slices.Equal(ours, served) {
		t.Fatalf("the client's ops differ from the served document's: run make docs\nclient: %v\nserved: %v", ours, served)
	}
}

// TestPublishAndListDeliveries: create an endpoint, publish, see it
// delivered to a real receiver and listed.
func TestPublishAndListDeliveries(t *testing.T) {
	t.Parallel()
	_, _, c := setup(t)
	ctx := context.Background()
	got := make(chan []byte, 10)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- b
	}))
	t.Cleanup(rc.Close)

	ep, err := c.Webhooks().Create(ctx, client.WebhooksCreateInput{URL: rc.URL + "/hook", EventTypes: []string{"invoice.*"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ep.ID, "ep_") || !strings.HasPrefix(ep.Secret, "whsec_") {
		t.Fatalf("created %+v", ep)
	}
	ev, err := c.Events().Publish(ctx, client.EventsPublishInput{Type: "invoice.paid", Subject: "invoice://inv_1", Data: json.RawMessage(`{"amount":5}`)})
	if err != nil {
		t.Fatal(err)
	}
	var body struct{ ID string }
	select {
	case b := <-got:
		_ = json.Unmarshal(b, &body)
	case <-time.After(30 * time.Second):
		t.Fatal("no delivery")
	}
	if body.ID != ev.ID {
		t.Fatalf("delivered %q, published %q", body.ID, ev.ID)
	}
	// The receiver has answered; hookd records the delivery right after.
	var list *client.DeliveryList
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if list, err = c.Webhooks().Deliveries(ctx, client.WebhooksDeliveriesInput{ID: ep.ID}); err != nil {
			t.Fatal(err)
		}
		if len(list.Data) > 0 && list.Data[0].State == "delivered" {
			break
		}
	}
	if len(list.Data) != 1 || list.Data[0].EventID != ev.ID || list.Data[0].State != "delivered" {
		t.Fatalf("deliveries %+v", list.Data)
	}
	again, err := c.Webhooks().Get(ctx, client.WebhooksGetInput{ID: ep.ID})
	if err != nil || again.Secret != "" {
		t.Fatalf("get: %v; secret %q (shown at creation only)", err, again.Secret)
	}
}

// TestTypedErrors: a 422 and a 404 are *client.Error with hookd's code,
// and the refused create left nothing.
func TestTypedErrors(t *testing.T) {
	t.Parallel()
	_, _, c := setup(t)
	ctx := context.Background()
	_, err := c.Webhooks().Create(ctx, client.WebhooksCreateInput{URL: "ftp://example.com/x", EventTypes: []string{"invoice.*"}})
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 422 || e.Code != client.CodeInvalid || e.Op != "webhooks.create" || !strings.Contains(strings.ToLower(e.Message), "url") {
		t.Fatalf("create with an ftp URL: %#v", err)
	}
	if list, err := c.Webhooks().List(ctx); err != nil || len(list.Data) != 0 {
		t.Fatalf("after a refused create: %v, %+v", err, list)
	}
	_, err = c.Events().Get(ctx, client.EventsGetInput{ID: "evt_01J0000000000000000000000"})
	if !client.IsCode(err, client.CodeNotFound) {
		t.Fatalf("get an unknown event: %v", err)
	}
}

// throttler is a proxy in front of hookd that answers the next n requests
// status (429 or 503) with a Retry-After, and records each request.
type throttler struct {
	mu         sync.Mutex
	n, status  int
	retryAfter string
	seen       []string // method and Idempotency-Key of each request
}

func newThrottler(t *testing.T, base string) (*throttler, string) {
	u, _ := url.Parse(base)
	th := &throttler{}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		th.mu.Lock()
		th.seen = append(th.seen, r.Method+" "+r.Header.Get("Idempotency-Key"))
		throttle := th.n > 0
		if throttle {
			th.n--
		}
		th.mu.Unlock()
		if throttle {
			w.Header().Set("Retry-After", th.retryAfter)
			http.Error(w, "slow down", th.status)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return th, srv.URL
}

func (th *throttler) set(n, status int, retryAfter string) {
	th.mu.Lock()
	defer th.mu.Unlock()
	th.n, th.status, th.retryAfter, th.seen = n, status, retryAfter, nil
}

func (th *throttler) requests() []string {
	th.mu.Lock()
	defer th.mu.Unlock()
	return slices.Clone(th.seen)
}

// TestRetryAfter: a 429 with Retry-After is retried with the same
// idempotency key; one over MaxWait is returned at once; retries are
// bounded.
func TestRetryAfter(t *testing.T) {
	t.Parallel()
	_, key, c := setup(t)
	ctx := context.Background()
	th, proxied := newThrottler(t, c.BaseURL())

	th.set(1, http.StatusTooManyRequests, "1")
	ev, err := client.New(proxied, key).Events().Publish(ctx, client.EventsPublishInput{Type: "invoice.paid"})
	if err != nil {
		t.Fatal(err)
	}
	seen := th.requests()
	if len(seen) != 2 || seen[0] != seen[1] || seen[0] == "POST " {
		t.Fatalf("requests %q: want a 429, then the same publish again with the same idempotency key", seen)
	}
	if got, err := c.Events().Get(ctx, client.EventsGetInput{ID: ev.ID}); err != nil || got.ID != ev.ID {
		t.Fatalf("the retried publish's event: %v, %+v", err, got)
	}

	th.set(1, http.StatusTooManyRequests, "120")
	short := client.New(proxied, key)
	short.Retry.MaxWait = time.Second
	_, err = short.Events().Publish(ctx, client.EventsPublishInput{Type: "invoice.paid"})
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 429 || e.RetryAfter != 120*time.Second || len(th.requests()) != 1 {
		t.Fatalf("a Retry-After over MaxWait: %v after %d requests", err, len(th.requests()))
	}

	th.set(1, http.StatusServiceUnavailable, "0")
	if _, err := client.New(proxied, key).Webhooks().List(ctx); err != nil || len(th.requests()) != 2 {
		t.Fatalf("a 503 with Retry-After 0: %v after %d requests, want it retried once", err, len(th.requests()))
	}

	// The defaults: 3 retries; a Retry-After over 30 s not waited for.
	th.set(5, http.StatusTooManyRequests, "0")
	if _, err := client.New(proxied, key).Webhooks().List(ctx); !client.IsCode(err, client.CodeUnavailable) || len(th.requests()) != 4 {
		t.Fatalf("5 429s, default retries: %v after %d requests, want 4", err, len(th.requests()))
	}
	th.set(1, http.StatusTooManyRequests, "31")
	if _, err := client.New(proxied, key).Webhooks().List(ctx); !errors.As(err, &e) || e.RetryAfter != 31*time.Second || len(th.requests()) != 1 {
		t.Fatalf("Retry-After 31 by default: %v after %d requests, want the error at once", err, len(th.requests()))
	}

	th.set(5, http.StatusTooManyRequests, "0")
	bounded := client.New(proxied, key)
	bounded.Retry.Attempts = 2
	if _, err := bounded.Webhooks().List(ctx); !client.IsCode(err, client.CodeUnavailable) || len(th.requests()) != 3 {
		t.Fatalf("5 429s, 2 retries: %v after %d requests", err, len(th.requests()))
	}
}

// TestIdempotencyKey: the same key publishes once.
func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	_, _, c := setup(t)
	ctx := context.Background()
	in := client.EventsPublishInput{Type: "invoice.paid", IdempotencyKey: "order-7"}
	a, err := c.Events().Publish(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Events().Publish(ctx, in)
	if err != nil || b.ID != a.ID || !b.Duplicate {
		t.Fatalf("second publish: %v, %+v (first %s)", err, b, a.ID)
	}
	batch, err := c.Events().PublishBatch(ctx, client.EventsPublishBatchInput{Events: []client.EventsPublishBatchEvents{{Type: "invoice.paid", IdempotencyKey: "order-7"}, {Type: "invoice.paid"}}})
	if err != nil || len(batch.Data) != 2 || batch.Data[0].ID != a.ID || batch.Data[1].ID == a.ID {
		t.Fatalf("batch: %v, %+v", err, batch)
	}
}

// TestOperatorWithOwner: an operator key names the owner it acts on with
// WithOwner; without it an owner-scoped op is refused 422.
func TestOperatorWithOwner(t *testing.T) {
	t.Parallel()
	base, _, c, db := setupDB(t)
	ctx := context.Background()
	if _, err := c.Webhooks().Create(ctx, client.WebhooksCreateInput{URL: "http://127.0.0.1:9/hook", EventTypes: []string{"invoice.*"}}); err != nil {
		t.Fatal(err)
	}
	op := client.New(base, newKey(t, db, "--role", "operator"))
	if _, err := op.Webhooks().List(ctx); !client.IsCode(err, client.CodeInvalid) {
		t.Fatalf("an operator listing endpoints without an owner: %v, want invalid", err)
	}
	list, err := op.WithOwner("acme").Webhooks().List(ctx)
	if err != nil || len(list.Data) != 1 {
		t.Fatalf("acme's endpoints through the operator key: %v, %+v", err, list)
	}
	if _, err := op.WithOwner("nobody").Webhooks().List(ctx); !client.IsCode(err, client.CodeNotFound) {
		t.Fatalf("an owner that does not exist: %v, want not_found", err)
	}
}
