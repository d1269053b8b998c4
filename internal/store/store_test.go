// The store's conformance suite: every test here runs against both backends
// (setup, in setup_test.go), so the one SQL text is proven on both.
package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/store"
)

// --- owners ---

func TestOwners(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		a := &owner.Owner{ID: "acme", Profile: "kwork", Attributes: map[string]string{"app": "a1", "environment": "prod"}, CreatedAt: t0}
		b := &owner.Owner{ID: "beta", Profile: "standard", Attributes: nil, CreatedAt: t0.Add(time.Second)}
		must(t, s.q.CreateOwner(s.ctx, b))
		must(t, s.q.CreateOwner(s.ctx, a))
		wantCode(t, s.q.CreateOwner(s.ctx, &owner.Owner{ID: "acme", Profile: "standard", CreatedAt: t0}), apperr.Conflict)

		got, err := s.q.GetOwner(s.ctx, "acme")
		must(t, err)
		jsonEq(t, "GetOwner", got, a)
		if !got.CreatedAt.Equal(t0) {
			t.Fatalf("created_at %v, want %v", got.CreatedAt, t0)
		}
		gotB, err := s.q.GetOwner(s.ctx, "beta")
		must(t, err)
		if gotB.Attributes == nil {
			t.Fatal("nil attributes come back as an empty map")
		}
		_, err = s.q.GetOwner(s.ctx, "nobody")
		wantCode(t, err, apperr.NotFound)

		list, err := s.q.ListOwners(s.ctx)
		must(t, err)
		if ids := ownerIDs(list); !slices.Equal(ids, []string{"acme", "beta"}) {
			t.Fatalf("ListOwners = %v, want oldest first [acme beta]", ids)
		}

		a.Profile, a.Attributes = "standard", map[string]string{"k": "v"}
		must(t, s.q.UpdateOwner(s.ctx, a))
		got, err = s.q.GetOwner(s.ctx, "acme")
		must(t, err)
		jsonEq(t, "after UpdateOwner", got, a)
		wantCode(t, s.q.UpdateOwner(s.ctx, &owner.Owner{ID: "nobody", Profile: "standard"}), apperr.NotFound)

		must(t, s.q.DeleteOwner(s.ctx, "beta"))
		wantCode(t, s.q.DeleteOwner(s.ctx, "beta"), apperr.NotFound)
		list, err = s.q.ListOwners(s.ctx)
		must(t, err)
		if ids := ownerIDs(list); !slices.Equal(ids, []string{"acme"}) {
			t.Fatalf("after delete ListOwners = %v", ids)
		}
	})
}

func ownerIDs(list []*owner.Owner) []string {
	return pluck(list, func(o *owner.Owner) string { return o.ID })
}

// TestDeleteOwnerCascades: deleting an owner removes its keys, endpoints
// (with their lease slots), events, deliveries and event types, and nothing
// of another owner's.
func TestDeleteOwnerCascades(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		endpoints := map[string]string{}
		for _, id := range []string{"gone", "kept"} {
			s.owner(id)
			must(t, s.q.CreateAPIKey(s.ctx, &owner.APIKey{ID: "key_" + id, OwnerID: id, Role: owner.Admin, Hash: owner.HashKey(id), Prefix: "hkd_", CreatedAt: t0}))
			must(t, s.q.PutEventType(s.ctx, &event.Type{OwnerID: id, Name: "invoice.paid", Exposure: event.Webhook, CreatedAt: t0}))
			ep := s.endpoint(id, 2)
			endpoints[id] = ep.ID
			ev := s.event(id)
			s.deliveries(newDelivery(id, ep.ID, ev.ID, t0))
		}
		must(t, s.q.PutEventType(s.ctx, &event.Type{Name: "shared.type", Exposure: event.Webhook, CreatedAt: t0}))

		must(t, s.q.DeleteOwner(s.ctx, "gone"))

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
			if n := s.count("SELECT count(*) FROM "+c.table, "gone"); n != c.gone {
				t.Errorf("%s [gone]: %d rows, want %d", c.table, n, c.gone)
			}
			if n := s.count("SELECT count(*) FROM "+c.table, "kept"); n != c.kept {
				t.Errorf("%s [kept]: %d rows, want %d", c.table, n, c.kept)
			}
		}
		if n := s.count(`SELECT count(*) FROM hookd_endpoint_leases WHERE endpoint_id = $1`, endpoints["gone"]); n != 0 {
			t.Errorf("deleted owner's endpoint still has %d lease slots", n)
		}
		if n := s.count(`SELECT count(*) FROM hookd_endpoint_leases WHERE endpoint_id = $1`, endpoints["kept"]); n != 2 {
			t.Errorf("other owner's endpoint has %d lease slots, want 2", n)
		}
		if n := s.count(`SELECT count(*) FROM hookd_event_types WHERE owner_id = ''`); n != 1 {
			t.Errorf("shared catalog has %d types, want 1 (owner delete must not touch it)", n)
		}
	})
}

// --- API keys ---

func TestAPIKeys(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		s.owner("beta")
		k1 := &owner.APIKey{ID: "key_1", OwnerID: "acme", Role: owner.Admin, Hash: owner.HashKey("s1"), Prefix: "hkd_s1", CreatedAt: t0}
		k2 := &owner.APIKey{ID: "key_2", OwnerID: "acme", Role: owner.Publisher, Hash: owner.HashKey("s2"), Prefix: "hkd_s2", CreatedAt: t0.Add(time.Second)}
		kb := &owner.APIKey{ID: "key_b", OwnerID: "beta", Role: owner.Admin, Hash: owner.HashKey("sb"), Prefix: "hkd_sb", CreatedAt: t0}
		op := &owner.APIKey{ID: "key_op", Role: owner.Operator, Hash: owner.HashKey("op"), Prefix: "hkd_op", CreatedAt: t0}
		for _, k := range []*owner.APIKey{k2, k1, kb, op} {
			must(t, s.q.CreateAPIKey(s.ctx, k))
		}
		if err := s.q.CreateAPIKey(s.ctx, &owner.APIKey{ID: "key_dup", OwnerID: "acme", Role: owner.Admin, Hash: owner.HashKey("s1"), CreatedAt: t0}); err == nil {
			t.Fatal("a second key with the same hash was accepted")
		}

		got, err := s.q.APIKeyByHash(s.ctx, owner.HashKey("s2"))
		must(t, err)
		jsonEq(t, "APIKeyByHash", got, k2)
		if got.RevokedAt != nil || !got.CreatedAt.Equal(k2.CreatedAt) {
			t.Fatalf("APIKeyByHash times: %+v", got)
		}
		got, err = s.q.APIKeyByHash(s.ctx, owner.HashKey("op"))
		must(t, err)
		if got.OwnerID != "" || got.Role != owner.Operator {
			t.Fatalf("operator key came back as owner %q role %s", got.OwnerID, got.Role)
		}
		_, err = s.q.APIKeyByHash(s.ctx, owner.HashKey("unknown"))
		wantCode(t, err, apperr.Unauthorized)

		list, err := s.q.ListAPIKeys(s.ctx, "acme")
		must(t, err)
		if ids := keyIDs(list); !slices.Equal(ids, []string{"key_1", "key_2"}) {
			t.Fatalf("ListAPIKeys(acme) = %v, want [key_1 key_2] (oldest first, no other owner's)", ids)
		}
		list, err = s.q.ListAPIKeys(s.ctx, "")
		must(t, err)
		if ids := keyIDs(list); !slices.Equal(ids, []string{"key_op"}) {
			t.Fatalf("ListAPIKeys(operator) = %v", ids)
		}

		at := ts(t0.Add(day))
		wantCode(t, s.q.RevokeAPIKey(s.ctx, "beta", "key_1", at), apperr.NotFound) // not beta's
		wantCode(t, s.q.RevokeAPIKey(s.ctx, "acme", "key_none", at), apperr.NotFound)
		must(t, s.q.RevokeAPIKey(s.ctx, "acme", "key_1", at))
		must(t, s.q.RevokeAPIKey(s.ctx, "acme", "key_1", at+1)) // again: the first time stays
		must(t, s.q.RevokeAPIKey(s.ctx, "", "key_op", at))
		got, err = s.q.APIKeyByHash(s.ctx, owner.HashKey("s1"))
		must(t, err)
		if got.RevokedAt == nil || !got.RevokedAt.Equal(t0.Add(day)) {
			t.Fatalf("revoked_at = %v, want %v", got.RevokedAt, t0.Add(day))
		}
		got, err = s.q.APIKeyByHash(s.ctx, owner.HashKey("sb"))
		must(t, err)
		if got.RevokedAt != nil {
			t.Fatal("revoking acme's key revoked beta's")
		}
	})
}

func keyIDs(ks []*owner.APIKey) []string {
	return pluck(ks, func(k *owner.APIKey) string { return k.ID })
}

func ts(t time.Time) int64 { return t.UnixMicro() }

// --- event types ---

func TestEventTypes(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		put := func(ownerID, name string, exp event.Exposure) {
			t.Helper()
			must(t, s.q.PutEventType(s.ctx, &event.Type{OwnerID: ownerID, Name: name, Exposure: exp, Description: name + " d", CreatedAt: t0}))
		}
		put("", "invoice.paid", event.Webhook)
		put("", "invoice.voided", event.Webhook)
		put("", "audit.read", event.Internal)
		put("acme", "invoice.paid", event.Internal) // acme overrides the catalog
		put("acme", "acme.only", event.Webhook)

		list, err := s.q.ListEventTypes(s.ctx, "acme")
		must(t, err)
		// Its own types and the catalog's it did not override, by name.
		want := []string{"acme/acme.only/webhook", "/audit.read/internal", "acme/invoice.paid/internal", "/invoice.voided/webhook"}
		if got := typeKeys(list); !slices.Equal(got, want) {
			t.Fatalf("ListEventTypes(acme) = %v, want %v", got, want)
		}
		list, err = s.q.ListEventTypes(s.ctx, "beta")
		must(t, err)
		if got := typeKeys(list); !slices.Equal(got, []string{"/audit.read/internal", "/invoice.paid/webhook", "/invoice.voided/webhook"}) {
			t.Fatalf("ListEventTypes(beta) = %v", got)
		}

		cases := []struct {
			owner, name string
			exp         event.Exposure
			registered  bool
		}{
			{"acme", "invoice.paid", event.Internal, true}, // the owner's own first
			{"beta", "invoice.paid", event.Webhook, true},  // else the catalog
			{"acme", "acme.only", event.Webhook, true},
			{"beta", "acme.only", event.Internal, false}, // another owner's type is not beta's
			{"acme", "never.registered", event.Internal, false},
			{"beta", "kwork.only", event.Internal, false}, // offered to another profile only
		}
		s.owner("acme")
		s.owner("beta")
		must(t, s.q.PutEventType(s.ctx, &event.Type{Name: "kwork.only", Exposure: event.Webhook, Profile: "kwork", CreatedAt: t0}))
		must(t, s.q.PutEventType(s.ctx, &event.Type{OwnerID: "acme", Name: "acme.only", Exposure: event.Webhook, SchemaHash: "h1", CreatedAt: t0}))
		s.endpoint("acme", 1)
		var keys []store.OwnerType
		for _, c := range cases {
			exp, ok, err := s.q.Exposure(s.ctx, c.owner, c.name)
			must(t, err)
			if exp != c.exp || ok != c.registered {
				t.Errorf("Exposure(%s, %s) = %s, %v; want %s, %v", c.owner, c.name, exp, ok, c.exp, c.registered)
			}
			keys = append(keys, store.OwnerType{Owner: c.owner, Type: c.name})
		}
		// A publish reads every rule of its events in one statement, each
		// as TypeRule resolves it, and which owners have endpoints.
		read, err := s.q.ReadPublishRules(s.ctx, keys, nil)
		must(t, err)
		for _, k := range keys {
			want, err := s.q.TypeRule(s.ctx, k.Owner, k.Type)
			must(t, err)
			if got := read.Of[k]; got != want {
				t.Errorf("ReadPublishRules %v = %+v; TypeRule says %+v", k, got, want)
			}
		}
		if r := read.Of[store.OwnerType{Owner: "acme", Type: "acme.only"}]; r.SchemaHash != "h1" {
			t.Errorf("acme.only's schema hash %q; want h1", r.SchemaHash)
		}
		if !read.Subscribed["acme"] || read.Subscribed["beta"] || len(read.Subscribed) != 1 {
			t.Errorf("subscribed owners %v; want acme only", read.Subscribed)
		}

		// Put again updates (an upsert), it does not add a row.
		put("", "invoice.voided", event.Internal)
		exp, _, err := s.q.Exposure(s.ctx, "beta", "invoice.voided")
		must(t, err)
		if exp != event.Internal {
			t.Fatalf("after re-put exposure = %s, want internal", exp)
		}
		if n := s.count(`SELECT count(*) FROM hookd_event_types WHERE name = $1`, "invoice.voided"); n != 1 {
			t.Fatalf("%d rows for one type", n)
		}
	})
}

func typeKeys(ts []*event.Type) []string {
	return pluck(ts, func(t *event.Type) string { return t.OwnerID + "/" + t.Name + "/" + string(t.Exposure) })
}

// --- events ---

func TestEvents(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		s.owner("beta")

		e1 := newEvent("acme", "key-1", t0)
		e1.EndpointID = "ep_only"
		id, inserted, err := s.q.InsertEvent(s.ctx, e1)
		must(t, err)
		if id != e1.ID || !inserted {
			t.Fatalf("InsertEvent = %s, %v; want %s, true", id, inserted, e1.ID)
		}
		got, err := s.q.GetEvent(s.ctx, "acme", e1.ID)
		must(t, err)
		jsonEq(t, "GetEvent", got, e1)
		if got.EndpointID != "ep_only" || got.IdempotencyKey != "key-1" || got.Tenant != "tn" || !got.CreatedAt.Equal(t0) || !got.OccurredAt.Equal(e1.OccurredAt) {
			t.Fatalf("GetEvent hidden fields: %+v", got)
		}

		// The same key again: the first event's id, nothing inserted.
		dup := newEvent("acme", "key-1", t0.Add(time.Minute))
		id, inserted, err = s.q.InsertEvent(s.ctx, dup)
		must(t, err)
		if id != e1.ID || inserted {
			t.Fatalf("duplicate key: InsertEvent = %s, %v; want %s, false", id, inserted, e1.ID)
		}
		if _, err := s.q.GetEvent(s.ctx, "", dup.ID); !apperr.IsNotFound(err) {
			t.Fatalf("the duplicate was stored: %v", err)
		}
		// Keys are per owner.
		other := newEvent("beta", "key-1", t0)
		if _, inserted, err := s.q.InsertEvent(s.ctx, other); err != nil || !inserted {
			t.Fatalf("another owner's key-1: inserted=%v err=%v", inserted, err)
		}
		// No key (NULL) never conflicts.
		for range 3 {
			if _, inserted, err := s.q.InsertEvent(s.ctx, newEvent("acme", "", t0)); err != nil || !inserted {
				t.Fatalf("keyless event: inserted=%v err=%v", inserted, err)
			}
		}
		if n := s.count(`SELECT count(*) FROM hookd_events WHERE owner_id = $1`, "acme"); n != 4 {
			t.Fatalf("acme has %d events, want 4", n)
		}

		// Owner filter: another owner's event is not found; "" is any owner.
		_, err = s.q.GetEvent(s.ctx, "beta", e1.ID)
		wantCode(t, err, apperr.NotFound)
		if _, err := s.q.GetEvent(s.ctx, "", e1.ID); err != nil {
			t.Fatalf("GetEvent any owner: %v", err)
		}
		_, err = s.q.GetEvent(s.ctx, "acme", "evt_missing")
		wantCode(t, err, apperr.NotFound)
	})
}

func TestPruneEvents(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		cutoff := t0.Add(30 * day)
		var fresh []string
		for i := range 5 {
			_, _, err := s.q.InsertEvent(s.ctx, newEvent("acme", "", t0.Add(time.Duration(i)*time.Hour)))
			must(t, err)
		}
		for i := range 2 {
			e := newEvent("acme", "", cutoff.Add(time.Duration(i)*time.Microsecond)) // at the cutoff: kept
			_, _, err := s.q.InsertEvent(s.ctx, e)
			must(t, err)
			fresh = append(fresh, e.ID)
		}
		var batches []int64
		for {
			n, err := s.q.PruneEvents(s.ctx, ts(cutoff), store.IDRange{}, 2)
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
			if _, err := s.q.GetEvent(s.ctx, "acme", id); err != nil {
				t.Fatalf("event at the cutoff was pruned: %v", err)
			}
		}
	})
}

// --- migrations ---

func TestMigrateIdempotent(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		for range 2 {
			must(t, s.db.Migrate(s.ctx))
		}
		n, err := s.db.MigrationCount(s.ctx)
		must(t, err)
		if want := migrationFiles(t); n != want {
			t.Fatalf("MigrationCount = %d after migrating three times, want %d (each migration once)", n, want)
		}
		if _, err := s.q.GetOwner(s.ctx, "acme"); err != nil {
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
	for _, e := range dbtest.Backends() {
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
					t.Cleanup(func() { must(t, r.db.Close()) })
					db = r.db
				}
				if r.err != nil {
					failed = append(failed, r.err)
				}
			}
			if len(failed) > 0 {
				t.Fatalf("%d of %d concurrent Open+Migrate failed: %v", len(failed), n, errors.Join(failed...))
			}
			s := newBundle(t, db)
			if got, want := s.count(`SELECT count(*) FROM hookd_migrations`), migrationFiles(t); got != want {
				t.Fatalf("hookd_migrations has %d rows, want %d (each migration once)", got, want)
			}
			if got := s.count(`SELECT count(*) FROM river_job`); got != 0 {
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

// TestMigrationMarksDeveloperSubscriptions: migration 016 makes each kwork
// owner's oldest subscription its developer one (lifecycle events went
// to every subscription before; they keep reaching one), and no other
// subscription, nor any standard endpoint.
func TestMigrationMarksDeveloperSubscriptions(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		shop := &owner.Owner{ID: "shop", Profile: "kwork", Attributes: map[string]string{"app": "a", "environment": "test"}, CreatedAt: t0}
		must(t, s.q.CreateOwner(s.ctx, shop))
		s.owner("acme")
		var ids []string
		for _, o := range []string{"shop", "shop", "acme"} {
			e := newEndpoint(o, 1)
			must(t, s.q.CreateEndpoint(s.ctx, e))
			ids = append(ids, e.ID)
		}
		// The database as before 016: no column, the migration not applied.
		s.exec(`ALTER TABLE hookd_endpoints DROP COLUMN developer`)
		s.exec(`DELETE FROM hookd_migrations WHERE version = 16`)
		must(t, s.db.Migrate(s.ctx))
		for i, want := range []bool{true, false, false} {
			e, err := s.q.GetEndpoint(s.ctx, "", ids[i])
			must(t, err)
			if e.Developer != want {
				t.Errorf("endpoint %d (%s) developer %v after migration 016, want %v", i, e.OwnerID, e.Developer, want)
			}
		}
	})
}
