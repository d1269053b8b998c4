// The store's conformance suite: every test here runs against both engines
// (dbtest.Engines: a temp-file SQLite, and a fresh PostgreSQL schema when
// HOOKD_TEST_POSTGRES is set), so the one SQL text is proven on both.
package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/store"
)

// t0 is the suite's clock: every time is explicit (microsecond precision,
// as stored), nothing depends on the wall clock.
var t0 = time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC)

const day = 24 * time.Hour

// eachEngine runs fn once per engine, in parallel, each on a fresh migrated
// database.
func eachEngine(t *testing.T, fn func(t *testing.T, db *store.DB)) {
	t.Helper()
	for _, e := range dbtest.Engines() {
		t.Run(e.Name, func(t *testing.T) {
			t.Parallel()
			cfg := e.Config(t)
			cfg.MaxConns = 8 // PostgreSQL: leave connections for the parallel tests
			fn(t, dbtest.Open(t, cfg))
		})
	}
}

// count runs a SELECT count(*) … directly on the engine (not through the
// store), so tests check what is really in the tables.
func count(t testing.TB, db *store.DB, query string, args ...any) int {
	t.Helper()
	return dbtest.Count(t, db, query, args...)
}

func wantCode(t testing.TB, err error, code apperr.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want %s", code)
	}
	if got := apperr.CodeOf(err); got != code {
		t.Fatalf("err = %v (code %s), want code %s", err, got, code)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func jsonEq(t testing.TB, what string, got, want any) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Fatalf("%s:\n got %s\nwant %s", what, g, w)
	}
}

// --- fixtures ---

func mkOwner(t testing.TB, db *store.DB, id string) *owner.Owner {
	t.Helper()
	o := &owner.Owner{ID: id, Profile: "standard", Attributes: map[string]string{"app": id}, CreatedAt: t0}
	must(t, db.Q().CreateOwner(context.Background(), o))
	return o
}

func newEndpoint(ownerID string, maxInFlight int) *endpoint.Endpoint {
	return &endpoint.Endpoint{
		ID: event.NewID("ep_", t0), OwnerID: ownerID, URL: "https://example.com/hook", Description: "d",
		EventTypes: []string{"invoice.*"}, SecretSealed: []byte{1, 2, 3}, Enabled: true,
		MaxInFlight: maxInFlight, CreatedAt: t0, UpdatedAt: t0,
	}
}

// mkEndpoint creates an endpoint the way the ops layer does (in a
// transaction: the row and its lease slots).
func mkEndpoint(t testing.TB, db *store.DB, ownerID string, maxInFlight int) *endpoint.Endpoint {
	t.Helper()
	e := newEndpoint(ownerID, maxInFlight)
	must(t, db.InTx(context.Background(), func(q *store.Q) error { return q.CreateEndpoint(context.Background(), e) }))
	return e
}

func newEvent(ownerID, key string, created time.Time) *event.Event {
	return &event.Event{
		ID: event.NewID("evt_", created), OwnerID: ownerID, Type: "invoice.paid", Subject: "invoice://1",
		OccurredAt: created.Add(-time.Second), Data: json.RawMessage(`{"published":true,"n":1}`),
		Tenant: "tn", IdempotencyKey: key, CreatedAt: created,
	}
}

func mkEvent(t testing.TB, db *store.DB, ownerID string) *event.Event {
	t.Helper()
	e := newEvent(ownerID, "", t0)
	if _, _, err := db.Q().InsertEvent(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	return e
}

func newDelivery(ownerID, endpointID, eventID string, created time.Time) *endpoint.Delivery {
	next := created
	return &endpoint.Delivery{
		ID: event.NewID("dlv_", created), OwnerID: ownerID, EndpointID: endpointID, EventID: eventID, EventType: "invoice.paid",
		State: endpoint.Pending, NextAttemptAt: &next, CreatedAt: created, UpdatedAt: created,
	}
}

func mkDeliveries(t testing.TB, db *store.DB, ds ...*endpoint.Delivery) {
	t.Helper()
	got, err := db.Q().InsertDeliveries(context.Background(), ds)
	must(t, err)
	if len(got) != len(ds) {
		t.Fatalf("inserted %d deliveries, want %d", len(got), len(ds))
	}
}

// --- owners ---

func TestOwners(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		q := db.Q()
		a := &owner.Owner{ID: "acme", Profile: "kwork", Attributes: map[string]string{"app": "a1", "environment": "prod"}, CreatedAt: t0}
		b := &owner.Owner{ID: "beta", Profile: "standard", Attributes: nil, CreatedAt: t0.Add(time.Second)}
		must(t, q.CreateOwner(ctx, b))
		must(t, q.CreateOwner(ctx, a))
		wantCode(t, q.CreateOwner(ctx, &owner.Owner{ID: "acme", Profile: "standard", CreatedAt: t0}), apperr.Conflict)

		got, err := q.GetOwner(ctx, "acme")
		must(t, err)
		jsonEq(t, "GetOwner", got, a)
		if !got.CreatedAt.Equal(t0) {
			t.Fatalf("created_at %v, want %v", got.CreatedAt, t0)
		}
		gotB, err := q.GetOwner(ctx, "beta")
		must(t, err)
		if gotB.Attributes == nil {
			t.Fatal("nil attributes come back as an empty map")
		}
		_, err = q.GetOwner(ctx, "nobody")
		wantCode(t, err, apperr.NotFound)

		list, err := q.ListOwners(ctx)
		must(t, err)
		if ids := ownerIDs(list); !slices.Equal(ids, []string{"acme", "beta"}) {
			t.Fatalf("ListOwners = %v, want oldest first [acme beta]", ids)
		}

		a.Profile, a.Attributes = "standard", map[string]string{"k": "v"}
		must(t, q.UpdateOwner(ctx, a))
		got, err = q.GetOwner(ctx, "acme")
		must(t, err)
		jsonEq(t, "after UpdateOwner", got, a)
		wantCode(t, q.UpdateOwner(ctx, &owner.Owner{ID: "nobody", Profile: "standard"}), apperr.NotFound)

		must(t, q.DeleteOwner(ctx, "beta"))
		wantCode(t, q.DeleteOwner(ctx, "beta"), apperr.NotFound)
		list, err = q.ListOwners(ctx)
		must(t, err)
		if ids := ownerIDs(list); !slices.Equal(ids, []string{"acme"}) {
			t.Fatalf("after delete ListOwners = %v", ids)
		}
	})
}

func ownerIDs(list []*owner.Owner) []string {
	var ids []string
	for _, o := range list {
		ids = append(ids, o.ID)
	}
	return ids
}

// TestDeleteOwnerCascades: deleting an owner removes its keys, endpoints
// (with their lease slots), events, deliveries and event types, and nothing
// of another owner's.
func TestDeleteOwnerCascades(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		endpoints := map[string]string{}
		for _, id := range []string{"gone", "kept"} {
			mkOwner(t, db, id)
			must(t, db.Q().CreateAPIKey(ctx, &owner.APIKey{ID: "key_" + id, OwnerID: id, Role: owner.Admin, Hash: owner.HashKey(id), Prefix: "hkd_", CreatedAt: t0}))
			must(t, db.Q().PutEventType(ctx, &event.Type{OwnerID: id, Name: "invoice.paid", Exposure: event.Webhook, CreatedAt: t0}))
			ep := mkEndpoint(t, db, id, 2)
			endpoints[id] = ep.ID
			ev := mkEvent(t, db, id)
			mkDeliveries(t, db, newDelivery(id, ep.ID, ev.ID, t0))
		}
		must(t, db.Q().PutEventType(ctx, &event.Type{Name: "shared.type", Exposure: event.Webhook, CreatedAt: t0}))

		must(t, db.Q().DeleteOwner(ctx, "gone"))

		for _, c := range []struct {
			table string
			gone  int // rows left of the deleted owner
			kept  int // rows of the other owner
		}{
			{"hookd_owners WHERE id = $1", 0, 1},
			{"hookd_api_keys WHERE owner_id = $1", 0, 1},
			{"hookd_event_types WHERE owner_id = $1", 0, 1},
			{"hookd_endpoints WHERE owner_id = $1", 0, 1},
			{"hookd_events WHERE owner_id = $1", 0, 1},
			{"hookd_deliveries WHERE owner_id = $1", 0, 1},
		} {
			if n := count(t, db, "SELECT count(*) FROM "+c.table, "gone"); n != c.gone {
				t.Errorf("%s [gone]: %d rows, want %d", c.table, n, c.gone)
			}
			if n := count(t, db, "SELECT count(*) FROM "+c.table, "kept"); n != c.kept {
				t.Errorf("%s [kept]: %d rows, want %d", c.table, n, c.kept)
			}
		}
		if n := count(t, db, `SELECT count(*) FROM hookd_endpoint_leases WHERE endpoint_id = $1`, endpoints["gone"]); n != 0 {
			t.Errorf("deleted owner's endpoint still has %d lease slots", n)
		}
		if n := count(t, db, `SELECT count(*) FROM hookd_endpoint_leases WHERE endpoint_id = $1`, endpoints["kept"]); n != 2 {
			t.Errorf("other owner's endpoint has %d lease slots, want 2", n)
		}
		if n := count(t, db, `SELECT count(*) FROM hookd_event_types WHERE owner_id = ''`); n != 1 {
			t.Errorf("shared catalog has %d types, want 1 (owner delete must not touch it)", n)
		}
	})
}

// --- API keys ---

func TestAPIKeys(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		q := db.Q()
		mkOwner(t, db, "acme")
		mkOwner(t, db, "beta")
		k1 := &owner.APIKey{ID: "key_1", OwnerID: "acme", Role: owner.Admin, Hash: owner.HashKey("s1"), Prefix: "hkd_s1", CreatedAt: t0}
		k2 := &owner.APIKey{ID: "key_2", OwnerID: "acme", Role: owner.Publisher, Hash: owner.HashKey("s2"), Prefix: "hkd_s2", CreatedAt: t0.Add(time.Second)}
		kb := &owner.APIKey{ID: "key_b", OwnerID: "beta", Role: owner.Admin, Hash: owner.HashKey("sb"), Prefix: "hkd_sb", CreatedAt: t0}
		op := &owner.APIKey{ID: "key_op", Role: owner.Operator, Hash: owner.HashKey("op"), Prefix: "hkd_op", CreatedAt: t0}
		for _, k := range []*owner.APIKey{k2, k1, kb, op} {
			must(t, q.CreateAPIKey(ctx, k))
		}
		if err := q.CreateAPIKey(ctx, &owner.APIKey{ID: "key_dup", OwnerID: "acme", Role: owner.Admin, Hash: owner.HashKey("s1"), CreatedAt: t0}); err == nil {
			t.Fatal("a second key with the same hash was accepted")
		}

		got, err := q.APIKeyByHash(ctx, owner.HashKey("s2"))
		must(t, err)
		jsonEq(t, "APIKeyByHash", got, k2)
		if got.RevokedAt != nil || !got.CreatedAt.Equal(k2.CreatedAt) {
			t.Fatalf("APIKeyByHash times: %+v", got)
		}
		got, err = q.APIKeyByHash(ctx, owner.HashKey("op"))
		must(t, err)
		if got.OwnerID != "" || got.Role != owner.Operator {
			t.Fatalf("operator key came back as owner %q role %s", got.OwnerID, got.Role)
		}
		_, err = q.APIKeyByHash(ctx, owner.HashKey("unknown"))
		wantCode(t, err, apperr.Unauthorized)

		list, err := q.ListAPIKeys(ctx, "acme")
		must(t, err)
		if ids := keyIDs(list); !slices.Equal(ids, []string{"key_1", "key_2"}) {
			t.Fatalf("ListAPIKeys(acme) = %v, want [key_1 key_2] (oldest first, no other owner's)", ids)
		}
		list, err = q.ListAPIKeys(ctx, "")
		must(t, err)
		if ids := keyIDs(list); !slices.Equal(ids, []string{"key_op"}) {
			t.Fatalf("ListAPIKeys(operator) = %v", ids)
		}

		at := ts(t0.Add(day))
		wantCode(t, q.RevokeAPIKey(ctx, "beta", "key_1", at), apperr.NotFound) // not beta's
		wantCode(t, q.RevokeAPIKey(ctx, "acme", "key_none", at), apperr.NotFound)
		must(t, q.RevokeAPIKey(ctx, "acme", "key_1", at))
		must(t, q.RevokeAPIKey(ctx, "acme", "key_1", at+1)) // again: the first time stays
		must(t, q.RevokeAPIKey(ctx, "", "key_op", at))
		got, err = q.APIKeyByHash(ctx, owner.HashKey("s1"))
		must(t, err)
		if got.RevokedAt == nil || !got.RevokedAt.Equal(t0.Add(day)) {
			t.Fatalf("revoked_at = %v, want %v", got.RevokedAt, t0.Add(day))
		}
		got, err = q.APIKeyByHash(ctx, owner.HashKey("sb"))
		must(t, err)
		if got.RevokedAt != nil {
			t.Fatal("revoking acme's key revoked beta's")
		}
	})
}

func keyIDs(ks []*owner.APIKey) []string {
	var ids []string
	for _, k := range ks {
		ids = append(ids, k.ID)
	}
	return ids
}

func ts(t time.Time) int64 { return t.UnixMicro() }

// --- event types ---

func TestEventTypes(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		q := db.Q()
		put := func(ownerID, name string, exp event.Exposure) {
			t.Helper()
			must(t, q.PutEventType(ctx, &event.Type{OwnerID: ownerID, Name: name, Exposure: exp, Description: name + " d", CreatedAt: t0}))
		}
		put("", "invoice.paid", event.Webhook)
		put("", "invoice.voided", event.Webhook)
		put("", "audit.read", event.Internal)
		put("acme", "invoice.paid", event.Internal) // acme overrides the catalog
		put("acme", "acme.only", event.Webhook)

		list, err := q.ListEventTypes(ctx, "acme")
		must(t, err)
		// Its own types and the catalog's it did not override, by name.
		want := []string{"acme/acme.only/webhook", "/audit.read/internal", "acme/invoice.paid/internal", "/invoice.voided/webhook"}
		if got := typeKeys(list); !slices.Equal(got, want) {
			t.Fatalf("ListEventTypes(acme) = %v, want %v", got, want)
		}
		list, err = q.ListEventTypes(ctx, "beta")
		must(t, err)
		if got := typeKeys(list); !slices.Equal(got, []string{"/audit.read/internal", "/invoice.paid/webhook", "/invoice.voided/webhook"}) {
			t.Fatalf("ListEventTypes(beta) = %v", got)
		}

		for _, c := range []struct {
			owner, name string
			exp         event.Exposure
			registered  bool
		}{
			{"acme", "invoice.paid", event.Internal, true}, // the owner's own first
			{"beta", "invoice.paid", event.Webhook, true},  // else the catalog
			{"acme", "acme.only", event.Webhook, true},
			{"beta", "acme.only", event.Internal, false}, // another owner's type is not beta's
			{"acme", "never.registered", event.Internal, false},
		} {
			exp, ok, err := q.Exposure(ctx, c.owner, c.name)
			must(t, err)
			if exp != c.exp || ok != c.registered {
				t.Errorf("Exposure(%s, %s) = %s, %v; want %s, %v", c.owner, c.name, exp, ok, c.exp, c.registered)
			}
		}

		// Put again updates (an upsert), it does not add a row.
		put("", "invoice.voided", event.Internal)
		exp, _, err := q.Exposure(ctx, "beta", "invoice.voided")
		must(t, err)
		if exp != event.Internal {
			t.Fatalf("after re-put exposure = %s, want internal", exp)
		}
		if n := count(t, db, `SELECT count(*) FROM hookd_event_types WHERE name = $1`, "invoice.voided"); n != 1 {
			t.Fatalf("%d rows for one type", n)
		}
	})
}

func typeKeys(ts []*event.Type) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.OwnerID+"/"+t.Name+"/"+string(t.Exposure))
	}
	return out
}

// --- events ---

func TestEvents(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		q := db.Q()
		mkOwner(t, db, "acme")
		mkOwner(t, db, "beta")

		e1 := newEvent("acme", "key-1", t0)
		e1.EndpointID = "ep_only"
		id, inserted, err := q.InsertEvent(ctx, e1)
		must(t, err)
		if id != e1.ID || !inserted {
			t.Fatalf("InsertEvent = %s, %v; want %s, true", id, inserted, e1.ID)
		}
		got, err := q.GetEvent(ctx, "acme", e1.ID)
		must(t, err)
		jsonEq(t, "GetEvent", got, e1)
		if got.EndpointID != "ep_only" || got.IdempotencyKey != "key-1" || got.Tenant != "tn" || !got.CreatedAt.Equal(t0) || !got.OccurredAt.Equal(e1.OccurredAt) {
			t.Fatalf("GetEvent hidden fields: %+v", got)
		}

		// The same key again: the first event's id, nothing inserted.
		dup := newEvent("acme", "key-1", t0.Add(time.Minute))
		id, inserted, err = q.InsertEvent(ctx, dup)
		must(t, err)
		if id != e1.ID || inserted {
			t.Fatalf("duplicate key: InsertEvent = %s, %v; want %s, false", id, inserted, e1.ID)
		}
		if _, err := q.GetEvent(ctx, "", dup.ID); !apperr.IsNotFound(err) {
			t.Fatalf("the duplicate was stored: %v", err)
		}
		// Keys are per owner.
		other := newEvent("beta", "key-1", t0)
		if _, inserted, err := q.InsertEvent(ctx, other); err != nil || !inserted {
			t.Fatalf("another owner's key-1: inserted=%v err=%v", inserted, err)
		}
		// No key (NULL) never conflicts.
		for range 3 {
			if _, inserted, err := q.InsertEvent(ctx, newEvent("acme", "", t0)); err != nil || !inserted {
				t.Fatalf("keyless event: inserted=%v err=%v", inserted, err)
			}
		}
		if n := count(t, db, `SELECT count(*) FROM hookd_events WHERE owner_id = $1`, "acme"); n != 4 {
			t.Fatalf("acme has %d events, want 4", n)
		}

		// Owner filter: another owner's event is not found; "" is any owner.
		_, err = q.GetEvent(ctx, "beta", e1.ID)
		wantCode(t, err, apperr.NotFound)
		if _, err := q.GetEvent(ctx, "", e1.ID); err != nil {
			t.Fatalf("GetEvent any owner: %v", err)
		}
		_, err = q.GetEvent(ctx, "acme", "evt_missing")
		wantCode(t, err, apperr.NotFound)
	})
}

func TestPruneEvents(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		q := db.Q()
		mkOwner(t, db, "acme")
		cutoff := t0.Add(30 * day)
		var fresh []string
		for i := range 5 {
			_, _, err := q.InsertEvent(ctx, newEvent("acme", "", t0.Add(time.Duration(i)*time.Hour)))
			must(t, err)
		}
		for i := range 2 {
			e := newEvent("acme", "", cutoff.Add(time.Duration(i)*time.Microsecond)) // at the cutoff: kept
			_, _, err := q.InsertEvent(ctx, e)
			must(t, err)
			fresh = append(fresh, e.ID)
		}
		var batches []int64
		for {
			n, err := q.PruneEvents(ctx, ts(cutoff), 2)
			must(t, err)
			if n == 0 {
				break
			}
			batches = append(batches, n)
		}
		if !slices.Equal(batches, []int64{2, 2, 1}) {
			t.Fatalf("prune batches %v, want [2 2 1]", batches)
		}
		for _, id := range fresh {
			if _, err := q.GetEvent(ctx, "acme", id); err != nil {
				t.Fatalf("event at the cutoff was pruned: %v", err)
			}
		}
	})
}

// --- migrations ---

func TestMigrateIdempotent(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mkOwner(t, db, "acme")
		for range 2 {
			must(t, db.Migrate(ctx))
		}
		n, err := db.MigrationCount(ctx)
		must(t, err)
		if want := migrationFiles(t); n != want {
			t.Fatalf("MigrationCount = %d after migrating three times, want %d (each migration once)", n, want)
		}
		if _, err := db.Q().GetOwner(ctx, "acme"); err != nil {
			t.Fatalf("data lost by re-migrating: %v", err)
		}
	})
}

// TestMigrateConcurrent: several processes' worth of Open+Migrate at once on
// one fresh database (each its own pool or handle): all succeed, each
// version is recorded once. On PostgreSQL also with a schema that does not
// exist yet, as when N hookd processes start together on a new database.
func TestMigrateConcurrent(t *testing.T) {
	t.Parallel()
	cases := map[string]func(t testing.TB) store.Config{}
	for _, e := range dbtest.Engines() {
		cases[e.Name] = e.Config
	}
	cases["postgres-new-schema"] = func(t testing.TB) store.Config {
		u := dbtest.PostgresURL(t)
		schema := dbtest.NewSchema(t, u) // only for its cleanup (DROP … CASCADE) and unique name
		dropSchema(t, u, schema)
		return store.Config{URL: u, Schema: schema}
	}
	for name, config := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := config(t)
			cfg.MaxConns = 4
			const n = 4
			type result struct {
				db  *store.DB
				err error
			}
			results := make(chan result, n)
			start := make(chan struct{})
			for range n {
				go func() {
					<-start
					db, err := store.Open(context.Background(), cfg)
					if err == nil {
						err = db.Migrate(context.Background())
					}
					results <- result{db, err}
				}()
			}
			close(start)
			var failed []error
			var db *store.DB
			for range n {
				r := <-results
				if r.db != nil {
					t.Cleanup(func() { r.db.Close() })
					db = r.db
				}
				if r.err != nil {
					failed = append(failed, r.err)
				}
			}
			if len(failed) > 0 {
				t.Fatalf("%d of %d concurrent Open+Migrate failed: %v", len(failed), n, errors.Join(failed...))
			}
			if got, want := count(t, db, `SELECT count(*) FROM hookd_migrations`), migrationFiles(t); got != want {
				t.Fatalf("hookd_migrations has %d rows, want %d (each migration once)", got, want)
			}
			if got := count(t, db, `SELECT count(*) FROM river_job`); got != 0 {
				t.Fatalf("river_job: %d rows", got)
			}
		})
	}
}

func dropSchema(t testing.TB, url, schema string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	must(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
	must(t, err)
}

// migrationFiles counts the migrations shipped in migrations/.
func migrationFiles(t *testing.T) int {
	t.Helper()
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no migrations found: %v", err)
	}
	return len(files)
}
