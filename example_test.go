package hookd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riversqlite"

	"github.com/hookd/hookd"
	"github.com/hookd/hookd/webhook"
)

// masterKey seals endpoint secrets; in production read it from a secret
// store, never from the database it protects.
var masterKey = bytes.Repeat([]byte{1}, 32)

// Open hookd on a file of its own, declare a type, publish.
func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "hookd-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	h, err := hookd.Open(ctx, hookd.Config{
		Database:   filepath.Join(dir, "hookd.db"), // or a postgres:// URL
		MasterKey:  masterKey,
		EventTypes: []hookd.EventType{{Name: "order.created", Description: "A customer placed an order."}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	if err := h.CreateOwner(ctx, "acme", "standard", nil); err != nil { // whoever receives the events
		log.Fatal(err)
	}
	ids, err := h.Publish(ctx, hookd.Event{Owner: "acme", Type: "order.created", Subject: "order://42", Data: []byte(`{"order_id": 42}`)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ids[0][:4])
	// Output: evt_
}

// Share the PostgreSQL pool your application has: hookd's tables go beside
// yours, where the pool's search_path says, and Close leaves the pool open.
func ExampleOpenPool() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	h, err := hookd.OpenPool(ctx, pool, hookd.Config{MasterKey: masterKey})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
}

// Share your SQLite database, opened the way hookd and River need it.
func ExampleOpenDB() {
	dir, _ := os.MkdirTemp("", "hookd-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	db, err := hookd.OpenSQLite(ctx, filepath.Join(dir, "shop.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	h, err := hookd.OpenDB(ctx, db, hookd.Config{MasterKey: masterKey})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	fmt.Println(db.PingContext(ctx) == nil) // still yours after hookd's Close
	// Output: true
}

// Publish inside your own transaction: a rollback sends nothing, a commit
// will be delivered. On PostgreSQL pass the pgx.Tx instead.
func ExampleHookd_PublishTx() {
	dir, _ := os.MkdirTemp("", "hookd-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	db, _ := hookd.OpenSQLite(ctx, filepath.Join(dir, "shop.db"))
	defer db.Close()
	h, err := hookd.OpenDB(ctx, db, hookd.Config{MasterKey: masterKey, EventTypes: []hookd.EventType{{Name: "order.created"}}})
	if err != nil {
		log.Fatal(err)
	}
	if err := h.CreateOwner(ctx, "acme", "", nil); err != nil {
		log.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE orders (id INTEGER PRIMARY KEY, total INTEGER NOT NULL)`); err != nil {
		log.Fatal(err)
	}

	placeOrder := func(total int) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }() // a no-op after Commit (sql.ErrTxDone)
		res, err := tx.ExecContext(ctx, `INSERT INTO orders (total) VALUES (?)`, total)
		if err != nil {
			return err
		}
		id, _ := res.LastInsertId()
		data, _ := json.Marshal(map[string]any{"order_id": id, "total": total})
		if _, err := h.PublishTx(ctx, tx, hookd.Event{Owner: "acme", Type: "order.created", Subject: fmt.Sprintf("order://%d", id), Data: data}); err != nil {
			return err
		}
		if total <= 0 {
			return fmt.Errorf("total %d: must be positive", total) // rolls back the order and its event
		}
		return tx.Commit()
	}
	fmt.Println(placeOrder(4200))
	fmt.Println(placeOrder(-1))
	var orders int
	_ = db.QueryRowContext(ctx, `SELECT count(*) FROM orders`).Scan(&orders)
	fmt.Println(orders, "order")
	// Output:
	// <nil>
	// total -1: must be positive
	// 1 order
}

// Run hookd's workers on your own River client: one client runs your jobs
// and hookd's. Here on SQLite (riversqlite); riverpgxv5 on PostgreSQL.
func ExampleHookd_AddWorkers() {
	dir, _ := os.MkdirTemp("", "hookd-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	db, _ := hookd.OpenSQLite(ctx, filepath.Join(dir, "shop.db"))
	defer db.Close()
	h, err := hookd.OpenDB(ctx, db, hookd.Config{
		MasterKey:   masterKey,
		EventTypes:  []hookd.EventType{{Name: "order.created"}},
		EgressAllow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, // the receiver below
	})
	if err != nil {
		log.Fatal(err)
	}

	rc := &river.Config{
		Workers:           river.NewWorkers(), // your workers: river.AddWorker(rc.Workers, …)
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 10}},
		FetchCooldown:     10 * time.Millisecond, // SQLite has no LISTEN/NOTIFY: poll often
		FetchPollInterval: 50 * time.Millisecond,
	}
	if err := h.AddWorkers(rc); err != nil { // hookd's job kinds, queues, periodic prune
		log.Fatal(err)
	}
	client, err := river.NewClient(riversqlite.New(db), rc)
	if err != nil {
		log.Fatal(err)
	}
	if err := h.UseRiver(client); err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := client.Stop(ctx); err != nil {
			log.Print(err)
		}
	}()

	// A receiver, and an endpoint for it.
	got := make(chan *http.Request, 1)
	bodies := make(chan []byte, 1)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- r
		bodies <- body
	}))
	defer receiver.Close()
	key, _ := h.CreateAPIKey(ctx, "acme", "admin")
	api := httptest.NewServer(h.Handler())
	defer api.Close()
	verifier, _ := webhook.NewVerifier(createEndpoint(api.URL, key, receiver.URL, "order.*"))

	ids, _ := h.Publish(ctx, hookd.Event{Owner: "acme", Type: "order.created", Subject: "order://1", Data: []byte(`{}`)})
	r := <-got
	ev, err := verifier.Verify(r.Header, <-bodies)
	fmt.Println(err, ev.ID == ids[0], ev.Type, ev.Subject)
	// Output: <nil> true order.created order://1
}

// Serve hookd's API, MCP tools and OpenAPI document in your own server,
// under a prefix of your choice.
func ExampleHookd_Mount() {
	dir, _ := os.MkdirTemp("", "hookd-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	h, err := hookd.Open(ctx, hookd.Config{Database: filepath.Join(dir, "hookd.db"), MasterKey: masterKey})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()

	mux := http.NewServeMux()
	mux.HandleFunc("GET /orders", func(w http.ResponseWriter, r *http.Request) {}) // your routes
	if err := h.Mount(mux, "/webhooks"); err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/webhooks/openapi.json")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Servers []struct{ URL string }
	}
	_ = json.NewDecoder(resp.Body).Decode(&doc)
	fmt.Println(resp.StatusCode, doc.Servers[0].URL)
	// Output: 200 /webhooks
}

// Decide which events an endpoint attached to a scope source may see: here
// a partner's endpoint (grant_id "partner:eu") sees orders of its region
// only. hookd asks again for every event.
func ExampleScopeFunc() {
	regionOf := func(ev hookd.Event) string {
		var d struct{ Region string }
		_ = json.Unmarshal(ev.Data, &d)
		return d.Region
	}
	scope := hookd.ScopeFunc(func(ctx context.Context, source string, ev hookd.Event) (bool, error) {
		region, ok := strings.CutPrefix(source, "partner:")
		return ok && regionOf(ev) == region, nil
	})
	ok, _ := scope(context.Background(), "partner:eu", hookd.Event{Type: "order.created", Data: []byte(`{"region": "eu"}`)})
	fmt.Println(ok)
	_ = hookd.Config{Scope: scope, MasterKey: masterKey} // hand it to Open
	// Output: true
}

// Give an owner an admin key for the API, MCP and the console.
func ExampleHookd_CreateAPIKey() {
	dir, _ := os.MkdirTemp("", "hookd-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	h, err := hookd.Open(ctx, hookd.Config{Database: filepath.Join(dir, "hookd.db"), MasterKey: masterKey})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	key, err := h.CreateAPIKey(ctx, "acme", "admin") // creates owner acme too
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(key[:4])
	// Output: hkd_
}

// Validate refuses settings Open would refuse, with the message the hookd
// command prints.
func ExampleConfig_Validate() {
	err := hookd.Config{MasterKey: masterKey, HTTPTimeout: 20 * time.Second}.Validate()
	fmt.Println(err)
	// Output: timeouts must nest: HTTPTimeout (--http-timeout) 20s must be shorter than JobTimeout (--job-timeout) 15s (http timeout < job timeout < lease and rescue)
}

// Stop the workers gracefully, then close.
func ExampleHookd_Stop() {
	dir, _ := os.MkdirTemp("", "hookd-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	h, err := hookd.Open(ctx, hookd.Config{Database: filepath.Join(dir, "hookd.db"), MasterKey: masterKey, Work: true})
	if err != nil {
		log.Fatal(err)
	}
	if err := h.Start(ctx); err != nil {
		log.Fatal(err)
	}
	shutdown, cancel := context.WithTimeout(ctx, 20*time.Second) // deliveries in flight may finish
	defer cancel()
	fmt.Println(h.Stop(shutdown), h.Close())
	// Output: <nil> <nil>
}

// createEndpoint subscribes url to globs through the admin API, as an
// owner would (or the console, or MCP's webhooks.create).
func createEndpoint(api, key, url string, globs ...string) (secret string) {
	body, _ := json.Marshal(map[string]any{"url": url, "event_types": globs})
	req, _ := http.NewRequest(http.MethodPost, api+"/api/admin/webhooks", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	var ep struct{ Secret string }
	if err := json.NewDecoder(resp.Body).Decode(&ep); err != nil || resp.StatusCode != http.StatusCreated {
		log.Fatalf("create endpoint: %d %v", resp.StatusCode, err)
	}
	return ep.Secret
}
