package ops_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/ops"
	"github.com/hookd/hookd/internal/owner"
)

// access is, per op, who may call it (the least role, whether it acts on
// one owner) and arguments that succeed for alice in the world. Every op
// of Ops() must have a row: a new op without one fails TestAccessDeclared.
//
// The rows run in this order: the recovery first, while ep's two
// deliveries are delivered and nothing else is (send_test, resend and
// redeliver add and move deliveries).
var access = []struct {
	name   string
	role   owner.Role
	scoped bool
	args   func(w *world) string
}{
	{"webhooks.recover", owner.Admin, true, func(w *world) string {
		return `{"id":"` + w.ep + `","since":"` + time.Now().UTC().Add(-time.Hour).Format(time.RFC3339) + `","states":["delivered"]}`
	}},
	{"webhooks.recovery", owner.Admin, true, func(w *world) string { return fmt.Sprintf(`{"id":%q,"task_id":%d}`, w.ep, w.task) }},
	{"webhooks.export_page", owner.Admin, true, func(w *world) string { return `{"id":"` + w.ep + `","state":"all","limit":1}` }},
	{"webhooks.list", owner.Admin, true, nil},
	{"webhooks.create", owner.Admin, true, func(w *world) string {
		return `{"url":"` + w.receiver.URL + `/new","event_types":["invoice.*"]}`
	}},
	{"webhooks.get", owner.Admin, true, func(w *world) string { return ref(w.ep) }},
	{"webhooks.update", owner.Admin, true, func(w *world) string { return `{"id":"` + w.ep + `","description":"alice's"}` }},
	{"webhooks.delete", owner.Admin, true, func(w *world) string { return ref(w.epDelete) }},
	{"webhooks.send_test", owner.Admin, true, func(w *world) string { return ref(w.ep) }},
	{"webhooks.test_filter", owner.Admin, true, func(w *world) string {
		return `{"filter":"data.n == 1","event_type":"invoice.paid","data":{"n":1}}`
	}},
	{"webhooks.test_transformation", owner.Admin, true, func(w *world) string {
		return `{"transformation":"function handler(w) { return w }","event_type":"invoice.paid","data":{"n":1}}`
	}},
	{"webhooks.deliveries", owner.Admin, true, func(w *world) string { return ref(w.ep) }},
	{"webhooks.redeliver", owner.Admin, true, func(w *world) string { return ref(w.ep) }},
	{"webhooks.event_types", owner.Admin, true, nil},
	{"webhooks.rotate_secret", owner.Admin, true, func(w *world) string { return ref(w.ep) }},
	{"webhooks.expire_old_secrets", owner.Admin, true, func(w *world) string { return ref(w.ep) }},
	{"webhooks.rotate_poll_token", owner.Admin, true, func(w *world) string { return ref(w.poll) }},
	{"webhooks.poll", owner.Admin, true, func(w *world) string { return ref(w.poll) }},
	{"webhooks.poll_seek", owner.Admin, true, func(w *world) string {
		return `{"id":"` + w.poll + `","at":"` + time.Now().UTC().Add(-time.Hour).Format(time.RFC3339) + `"}`
	}},
	{"webhooks.retry_now", owner.Admin, true, func(w *world) string { return ref(w.ep) }},
	{"grants.list", owner.Admin, true, nil},
	{"grants.get", owner.Admin, true, func(w *world) string { return ref(w.grant) }},
	{"grants.create", owner.Admin, true, func(*world) string { return `{"allow":["wiki://alice/x/*"],"deny":["wiki://alice/x/secret"]}` }},
	{"grants.update", owner.Admin, true, func(w *world) string { return `{"id":"` + w.grant + `","published_only":true}` }},
	{"grants.revoke", owner.Admin, true, func(w *world) string { return ref(w.grantRevoke) }},
	{"grants.delete", owner.Admin, true, func(w *world) string { return ref(w.grantDel) }},
	{"event_types.put", owner.Admin, true, func(*world) string { return `{"name":"order.shipped","exposure":"webhook"}` }},
	{"event_types.get", owner.Admin, true, func(*world) string { return `{"name":"invoice.paid"}` }},
	{"event_types.list", owner.Admin, true, nil},
	{"events.publish", owner.Publisher, true, func(*world) string { return `{"type":"invoice.paid","data":{"n":2}}` }},
	{"events.publish_batch", owner.Publisher, true, func(*world) string { return `{"events":[{"type":"invoice.paid"},{"type":"invoice.paid"}]}` }},
	{"events.get", owner.Admin, true, func(w *world) string { return ref(w.event) }},
	{"events.list", owner.Admin, true, nil},
	{"events.resend", owner.Admin, true, func(w *world) string { return ref(w.event) }},
	{"owners.list", owner.Operator, false, nil},
	{"owners.create", owner.Operator, false, func(*world) string { return `{"id":"carol"}` }},
	{"owners.get", owner.Operator, false, func(*world) string { return ref("alice") }},
	{"owners.update", owner.Operator, false, func(*world) string { return `{"id":"bob","attributes":{"locale":"zh-CN"}}` }},
	{"owners.delete", owner.Operator, false, func(*world) string { return ref("doomed") }},
	{"owners.in_flight", owner.Operator, false, nil},
	{"api_keys.list", owner.Admin, false, nil},
	{"api_keys.create", owner.Admin, false, func(*world) string { return `{"role":"publisher"}` }},
	{"api_keys.revoke", owner.Admin, false, func(w *world) string { return ref(w.keyRevoke) }},
	{"webhooks.activity", owner.Admin, true, nil},
	{"webhooks.stats", owner.Admin, true, func(w *world) string { return ref(w.ep) }},
	{"webhooks.delivery", owner.Admin, true, func(w *world) string { return `{"id":"` + w.ep + `","delivery_id":"` + w.delivery + `"}` }},
	{"tasks.get", owner.Admin, true, func(w *world) string { return fmt.Sprintf(`{"job":%d}`, w.jobNow()) }},
	{"portal.create_link", owner.Admin, true, func(*world) string { return `{"ttl":"2h","features":["endpoints"],"read_only":true}` }},
	{"portal.revoke_sessions", owner.Admin, true, nil},
	{"portal.get_branding", owner.Admin, true, nil},
	{"portal.update_branding", owner.Admin, true, func(*world) string { return `{"title":"Alice's hooks","accent":"#0a7d53"}` }},
	{"audit.list", owner.Admin, false, nil},
}

func ref(id string) string { return `{"id":"` + id + `"}` }

// TestAccessDeclared: every op has exactly one row of access, and declares
// the role and owner scope the row says; only a single publish confirms
// its caller's key itself; an owner-bound key may name an owner exactly
// where it may call the op.
func TestAccessDeclared(t *testing.T) {
	rows := map[string]int{}
	for i, r := range access {
		if _, dup := rows[r.name]; dup {
			t.Errorf("access has two rows for %s", r.name)
		}
		rows[r.name] = i
	}
	list := (&ops.Service{}).Ops()
	for _, op := range list {
		i, ok := rows[op.Name]
		if !ok {
			t.Errorf("op %s has no row in access: say who may call it", op.Name)
			continue
		}
		delete(rows, op.Name)
		r := access[i]
		if op.Role != r.role || op.OwnerScoped != r.scoped {
			t.Errorf("%s needs role %s, owner-scoped %v; access says %s, %v", op.Name, op.Role, op.OwnerScoped, r.role, r.scoped)
		}
		if op.ConfirmsKey != (op.Name == "events.publish") {
			t.Errorf("%s: ConfirmsKey %v; only events.publish confirms its key in its own transaction", op.Name, op.ConfirmsKey)
		}
		if op.TakesOwner() != (op.Role != owner.Operator) {
			t.Errorf("%s: TakesOwner %v for role %s", op.Name, op.TakesOwner(), op.Role)
		}
	}
	for name := range rows {
		t.Errorf("access has a row for %s, which is no op", name)
	}
}

// verdict is what Call answers p for op before running it: "" when it
// runs the op.
func verdict(op *ops.Op, p ops.Principal) apperr.Code {
	switch {
	case !p.Role.Allows(op.Role):
		return apperr.Forbidden
	case op.OwnerScoped && p.OwnerID == "":
		return apperr.Invalid
	}
	return ""
}

// TestCallAuthorizes walks every op with each kind of caller: no role, a
// publisher, an admin and an operator naming no owner are refused (403 for
// a role below the op's, 422 for an operator that must name the owner) with
// arguments that would succeed, and nothing changes; a caller answered from
// the key cache runs only the op that confirms its key. Then each op runs
// for its least role (and an operator naming alice for the reads), with a
// result of its declared type.
func TestCallAuthorizes(t *testing.T) {
	t.Parallel()
	for _, backend := range dbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			w := newWorld(t, backend)
			ctx := context.Background()
			refusing := map[string]ops.Principal{
				"no role":              {KeyID: w.admin.KeyID, OwnerID: "alice"},
				"alice's publisher":    w.publisher,
				"alice's admin":        w.admin,
				"operator naming none": w.operator,
				"unconfirmed operator": {KeyID: w.operator.KeyID, Role: owner.Operator, OwnerID: "alice", KeyUnconfirmed: true},
			}
			before := w.snapshot()
			for _, r := range access {
				op := w.svc.Op(r.name)
				for who, p := range refusing {
					want := verdict(op, p)
					if want == "" && (!p.KeyUnconfirmed || op.ConfirmsKey) {
						continue // allowed (a single publish confirms the key itself): run below
					}
					_, err := op.Call(ctx, p, input(t, op, w.args(r.args)))
					switch want {
					case apperr.Forbidden:
						wantErr(t, r.name+" as "+who, err, apperr.Forbidden, op.Name+" needs a "+string(op.Role)+" key")
					case apperr.Invalid:
						wantErr(t, r.name+" as "+who, err, apperr.Invalid, "must name the owner to act on", "Hookd-Owner")
					default:
						wantErr(t, r.name+" as "+who, err, apperr.Internal)
					}
				}
			}
			if after := w.snapshot(); after != before {
				t.Fatalf("refused calls changed the store: %s", changed(before, after))
			}

			w.svc.SetRecoverInline(1) // webhooks.recover's two deliveries run as a task
			defer w.svc.SetRecoverInline(0)
			for _, r := range access {
				op := w.svc.Op(r.name)
				p := map[owner.Role]ops.Principal{owner.Publisher: w.publisher, owner.Admin: w.admin, owner.Operator: w.operator}[r.role]
				out, err := op.Call(ctx, p, input(t, op, w.args(r.args)))
				if err != nil {
					t.Errorf("%s as its least role %s: %v", r.name, r.role, err)
					continue
				}
				if got := fmt.Sprintf("%T", out); got != "*"+op.Out.String() {
					t.Errorf("%s answered a %s, declares %s", r.name, got, op.Out)
				}
				if rec, ok := out.(*ops.Recovered); ok {
					if w.task = rec.TaskID; w.task == 0 {
						t.Errorf("webhooks.recover of two deliveries with an inline bound of 1: %+v, want a task", rec)
					}
				}
				if op.Method == "GET" && r.scoped {
					asOperator := w.operator
					asOperator.OwnerID = "alice"
					if _, err := op.Call(ctx, asOperator, input(t, op, w.args(r.args))); err != nil {
						t.Errorf("%s as an operator naming alice: %v", r.name, err)
					}
				}
			}
			// A publish answered from the key cache confirms the key: a
			// live one publishes, the revoked one (api_keys.revoke above)
			// is refused.
			publish := w.svc.Op("events.publish")
			live := w.publisher
			live.KeyUnconfirmed = true
			if _, err := publish.Call(ctx, live, input(t, publish, `{"type":"invoice.paid"}`)); err != nil {
				t.Errorf("publish with a live unconfirmed key: %v", err)
			}
			revoked := ops.Principal{KeyID: w.keyRevoke, Role: owner.Admin, OwnerID: "alice", KeyUnconfirmed: true}
			_, err := publish.Call(ctx, revoked, input(t, publish, `{"type":"invoice.paid"}`))
			wantErr(t, "publish with a revoked unconfirmed key", err, apperr.Unauthorized, w.keyRevoke, "revoked")
		})
	}
}

// args renders a row's arguments ("" when it takes none).
func (w *world) args(f func(*world) string) string {
	if f == nil {
		return ""
	}
	return f(w)
}

// TestActAs: an operator acts on any existing owner it names; an
// owner-bound key names only its own, another owner (existing or not) is
// not found, as if it did not exist; naming none leaves the caller as is.
func TestActAs(t *testing.T) {
	t.Parallel()
	w := newWorld(t, dbtest.Backends()[0])
	ctx := context.Background()
	for _, c := range []struct {
		who   string
		p     ops.Principal
		names string
		owner string // acting on; "!" for not found
	}{
		{"operator", w.operator, "alice", "alice"},
		{"operator", w.operator, "bob", "bob"},
		{"operator", w.operator, "", ""},
		{"operator", w.operator, "nobody", "!"},
		{"alice's admin", w.admin, "alice", "alice"},
		{"alice's admin", w.admin, "", "alice"},
		{"alice's admin", w.admin, "bob", "!"},
		{"alice's admin", w.admin, "nobody", "!"},
		{"alice's publisher", w.publisher, "bob", "!"},
		{"alice's publisher", w.publisher, "alice", "alice"},
	} {
		got, err := w.svc.ActAs(ctx, c.p, c.names)
		what := fmt.Sprintf("%s naming %q", c.who, c.names)
		if c.owner == "!" {
			wantErr(t, what, err, apperr.NotFound, fmt.Sprintf("owner %q not found", c.names))
			continue
		}
		if err != nil || got.OwnerID != c.owner || got.Role != c.p.Role || got.KeyID != c.p.KeyID {
			t.Errorf("%s: %+v %v, want acting on %q", what, got, err, c.owner)
		}
	}
}
