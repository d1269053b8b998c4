package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/audit"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/store"
)

// auditStep is one state-changing call of the audit walk: the op, who
// calls it (an owner's admin key, or the operator's), and its arguments
// (made from what earlier steps answered).
type auditStep struct {
	op       string
	operator bool
	args     func(got map[string]string) map[string]any
	// keep names answer fields later steps need ("id" → got[op+".id"]).
	keep []string
}

// Credentials the walk gives endpoints; none may reach a record.
const (
	auditBasicPassword  = "basic-pass-4b2e71"
	auditClientSecret   = "oauth-client-secret-91d0c3"
	auditBrokerPassword = "amqp-pass-5e8a22"
)

// auditWalk is every op that is not a GET, on alice's own things, in an
// order where each finds what it needs.
func auditWalk(w *world, secretHeader string) []auditStep {
	since := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	return []auditStep{
		{op: "event_types.put", args: func(map[string]string) map[string]any {
			return map[string]any{"name": "alice.thing", "exposure": "webhook"}
		}},
		{op: "webhooks.create", keep: []string{"id", "secret"}, args: func(map[string]string) map[string]any {
			return map[string]any{"url": w.receiver.URL + "/alice", "event_types": []string{"alice.thing"}, "headers": map[string]string{"Authorization": "Bearer " + secretHeader},
				"auth": map[string]any{"type": "basic", "username": "hookd", "password": auditBasicPassword}}
		}},
		{op: "webhooks.update", args: func(g map[string]string) map[string]any {
			return map[string]any{"id": g["webhooks.create.id"], "description": "audited", "headers": map[string]string{"X-Receiver-Auth": secretHeader + "-2"}, "signature": "both"}
		}},
		// Receiver authentication, a filter and a transformation: the
		// record names auth but holds none of its credentials.
		{op: "webhooks.update", args: func(g map[string]string) map[string]any {
			return map[string]any{"id": g["webhooks.create.id"], "filter": "data.n > 0", "transformation": "function handler(webhook) { return webhook }",
				"auth": map[string]any{"type": "oauth2_client_credentials", "token_url": w.receiver.URL + "/token", "client_id": "hookd-client", "client_secret": auditClientSecret}}
		}},
		{op: "webhooks.rotate_secret", keep: []string{"secret"}, args: func(g map[string]string) map[string]any { return map[string]any{"id": g["webhooks.create.id"]} }},
		{op: "webhooks.expire_old_secrets", args: func(g map[string]string) map[string]any { return map[string]any{"id": g["webhooks.create.id"]} }},
		{op: "webhooks.send_test", args: func(g map[string]string) map[string]any { return map[string]any{"id": g["webhooks.create.id"]} }},
		{op: "webhooks.redeliver", args: func(g map[string]string) map[string]any { return map[string]any{"id": g["webhooks.create.id"]} }},
		{op: "webhooks.retry_now", args: func(g map[string]string) map[string]any { return map[string]any{"id": g["webhooks.create.id"]} }},
		{op: "webhooks.recover", args: func(g map[string]string) map[string]any {
			return map[string]any{"id": g["webhooks.create.id"], "since": since}
		}},
		{op: "grants.create", keep: []string{"id"}, args: func(map[string]string) map[string]any { return map[string]any{"allow": []string{"wiki://alice/*"}} }},
		{op: "grants.update", args: func(g map[string]string) map[string]any {
			return map[string]any{"id": g["grants.create.id"], "description": "audited"}
		}},
		{op: "grants.revoke", args: func(g map[string]string) map[string]any { return map[string]any{"id": g["grants.create.id"]} }},
		{op: "grants.delete", args: func(g map[string]string) map[string]any { return map[string]any{"id": g["grants.create.id"]} }},
		{op: "api_keys.create", keep: []string{"id", "secret"}, args: func(map[string]string) map[string]any { return map[string]any{"role": "publisher"} }},
		{op: "api_keys.revoke", args: func(g map[string]string) map[string]any { return map[string]any{"id": g["api_keys.create.id"]} }},
		{op: "portal.create_link", keep: []string{"url"}, args: func(map[string]string) map[string]any {
			return map[string]any{"ttl": "1h", "features": []string{"endpoints"}}
		}},
		{op: "portal.revoke_sessions", args: func(map[string]string) map[string]any { return nil }},
		{op: "owners.create", operator: true, args: func(map[string]string) map[string]any { return map[string]any{"id": "carol"} }},
		{op: "owners.update", operator: true, args: func(map[string]string) map[string]any {
			return map[string]any{"id": "carol", "attributes": map[string]string{"team": "payments"}}
		}},
		{op: "owners.delete", operator: true, args: func(map[string]string) map[string]any { return map[string]any{"id": "carol"} }},
		{op: "events.resend", args: func(g map[string]string) map[string]any {
			// The event is published here: publishing writes no record.
			ev := w.must(w.rest(w.op("events.publish"), w.keys["alice/publisher"], "", map[string]any{"type": "alice.thing", "data": map[string]any{"n": 1}}))
			var e struct {
				ID string `json:"id"`
			}
			_ = json.Unmarshal(ev.body, &e)
			return map[string]any{"id": e.ID, "endpoint_ids": []string{g["webhooks.create.id"]}}
		}},
		{op: "portal.update_branding", args: func(map[string]string) map[string]any { return map[string]any{"title": "Alice's hooks"} }},
		{op: "webhooks.delete", args: func(g map[string]string) map[string]any { return map[string]any{"id": g["webhooks.create.id"]} }},
		// A broker destination: its URL's password is sealed, never
		// recorded.
		{op: "webhooks.create", args: func(map[string]string) map[string]any {
			return map[string]any{"url": "amqp://hookd:" + auditBrokerPassword + "@127.0.0.1:5672/vh?exchange=x&routing_key=k", "event_types": []string{"alice.thing"}}
		}},
		// A polling endpoint: made by webhooks.create again (its record is
		// checked like the first's), then its own ops.
		{op: "webhooks.create", keep: []string{"id", "secret", "poll_token"}, args: func(map[string]string) map[string]any {
			return map[string]any{"kind": "poll", "event_types": []string{"alice.thing"}}
		}},
		{op: "webhooks.rotate_poll_token", keep: []string{"poll_token"}, args: func(g map[string]string) map[string]any { return map[string]any{"id": g["webhooks.create.id"]} }},
		{op: "webhooks.poll_seek", args: func(g map[string]string) map[string]any {
			return map[string]any{"id": g["webhooks.create.id"], "at": since}
		}},
	}
}

// TestAuditLog walks every op that changes state, on both engines, over
// REST (and one over MCP): each leaves exactly one audit record naming the
// key that called it, the op and the resource; a failed op leaves none; no
// secret the test made (API keys, endpoint secrets, a credential header, a
// portal link's token) appears in any record; an admin lists only its own
// owner's records, an operator everyone's.
func TestAuditLog(t *testing.T) {
	t.Parallel()
	for _, backend := range dbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			w := newWorld(t, backend)
			ctx := context.Background()
			const secretHeader = "hdr-credential-7f3a9c"
			secrets := []string{secretHeader, auditBasicPassword, auditClientSecret, auditBrokerPassword}
			for _, k := range w.keys {
				secrets = append(secrets, k)
			}
			secrets = append(secrets, w.operator)
			alice := w.keys["alice/admin"]
			keyID := func(secret string) string {
				k, err := w.h.DB.Q().APIKeyByHash(ctx, owner.HashKey(secret))
				if err != nil {
					t.Fatal(err)
				}
				return k.ID
			}
			walk := auditWalk(w, secretHeader)
			covered := map[string]bool{}
			for _, s := range walk {
				covered[s.op] = true
			}
			for _, op := range w.ops {
				switch {
				case op.Method == http.MethodGet:
				case !op.Audited() && op.NoAudit == "":
					t.Errorf("op %s changes state and writes no audit record", op.Name)
				case op.Audited() && !covered[op.Name]:
					t.Errorf("op %s is not in the audit walk: add it to auditWalk", op.Name)
				}
			}

			got := map[string]string{}
			for _, s := range walk {
				key, actor := alice, keyID(alice)
				if s.operator {
					key, actor = w.operator, keyID(w.operator)
				}
				before := auditRecords(t, w.h.DB)
				r := w.must(w.rest(w.op(s.op), key, "", s.args(got)))
				var answer map[string]any
				_ = json.Unmarshal(r.body, &answer)
				for _, f := range s.keep {
					v, _ := answer[f].(string)
					got[s.op+"."+f] = v
					if f == "secret" || f == "url" || f == "poll_token" {
						secrets = append(secrets, v)
					}
				}
				after := auditRecords(t, w.h.DB)
				if len(after) != len(before)+1 {
					t.Fatalf("%s: %d audit records, want %d", s.op, len(after), len(before)+1)
				}
				rec := after[0]
				if rec.Op != s.op || rec.Actor.Kind != audit.KindAPIKey || rec.Actor.ID != actor || rec.Actor.Remote == "" || rec.ResourceID == "" || rec.Resource != w.op(s.op).Audit {
					t.Errorf("%s: record %+v", s.op, rec)
				}
				if !s.operator && rec.OwnerID != "alice" {
					t.Errorf("%s: record of owner %q, want alice", s.op, rec.OwnerID)
				}
			}
			upds := findRecords(auditRecords(t, w.h.DB), "webhooks.update")
			if len(upds) != 2 {
				t.Fatalf("%d records of webhooks.update, want 2", len(upds))
			}
			upd, code := upds[1], upds[0] // newest first
			if !hasChange(upd, "description", "", "audited") || !hasChange(upd, "headers", nil, nil) {
				t.Errorf("webhooks.update changes %+v: want description '' → audited, and headers", upd.Changes)
			}
			if !hasChange(code, "filter", "", "data.n > 0") || !hasChange(code, "transformation", "", nil) || !hasChange(code, "auth", nil, nil) {
				t.Errorf("webhooks.update changes %+v: want filter and transformation old → new, and auth named", code.Changes)
			}

			if strings.Contains(w.logs.String(), "audit record written after the change") {
				t.Error("an op changed state outside a transaction, so its audit record was not atomic with it (see the log)")
			}

			// A failed op leaves no record.
			n := len(auditRecords(t, w.h.DB))
			bad := w.rest(w.op("webhooks.update"), alice, "", map[string]any{"id": w.bob.endpoint, "description": "x"})
			bad2 := w.rest(w.op("webhooks.create"), alice, "", map[string]any{"url": "ftp://nowhere", "event_types": []string{"*"}})
			if bad.code == "" || bad2.code == "" || len(auditRecords(t, w.h.DB)) != n {
				t.Errorf("failed ops (%s, %s) changed the audit log from %d records to %d", bad, bad2, n, len(auditRecords(t, w.h.DB)))
			}

			// Over MCP, the actor says so.
			if r := w.mcp(w.op("event_types.put"), alice, "", map[string]any{"name": "alice.mcp", "exposure": "webhook"}); r.code != "" {
				t.Fatal(r)
			}
			if rec := auditRecords(t, w.h.DB)[0]; rec.Actor.Kind != audit.KindMCP || rec.Actor.ID != keyID(alice) || rec.Actor.Remote == "" || rec.ResourceID != "alice.mcp" {
				t.Errorf("MCP record %+v", rec)
			}

			// No secret in any record.
			dump := auditDump(t, w.h.DB)
			for _, sec := range secrets {
				if sec == "" {
					t.Fatal("a secret the test made was empty")
				}
				if tok := sec[strings.LastIndex(sec, "/")+1:]; strings.Contains(dump, tok) {
					t.Errorf("the audit log holds a secret (%.10s…)", tok)
				}
			}

			// Owners see their own; operators everyone's.
			var page struct {
				Data []audit.Record
				Next string
			}
			_ = json.Unmarshal(w.must(w.rest(w.op("audit.list"), alice, "", map[string]any{"limit": 500})).body, &page)
			if len(page.Data) == 0 {
				t.Fatal("alice sees no records")
			}
			for _, r := range page.Data {
				if r.OwnerID != "alice" {
					t.Errorf("alice sees a record of %q: %+v", r.OwnerID, r)
				}
			}
			_ = json.Unmarshal(w.must(w.rest(w.op("audit.list"), w.operator, "", map[string]any{"limit": 500})).body, &page)
			owners := map[string]bool{}
			for _, r := range page.Data {
				owners[r.OwnerID] = true
			}
			if !owners["alice"] || !owners["bob"] || !owners["carol"] {
				t.Errorf("the operator sees the records of %v, want alice, bob and carol", owners)
			}

			// Filters and pages.
			_ = json.Unmarshal(w.must(w.rest(w.op("audit.list"), alice, "", map[string]any{"op": "grants.update"})).body, &page)
			if len(page.Data) != 1 || page.Data[0].Op != "grants.update" {
				t.Errorf("op filter: %+v", page.Data)
			}
			seen := map[string]bool{}
			before := ""
			for pages := 0; pages < 20; pages++ {
				args := map[string]any{"limit": 3, "resource": "endpoint"}
				if before != "" {
					args["before"] = before
				}
				page.Data, page.Next = nil, ""
				_ = json.Unmarshal(w.must(w.rest(w.op("audit.list"), alice, "", args)).body, &page)
				for _, r := range page.Data {
					if seen[r.ID] || r.Resource != "endpoint" {
						t.Fatalf("page %d: record %s twice or not an endpoint's", pages, r.ID)
					}
					seen[r.ID] = true
				}
				if page.Next == "" {
					break
				}
				before = page.Next
			}
			if len(seen) != 14 { // create, update ×2, rotate, expire, send_test, redeliver, retry_now, recover, delete; the broker's create; the polling endpoint's create, rotate_poll_token, poll_seek
				t.Errorf("alice's endpoint records over the pages: %d, want 14", len(seen))
			}
			future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
			_ = json.Unmarshal(w.must(w.rest(w.op("audit.list"), alice, "", map[string]any{"since": future})).body, &page)
			if len(page.Data) != 0 {
				t.Errorf("since an hour ahead: %d records", len(page.Data))
			}
			if r := w.rest(w.op("audit.list"), alice, "", map[string]any{"since": "yesterday"}); r.status != http.StatusUnprocessableEntity {
				t.Errorf("since=yesterday: %s, want 422", r)
			}
			if r := w.rest(w.op("audit.list"), alice, "", map[string]any{"before": "bogus"}); r.status != http.StatusUnprocessableEntity || !strings.Contains(r.String(), "aud_") {
				t.Errorf("before=bogus: %s, want 422 naming the aud_ id it takes", r)
			}
		})
	}
}

func auditRecords(t *testing.T, db *store.DB) []*audit.Record {
	t.Helper()
	rs, err := db.Q().ListAudit(context.Background(), store.AuditFilter{AllOwners: true, Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// auditDump is every record's every column as text.
func auditDump(t *testing.T, db *store.DB) string {
	t.Helper()
	b, err := json.Marshal(auditRecords(t, db))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// findRecords is every record of op, newest first.
func findRecords(rs []*audit.Record, op string) []*audit.Record {
	var out []*audit.Record
	for _, r := range rs {
		if r.Op == op {
			out = append(out, r)
		}
	}
	return out
}

// hasChange reports whether r changed field (from old to new, when given).
func hasChange(r *audit.Record, field string, was, now any) bool {
	for _, c := range r.Changes {
		if c.Field == field && (was == nil || c.Old == was || c.Old == nil && was == "") && (now == nil || c.New == now) {
			return true
		}
	}
	return false
}
