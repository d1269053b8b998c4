package httpapi_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/owner"
)

// TestRoles: a publisher only publishes; an admin manages its own owner
// only and cannot mint operator keys; over REST and MCP alike.
func TestRoles(t *testing.T) {
	t.Parallel()
	w := newWorld(t, dbtest.Backends()[0])
	pub, admin := w.keys["alice/publisher"], w.keys["alice/admin"]
	for _, c := range callers {
		t.Run(c.name, func(t *testing.T) {
			for _, tc := range []struct {
				key, owner, op string
				args           map[string]any
				code           string // "" for success
			}{
				{pub, "", "events.publish", map[string]any{"type": "audit.checked"}, ""},
				{pub, "", "webhooks.list", nil, "forbidden"},
				{pub, "", "webhooks.create", map[string]any{"url": w.receiver.URL, "event_types": []string{"webhook.test"}}, "forbidden"},
				{pub, "", "event_types.put", map[string]any{"name": "x.y", "exposure": "webhook"}, "forbidden"},
				{pub, "", "events.get", map[string]any{"id": "evt_x"}, "forbidden"},
				{pub, "", "api_keys.list", nil, "forbidden"},
				{pub, "", "api_keys.create", map[string]any{"role": "publisher"}, "forbidden"},
				{admin, "", "webhooks.list", nil, ""},
				{admin, "alice", "webhooks.list", nil, ""},
				{admin, "bob", "webhooks.list", nil, "not_found"},
				{admin, "bob", "api_keys.create", map[string]any{"role": "admin"}, "not_found"},
				{admin, "bob", "events.publish", map[string]any{"type": "audit.checked"}, "not_found"},
				{admin, "", "api_keys.create", map[string]any{"role": "operator"}, "forbidden"},
				{admin, "", "api_keys.create", map[string]any{"role": "root"}, "invalid"},
				{admin, "", "owners.list", nil, "forbidden"},
				{admin, "", "owners.create", map[string]any{"id": "eve"}, "forbidden"},
				{w.operator, "", "webhooks.list", nil, "invalid"},
				{w.operator, "alice", "webhooks.list", nil, ""},
				{w.operator, "nobody", "webhooks.list", nil, "not_found"},
				{w.operator, "", "api_keys.create", map[string]any{"role": "admin"}, "invalid"},
			} {
				got := c.call(w, w.op(tc.op), tc.key, tc.owner, tc.args)
				if got.code != tc.code {
					t.Errorf("%s by %s (owner %q): %s, want %q", tc.op, roleOf(w, tc.key), tc.owner, got, tc.code)
				}
			}
		})
	}
}

func roleOf(w *world, key string) string {
	if key == "" {
		return "no key"
	}
	if key == w.operator {
		return "operator"
	}
	for name, k := range w.keys {
		if k == key {
			return name
		}
	}
	return "?"
}

// TestKeyLifecycle: an admin creates a key for its owner (shown once),
// lists keys without secrets, revokes it, and the key's next request is
// refused on both transports; an operator manages operator keys and any
// owner's.
func TestKeyLifecycle(t *testing.T) {
	t.Parallel()
	for _, backend := range dbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			w := newWorld(t, backend)
			admin := w.keys["alice/admin"]
			for _, c := range callers {
				t.Run(c.name, func(t *testing.T) {
					created := w.must(c.call(w, w.op("api_keys.create"), admin, "", map[string]any{"role": "publisher"}))
					var k struct {
						ID, Secret, Role string
						OwnerID          string `json:"owner_id"`
					}
					_ = json.Unmarshal(created.body, &k)
					if k.OwnerID != "alice" || k.Role != "publisher" || !strings.HasPrefix(k.Secret, "hkd_") || created.status != 201 {
						t.Fatalf("created %s: want alice's publisher key with its secret", created)
					}
					list := w.must(c.call(w, w.op("api_keys.list"), admin, "", nil))
					if !strings.Contains(string(list.body), k.ID) || strings.Contains(string(list.body), k.Secret) || strings.Contains(string(list.body), `"secret"`) {
						t.Errorf("list %s: want the key, without any secret", list)
					}
					w.must(c.call(w, w.op("events.publish"), k.Secret, "", map[string]any{"type": "audit.checked"}))
					revoked := w.must(c.call(w, w.op("api_keys.revoke"), admin, "", map[string]any{"id": k.ID}))
					if !strings.Contains(string(revoked.body), `"revoked_at"`) {
						t.Errorf("revoke answered %s: want the key with revoked_at", revoked)
					}
					// REST refuses the revoked key; MCP refuses it before any tool runs.
					if got := w.rest(w.op("events.publish"), k.Secret, "", map[string]any{"type": "audit.checked"}); got.code != "unauthorized" {
						t.Errorf("REST with a revoked key: %s, want 401 unauthorized", got)
					}
					if _, err := dialMCP(w.api.URL+"/mcp", k.Secret); err == nil {
						t.Error("MCP connected with a revoked key")
					}
				})
			}

			// Operators: operator keys belong to no owner; naming an owner
			// manages that owner's keys.
			op := w.operator
			k := w.must(w.rest(w.op("api_keys.create"), op, "", map[string]any{"role": "operator"}))
			if field(t, k.body, "role") != "operator" || strings.Contains(string(k.body), `"owner_id":"alice"`) {
				t.Errorf("operator key %s", k.body)
			}
			ops := w.must(w.rest(w.op("api_keys.list"), op, "", nil))
			var list struct{ Data []struct{ Role string } }
			_ = json.Unmarshal(ops.body, &list)
			for _, d := range list.Data {
				if d.Role != "operator" {
					t.Errorf("operator key list holds a %s key", d.Role)
				}
			}
			forAlice := w.must(w.rest(w.op("api_keys.create"), op, "alice", map[string]any{"role": "admin"}))
			if got := w.rest(w.op("webhooks.list"), field(t, forAlice.body, "secret"), "", nil); got.code != "" {
				t.Errorf("alice's new admin key: %s", got)
			}
			w.must(w.rest(w.op("api_keys.revoke"), op, "bob", map[string]any{"id": w.bob.keyID}))
			if got := w.rest(w.op("webhooks.list"), w.keys["bob/admin"], "", nil); got.code != "unauthorized" {
				t.Errorf("bob's revoked key: %s, want unauthorized", got)
			}
		})
	}
}

// TestOwners: operators create, read, change and delete owners; deleting
// one deletes its keys, endpoints, events and deliveries.
func TestOwners(t *testing.T) {
	t.Parallel()
	for _, backend := range dbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			w := newWorld(t, backend)
			op := w.operator
			call := func(name, ownerName string, args map[string]any) result {
				return w.rest(w.op(name), op, ownerName, args)
			}
			if got := call("owners.create", "", map[string]any{"id": "carol", "profile": "kwork"}); got.code != "invalid" {
				t.Errorf("kwork owner without app: %s, want invalid", got)
			}
			if got := call("owners.create", "", map[string]any{"id": "bob"}); got.code != "conflict" {
				t.Errorf("existing id: %s, want conflict", got)
			}
			created := w.must(call("owners.create", "", map[string]any{"id": "carol", "profile": "kwork", "attributes": map[string]string{"app": "app_1", "environment": "test"}}))
			if created.status != 201 || field(t, created.body, "profile") != "kwork" {
				t.Errorf("created %s", created)
			}
			if got := w.must(call("owners.get", "", map[string]any{"id": "carol"})); !strings.Contains(string(got.body), `"app":"app_1"`) {
				t.Errorf("get %s", got)
			}
			if got := w.must(call("owners.list", "", nil)); !strings.Contains(string(got.body), `"carol"`) || !strings.Contains(string(got.body), `"alice"`) {
				t.Errorf("list %s", got)
			}
			if got := call("owners.update", "", map[string]any{"id": "carol", "attributes": map[string]string{"app": "app_1", "environment": "prod"}}); got.code != "invalid" {
				t.Errorf("attributes kwork refuses: %s, want invalid", got)
			}
			w.must(call("owners.update", "", map[string]any{"id": "carol", "attributes": map[string]string{"app": "app_2", "environment": "live"}}))

			// Carol gets a key, an endpoint, an event and its delivery.
			carol := w.newKey("carol", owner.Admin)
			w.must(w.rest(w.op("event_types.put"), carol, "", map[string]any{"name": "order.created", "exposure": "webhook"}))
			ep := field(t, w.must(w.rest(w.op("webhooks.create"), carol, "", map[string]any{"url": w.receiver.URL, "event_types": []string{"order.created"}})).body, "id")
			ev := field(t, w.must(w.rest(w.op("events.publish"), carol, "", map[string]any{"type": "order.created", "data": map[string]any{"published": true}})).body, "id")
			w.waitDelivered("carol", ep)

			if got := call("owners.update", "", map[string]any{"id": "carol", "profile": "standard"}); got.code != "conflict" {
				t.Errorf("profile change under an endpoint: %s, want conflict", got)
			}
			if got := call("owners.delete", "", map[string]any{"id": "carol"}); got.status != 204 {
				t.Fatalf("delete: %s", got)
			}
			ctx := context.Background()
			q := w.h.DB.Q()
			if _, err := q.GetEndpoint(ctx, "carol", ep); err == nil {
				t.Error("carol's endpoint survived her deletion")
			}
			if _, err := q.GetEvent(ctx, "carol", ev); err == nil {
				t.Error("carol's event survived her deletion")
			}
			if ds, err := q.ListDeliveries(ctx, "carol", ep, 10, ""); err != nil || len(ds) != 0 {
				t.Errorf("carol's deliveries after her deletion: %d (%v)", len(ds), err)
			}
			if got := w.rest(w.op("webhooks.list"), carol, "", nil); got.code != "unauthorized" {
				t.Errorf("carol's key after her deletion: %s, want unauthorized", got)
			}
			for _, name := range []string{"owners.get", "owners.delete"} {
				if got := call(name, "", map[string]any{"id": "carol"}); got.code != "not_found" {
					t.Errorf("%s of a deleted owner: %s, want not_found", name, got)
				}
			}
			if got := call("webhooks.list", "alice", nil); got.code != "" {
				t.Errorf("alice after carol's deletion: %s", got)
			}
		})
	}
}
