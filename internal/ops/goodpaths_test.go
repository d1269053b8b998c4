package ops_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/audit"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/hookdtest"
	"github.com/hookd/hookd/internal/ops"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/profile"
	"github.com/hookd/hookd/internal/scope"
)

// clocked is the world's service on the same store, with its clock at
// *now: outputs that show the time are checked to the microsecond.
func (w *world) clocked(now *time.Time) *ops.Service {
	w.t.Helper()
	sealer, err := endpoint.NewSealer(hookdtest.MasterKey)
	if err != nil {
		w.t.Fatal(err)
	}
	return &ops.Service{DB: w.h.DB, Delivery: w.h.Delivery, Profiles: profile.Default(), Sealer: sealer, Jobs: w.h.Jobs,
		EgressAllow: w.svc.EgressAllow, DefaultProfile: "standard", Now: func() time.Time { return *now }}
}

func at(s *ops.Service, p ops.Principal, name, args string) (any, error) {
	op := s.Op(name)
	in := op.NewInput()
	if args != "" {
		if err := json.Unmarshal([]byte(args), in); err != nil {
			return nil, err
		}
	}
	return op.Call(context.Background(), p, in)
}

// TestGoodPaths: what each op family answers when the input is right, on
// both engines: defaults filled in, secrets shown once, times from the
// service's clock, pages and cursors that page on.
func TestGoodPaths(t *testing.T) {
	t.Parallel()
	for _, backend := range dbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			w := newWorld(t, backend)
			now := time.Now().UTC().Truncate(time.Microsecond)
			s := w.clocked(&now)
			must := func(p ops.Principal, name, args string) any {
				t.Helper()
				out, err := at(s, p, name, args)
				if err != nil {
					t.Fatalf("%s %s: %v", name, args, err)
				}
				return out
			}
			admin, operator := w.admin, w.operator

			t.Run("endpoints", func(t *testing.T) {
				ep := must(admin, "webhooks.create", `{"url":"`+w.receiver.URL+`/x","event_types":[" invoice.paid ","invoice.*"],"description":"d"}`).(*ops.EndpointView)
				if !strings.HasPrefix(ep.Secret, "whsec_") || ep.PollToken != "" || !ep.Enabled || ep.State != endpoint.Enabled ||
					ep.MaxInFlight != 1 || ep.Headers == nil || ep.Signature != endpoint.SignHMAC || !ep.CreatedAt.Equal(now) ||
					strings.Join(ep.EventTypes, ",") != "invoice.paid,invoice.*" || !strings.HasPrefix(ep.ID, "ep_") {
					t.Errorf("create: %+v (secret %q)", ep, ep.Secret)
				}
				got := must(admin, "webhooks.get", ref(ep.ID)).(*ops.EndpointView)
				b, _ := json.Marshal(got)
				if got.Secret != "" || strings.Contains(string(b), ep.Secret) || strings.Contains(string(b), "whsec_") {
					t.Errorf("get shows the secret: %s", b)
				}
				list := must(admin, "webhooks.list", "").(*ops.EndpointList)
				lb, _ := json.Marshal(list)
				if len(list.Data) != 4 || strings.Contains(string(lb), "whsec_") {
					t.Errorf("list of 4 endpoints without secrets: %s", lb)
				}
				ed := must(admin, "webhooks.create", `{"url":"`+w.receiver.URL+`/ed","event_types":["invoice.paid"],"signature":"ed25519"}`).(*ops.EndpointView)
				if ed.Secret != "" || !strings.HasPrefix(ed.Signing.PublicKey, "whpk_") {
					t.Errorf("ed25519: secret %q, public key %q: want none and a whpk_", ed.Secret, ed.Signing.PublicKey)
				}
				poll := must(admin, "webhooks.create", `{"kind":"poll","event_types":["invoice.paid"]}`).(*ops.EndpointView)
				if poll.URL != "" || poll.Kind != endpoint.KindPoll || !strings.HasPrefix(poll.PollToken, "hkp_") || len(poll.PollToken) != 4+43 {
					t.Errorf("poll: %+v token %q", poll.Endpoint, poll.PollToken)
				}

				// Disabling says who; enabling clears it.
				now = now.Add(time.Minute)
				off := must(admin, "webhooks.update", `{"id":"`+ep.ID+`","enabled":false}`).(*ops.EndpointView)
				if off.Enabled || off.DisabledReason != "disabled by owner" || off.State != endpoint.Disabled || !off.UpdatedAt.Equal(now) || off.Secret != "" {
					t.Errorf("disable: %+v", off)
				}
				on := must(admin, "webhooks.update", `{"id":"`+ep.ID+`","enabled":true,"description":"kept"}`).(*ops.EndpointView)
				if !on.Enabled || on.DisabledReason != "" || on.Description != "kept" || strings.Join(on.EventTypes, ",") != "invoice.paid,invoice.*" {
					t.Errorf("enable: %+v", on)
				}
				// A switch to both keeps the secret (none shown) and adds a public key.
				both := must(admin, "webhooks.update", `{"id":"`+ep.ID+`","signature":"both"}`).(*ops.EndpointView)
				if both.Secret != "" || both.Signature != endpoint.SignBoth || !strings.HasPrefix(both.Signing.PublicKey, "whpk_") {
					t.Errorf("hmac → both: secret %q, %+v", both.Secret, both.Signing)
				}
				// ed25519 → hmac makes a secret, shown this once; the old key signs a day.
				hm := must(admin, "webhooks.update", `{"id":"`+ed.ID+`","signature":"hmac"}`).(*ops.EndpointView)
				if !strings.HasPrefix(hm.Secret, "whsec_") || hm.Signing.OldKeysExpireAt == nil || !hm.Signing.OldKeysExpireAt.Equal(now.Add(24*time.Hour)) {
					t.Errorf("ed25519 → hmac: secret %q, %+v", hm.Secret, hm.Signing)
				}

				// Grant status follows the grant.
				g := must(admin, "grants.create", `{"allow":["*"]}`).(*ops.GrantView)
				withGrant := must(admin, "webhooks.update", `{"id":"`+ep.ID+`","grant_id":"`+g.ID+`"}`).(*ops.EndpointView)
				must(admin, "grants.revoke", ref(g.ID))
				revoked := must(admin, "webhooks.get", ref(ep.ID)).(*ops.EndpointView)
				must(admin, "grants.delete", ref(g.ID))
				deleted := must(admin, "webhooks.get", ref(ep.ID)).(*ops.EndpointView)
				if withGrant.GrantStatus != scope.GrantActive || revoked.GrantStatus != scope.GrantRevoked || deleted.GrantStatus != scope.GrantDeleted {
					t.Errorf("grant status: %q, %q, %q; want active, revoked, deleted", withGrant.GrantStatus, revoked.GrantStatus, deleted.GrantStatus)
				}

				must(admin, "webhooks.delete", ref(ed.ID))
				if _, err := at(s, admin, "webhooks.get", ref(ed.ID)); err == nil {
					t.Error("a deleted endpoint is still there")
				}
				types := must(admin, "webhooks.event_types", "").(*ops.EventTypeList)
				names := []string{}
				for _, ty := range types.Data {
					names = append(names, ty.Name)
				}
				if j := strings.Join(names, ","); !strings.Contains(j, "invoice.paid") || !strings.Contains(j, "webhook.test") {
					t.Errorf("subscribable types: %s", j)
				}
			})

			t.Run("deliveries", func(t *testing.T) {
				var out any
				var err error
				page := must(admin, "webhooks.deliveries", `{"id":"`+w.ep+`","limit":1}`).(*ops.DeliveryList)
				if len(page.Data) != 1 || page.Next != page.Data[0].ID || page.Data[0].JobURL == "" {
					t.Fatalf("page of 1: %+v", page)
				}
				rest := must(admin, "webhooks.deliveries", `{"id":"`+w.ep+`","before":"`+page.Next+`"}`).(*ops.DeliveryList)
				if len(rest.Data) != 1 || rest.Data[0].ID == page.Data[0].ID || rest.Next != "" {
					t.Errorf("second page: %+v", rest)
				}
				if f := must(admin, "webhooks.deliveries", `{"id":"`+w.ep+`","state":"failed"}`).(*ops.DeliveryList); len(f.Data) != 0 {
					t.Errorf("failed ones: %+v", f.Data)
				}
				op := s.Op("webhooks.deliveries")
				in := &ops.DeliveriesIn{ID: w.ep, State: "delivered"}
				out, err = op.Call(ops.WithBasePath(context.Background(), "/webhooks"), admin, in)
				if err != nil {
					t.Fatal(err)
				}
				for _, d := range out.(*ops.DeliveryList).Data {
					if !strings.HasPrefix(d.JobURL, "/webhooks/admin/tasks?job=") {
						t.Errorf("job url under /webhooks: %q", d.JobURL)
					}
				}
				dd := must(admin, "webhooks.delivery", `{"id":"`+w.ep+`","delivery_id":"`+w.delivery+`"}`).(*ops.DeliveryDetail)
				hb, _ := json.Marshal(dd.Headers)
				if dd.Profile != "standard" || !strings.Contains(string(dd.Envelope), w.event) || strings.Contains(strings.ToLower(string(hb)), "signature") ||
					!strings.Contains(string(hb), `{"name":"Webhook-Id","value":"`+w.event+`"}`) {
					t.Errorf("delivery detail: profile %q envelope %s headers %s", dd.Profile, dd.Envelope, hb)
				}
				// The job's arguments name the delivery it was made for; a job
				// that drained the endpoint's next delivery too is that one's
				// job as well, so the task may name either of the two.
				job := w.jobNow()
				task := must(admin, "tasks.get", `{"job":`+jsonInt(job)+`}`).(*ops.TaskView)
				d, err := w.h.DB.Q().GetDelivery(context.Background(), "alice", w.ep, task.DeliveryID)
				if err != nil || d.EventID != task.EventID || d.JobID != job || task.ID != job || task.EndpointID != w.ep || task.Kind != "webhook.deliver" || task.Errors == nil {
					t.Errorf("task: endpoint %s event %s delivery %s errors %v; want %s %s %s", task.EndpointID, task.EventID, task.DeliveryID, task.Errors, w.ep, w.event, w.delivery)
				}
				r := must(admin, "webhooks.redeliver", ref(w.ep)).(*ops.Redelivered)
				if r.Redelivered != 0 || !strings.Contains(r.Note, "retry_now") {
					t.Errorf("redeliver with none failed: %+v", r)
				}
				rn := must(admin, "webhooks.retry_now", ref(w.ep)).(*ops.RetriedNow)
				if rn.RetriedNow != 0 || !strings.Contains(rn.Note, "redeliver") {
					t.Errorf("retry_now with none waiting: %+v", rn)
				}
				st := must(admin, "webhooks.stats", ref(w.ep)).(*ops.EndpointStats)
				first := now.Truncate(time.Hour).Add(-23 * time.Hour)
				delivered := 0
				for _, h := range st.Hours {
					delivered += h.Delivered
				}
				if len(st.Hours) != 24 || !st.Hours[0].Start.Equal(first) || !st.Hours[23].Start.Equal(now.Truncate(time.Hour)) || delivered != 2 {
					t.Errorf("stats: %d hours from %v, %d delivered; want 24 from %v, 2", len(st.Hours), st.Hours[0].Start, delivered, first)
				}
				act := must(admin, "webhooks.activity", "").(*ops.ActivityList)
				if !act.Since.Equal(now.Add(-24 * time.Hour)) {
					t.Errorf("activity since %v, want %v", act.Since, now.Add(-24*time.Hour))
				}
				for _, a := range act.Data {
					if a.EndpointID == w.ep && (a.Deliveries != 2 || a.Failures != 0 || a.Last == nil) {
						t.Errorf("ep's activity: %+v", a)
					}
				}
				rec := must(admin, "webhooks.recover", `{"id":"`+w.ep+`","since":"`+now.Add(-time.Hour).Format(time.RFC3339)+`","states":[" delivered ","delivered"]}`).(*ops.Recovered)
				if rec.Recovered != 2 || rec.Total != 2 || rec.TaskID != 0 {
					t.Errorf("recover of ep's two delivered: %+v", rec)
				}
				none := must(admin, "webhooks.recover", `{"id":"`+w.ep+`","since":"`+now.Add(-time.Hour).Format(time.RFC3339)+`"}`).(*ops.Recovered)
				if none.Total != 0 || none.Note == "" {
					t.Errorf("recover of no failed one: %+v", none)
				}
			})

			t.Run("polling", func(t *testing.T) {
				page := must(admin, "webhooks.poll", ref(w.poll)).(*ops.PollPage)
				if len(page.Data) != 2 || page.Next != page.Data[1].Cursor || page.Data[1].EventID != w.event || page.Data[0].Headers["webhook-signature"] == "" {
					t.Fatalf("poll: %+v", page)
				}
				empty := must(admin, "webhooks.poll", `{"id":"`+w.poll+`","after":"`+page.Next+`"}`).(*ops.PollPage)
				if len(empty.Data) != 0 || empty.Next != page.Next {
					t.Errorf("poll after the last: %+v", empty)
				}
				one := must(admin, "webhooks.poll", `{"id":"`+w.poll+`","limit":1}`).(*ops.PollPage)
				if len(one.Data) != 1 || one.Next != page.Data[0].Cursor {
					t.Errorf("poll limit 1: %+v", one)
				}
				pos := must(admin, "webhooks.poll_seek", `{"id":"`+w.poll+`","cursor":"`+page.Data[0].Cursor+`"}`).(*ops.Position)
				if pos.Cursor != page.Data[0].Cursor {
					t.Errorf("seek to the first: %+v", pos)
				}
				acked := must(admin, "webhooks.poll", ref(w.poll)).(*ops.PollPage)
				if len(acked.Data) != 1 || acked.Data[0].EventID != w.event {
					t.Errorf("poll after the acknowledged first: %+v", acked)
				}
				back := must(admin, "webhooks.poll_seek", `{"id":"`+w.poll+`","event_id":"`+page.Data[0].EventID+`"}`).(*ops.Position)
				if again := must(admin, "webhooks.poll", ref(w.poll)).(*ops.PollPage); len(again.Data) != 2 || back.Cursor == pos.Cursor {
					t.Errorf("replay from the first event: %s, then %d messages", back.Cursor, len(again.Data))
				}
				tok := must(admin, "webhooks.rotate_poll_token", ref(w.poll)).(*ops.PollTokenView)
				if tok.ID != w.poll || !strings.HasPrefix(tok.PollToken, "hkp_") {
					t.Errorf("rotate_poll_token: %+v", tok)
				}
				e, err := s.PollConsumer(context.Background(), "Bearer "+tok.PollToken, w.poll)
				if err != nil || e.ID != w.poll {
					t.Errorf("the new token reads %v %v", e, err)
				}
			})

			t.Run("signing", func(t *testing.T) {
				ep := must(admin, "webhooks.create", `{"url":"`+w.receiver.URL+`/rot","event_types":["invoice.paid"]}`).(*ops.EndpointView)
				rot := must(admin, "webhooks.rotate_secret", `{"id":"`+ep.ID+`","overlap":"90m"}`).(*ops.EndpointView)
				if !strings.HasPrefix(rot.Secret, "whsec_") || rot.Secret == ep.Secret || rot.Signing.OldKeysExpireAt == nil || !rot.Signing.OldKeysExpireAt.Equal(now.Add(90*time.Minute)) {
					t.Errorf("rotate with 90m: %q %+v", rot.Secret, rot.Signing)
				}
				exp := must(admin, "webhooks.expire_old_secrets", ref(ep.ID)).(*ops.EndpointView)
				if exp.Signing.OldKeysExpireAt != nil || exp.Secret != "" {
					t.Errorf("expire_old_secrets: %+v", exp.Signing)
				}
				def := must(admin, "webhooks.rotate_secret", ref(ep.ID)).(*ops.EndpointView)
				if def.Signing.OldKeysExpireAt == nil || !def.Signing.OldKeysExpireAt.Equal(now.Add(24*time.Hour)) {
					t.Errorf("rotate by default: %+v, want old keys to %v", def.Signing, now.Add(24*time.Hour))
				}
			})

			t.Run("grants", func(t *testing.T) {
				exp := now.Add(time.Hour)
				g := must(admin, "grants.create", `{"allow":["wiki://a/*"],"deny":["wiki://a/x"],"expires_at":"`+exp.Format(time.RFC3339Nano)+`"}`).(*ops.GrantView)
				if g.Status != scope.GrantActive || !g.CreatedAt.Equal(now) || !strings.HasPrefix(g.ID, "grt_") {
					t.Errorf("create: %+v", g)
				}
				first := now
				r1 := must(admin, "grants.revoke", ref(g.ID)).(*ops.GrantView)
				now = now.Add(time.Minute)
				r2 := must(admin, "grants.revoke", ref(g.ID)).(*ops.GrantView)
				if r1.Status != scope.GrantRevoked || r2.RevokedAt == nil || !r2.RevokedAt.Equal(first) {
					t.Errorf("revoke twice: %+v then %+v, want revoked at %v both times", r1.RevokedAt, r2.RevokedAt, first)
				}
				u := must(admin, "grants.update", `{"id":"`+w.grant+`","published_only":true,"description":"pub"}`).(*ops.GrantView)
				if !u.PublishedOnly || u.Description != "pub" || strings.Join(u.Allow, ",") != "wiki://alice/*" || !u.UpdatedAt.Equal(now) {
					t.Errorf("update keeps what it was not given: %+v", u)
				}
				now2 := now
				now = exp.Add(time.Second)
				if got := must(admin, "grants.get", ref(g.ID)).(*ops.GrantView); got.Status != scope.GrantRevoked {
					t.Errorf("a revoked grant past its expiry: %s", got.Status)
				}
				fresh := must(admin, "grants.create", `{"allow":["*"],"expires_at":"`+now.Add(time.Second).Format(time.RFC3339Nano)+`"}`).(*ops.GrantView)
				now = now.Add(2 * time.Second)
				if got := must(admin, "grants.get", ref(fresh.ID)).(*ops.GrantView); got.Status != scope.GrantExpired {
					t.Errorf("past its expiry: %s, want expired", got.Status)
				}
				now = now2
				if l := must(admin, "grants.list", "").(*ops.GrantList); len(l.Data) != 5 {
					t.Errorf("list: %d grants, want 5", len(l.Data))
				}
			})

			t.Run("event types and events", func(t *testing.T) {
				ty := must(admin, "event_types.put", `{"name":"order.shipped","schema":{"type":"object","required":["id"]},"example":{"id":"o1"}}`).(*event.Type)
				if ty.Exposure != event.Internal || ty.OwnerID != "alice" {
					t.Errorf("put with no exposure: %+v, want internal", ty)
				}
				if got := must(admin, "event_types.get", `{"name":"order.shipped"}`).(*event.Type); string(got.Example) != `{"id":"o1"}` {
					t.Errorf("get: %+v", got)
				}
				if _, err := at(s, w.publisher, "events.publish", `{"type":"order.shipped","data":{"n":1}}`); err == nil {
					t.Error("a publish against the type's schema succeeded")
				}
				pub := must(w.publisher, "events.publish", `{"type":"never.registered","subject":"thing://1"}`).(*delivery.Published)
				if ev := must(admin, "events.get", ref(pub.ID)).(*event.Event); ev.Type != "never.registered" {
					t.Errorf("an unregistered type is stored: %+v", ev)
				}
				dup := must(w.publisher, "events.publish", `{"type":"invoice.paid","idempotency_key":"k1"}`).(*delivery.Published)
				again := must(w.publisher, "events.publish", `{"type":"invoice.paid","idempotency_key":"k1"}`).(*delivery.Published)
				if again.ID != dup.ID || !again.Duplicate || dup.Duplicate || dup.Exposure != event.Webhook {
					t.Errorf("same idempotency key: %+v then %+v", dup, again)
				}
				batch := must(w.publisher, "events.publish_batch", `{"events":[{"type":"invoice.paid","subject":"invoice://b1"},{"type":"order.shipped","data":{"id":"o2"}}]}`).(*ops.BatchOut)
				if len(batch.Data) != 2 || batch.Data[0].Exposure != event.Webhook || batch.Data[1].Exposure != event.Internal {
					t.Errorf("batch: %+v", batch.Data)
				}
				all := must(admin, "events.list", "").(*ops.EventList)
				if len(all.Data) != 6 || all.NextCursor != "" || all.Data[0].ID != batch.Data[1].ID {
					t.Fatalf("list: %d events, next %q, first %v; want 6, none, the batch's last", len(all.Data), all.NextCursor, all.Data[0])
				}
				p1 := must(admin, "events.list", `{"limit":4}`).(*ops.EventList)
				p2 := must(admin, "events.list", `{"limit":4,"cursor":"`+p1.NextCursor+`"}`).(*ops.EventList)
				if len(p1.Data) != 4 || p1.NextCursor == "" || len(p2.Data) != 2 || p2.NextCursor != "" || p2.Data[1].ID != all.Data[5].ID {
					t.Errorf("pages of 4: %d (next %q), then %d (next %q)", len(p1.Data), p1.NextCursor, len(p2.Data), p2.NextCursor)
				}
				inv := must(admin, "events.list", `{"type":"invoice.*","subject_prefix":"invoice://"}`).(*ops.EventList)
				if len(inv.Data) != 3 {
					t.Errorf("invoice.* about invoice://: %d, want 3 (the world's two and the batch's)", len(inv.Data))
				}
				win := must(admin, "events.list", `{"since":"`+now.Add(time.Hour).Format(time.RFC3339)+`","until":"`+now.Add(2*time.Hour).Format(time.RFC3339)+`"}`).(*ops.EventList)
				if len(win.Data) != 0 {
					t.Errorf("an hour ahead: %d events", len(win.Data))
				}
				res := must(admin, "events.resend", ref(w.event)).(*delivery.Resent)
				rb, _ := json.Marshal(res)
				if !strings.Contains(string(rb), w.ep) {
					t.Errorf("resend to the endpoints it went to: %s", rb)
				}
				if l := must(admin, "event_types.list", "").(*ops.EventTypeList); len(l.Data) < 3 {
					t.Errorf("types: %d", len(l.Data))
				}
			})

			t.Run("owners and keys", func(t *testing.T) {
				o := must(operator, "owners.create", `{"id":"carol","attributes":{"locale":"zh-CN"}}`).(*owner.Owner)
				if o.Profile != "standard" || o.Attributes["locale"] != "zh-Hans" || !o.CreatedAt.Equal(now) {
					t.Errorf("create: %+v", o)
				}
				kw := must(operator, "owners.update", `{"id":"carol","profile":"kwork","attributes":{"app":"app_9","environment":"live"}}`).(*owner.Owner)
				if kw.Profile != "kwork" || kw.Attributes["app"] != "app_9" || kw.Attributes["locale"] != "" {
					t.Errorf("update to kwork (attributes replaced): %+v", kw)
				}
				list := must(operator, "owners.list", "").(*ops.OwnerList)
				if len(list.Data) != 5 {
					t.Errorf("owners: %d, want 5", len(list.Data))
				}
				must(operator, "owners.delete", ref("carol"))
				if _, err := at(s, operator, "owners.get", ref("carol")); err == nil {
					t.Error("carol is still there")
				}
				k := must(admin, "api_keys.create", `{"role":"publisher"}`).(*ops.NewKey)
				if k.Role != owner.Publisher || k.OwnerID != "alice" || k.Prefix != k.Secret[:8] || len(k.Secret) < 32 {
					t.Errorf("create key: %+v", k)
				}
				op := must(operator, "api_keys.create", `{"role":"operator"}`).(*ops.NewKey)
				if op.OwnerID != "" || op.Role != owner.Operator {
					t.Errorf("operator key: %+v", op)
				}
				keys := must(admin, "api_keys.list", "").(*ops.APIKeyList)
				kb, _ := json.Marshal(keys)
				if len(keys.Data) != 4 || strings.Contains(string(kb), k.Secret) || strings.Contains(string(kb), `"secret"`) {
					t.Errorf("list of alice's 4 keys without secrets: %s", kb)
				}
				ops0 := must(operator, "api_keys.list", "").(*ops.APIKeyList)
				if len(ops0.Data) != 2 {
					t.Errorf("an operator naming no owner lists the operator keys: %d, want 2", len(ops0.Data))
				}
				rv := must(admin, "api_keys.revoke", ref(k.ID)).(*owner.APIKey)
				if rv.RevokedAt == nil || !rv.RevokedAt.Equal(now) {
					t.Errorf("revoke: %+v", rv)
				}
				fl := must(operator, "owners.in_flight", "").(*ops.InFlightList)
				if !fl.At.Equal(now) || fl.Data == nil {
					t.Errorf("in_flight: %+v", fl)
				}
			})

			t.Run("portal", func(t *testing.T) {
				ctx := ops.WithBasePath(ops.WithOrigin(context.Background(), "https://hooks.example.com"), "/webhooks")
				op := s.Op("portal.create_link")
				out, err := op.Call(ctx, admin, &ops.CreatePortalLinkIn{TTL: "2h", Features: []string{"endpoints", "deliveries"}, Locale: "zh-CN", ReturnURL: "https://app.example.com/back"})
				if err != nil {
					t.Fatal(err)
				}
				l := out.(*ops.PortalLink)
				token, ok := strings.CutPrefix(l.URL, "https://hooks.example.com/webhooks/portal/")
				if !ok || len(token) != 43 || !l.ExpiresAt.Equal(now.Add(2*time.Hour)) {
					t.Errorf("link: %+v", l)
				}
				if n := dbtest.Count(t, w.h.DB, "SELECT count(*) FROM hookd_portal_links"); n != 1 {
					t.Errorf("%d links stored", n)
				}
				rv := must(admin, "portal.revoke_sessions", "").(*ops.PortalRevoked)
				if rv.Links != 1 || rv.Sessions != 0 {
					t.Errorf("revoke_sessions: %+v, want the one unused link spent", rv)
				}
				b := must(admin, "portal.get_branding", "").(*ops.Branding)
				if b.FrameOrigins == nil || b.Title != "" || b.Logo != nil {
					t.Errorf("no branding yet: %+v", b)
				}
				ub := must(admin, "portal.update_branding", `{"title":"Alice","accent":"#0a7d53","frame_origins":["https://app.example.com"," https://b.example.com:8443 "],"locale":"zh"}`).(*ops.Branding)
				if ub.Title != "Alice" || ub.Accent != "#0a7d53" || strings.Join(ub.FrameOrigins, ",") != "https://app.example.com,https://b.example.com:8443" || ub.Locale != "zh-Hans" {
					t.Errorf("update_branding: %+v", ub)
				}
				cleared := must(admin, "portal.update_branding", `{"title":"","frame_origins":[]}`).(*ops.Branding)
				if cleared.Title != "" || len(cleared.FrameOrigins) != 0 || cleared.Accent != "#0a7d53" {
					t.Errorf("clear title and origins, keep the accent: %+v", cleared)
				}
			})

			t.Run("audit", func(t *testing.T) {
				mine := must(admin, "audit.list", "").(*ops.AuditList)
				if len(mine.Data) == 0 {
					t.Fatal("alice has no audit records")
				}
				for _, r := range mine.Data {
					if r.OwnerID != "alice" {
						t.Errorf("alice's audit log shows %s's record %s", r.OwnerID, r.Op)
					}
				}
				all := must(operator, "audit.list", `{"limit":500}`).(*ops.AuditList)
				owners := map[string]bool{}
				for _, r := range all.Data {
					owners[r.OwnerID] = true
				}
				if !owners["alice"] || !owners["bob"] || !owners["kw"] {
					t.Errorf("an operator naming none sees every owner's: %v", owners)
				}
				one := must(admin, "audit.list", `{"limit":1,"op":"webhooks.create"}`).(*ops.AuditList)
				if len(one.Data) != 1 || one.Next != one.Data[0].ID || one.Data[0].Op != "webhooks.create" || one.Data[0].Actor.Kind != audit.KindAPIKey {
					t.Errorf("one webhooks.create record: %+v", one)
				}
				none := must(admin, "audit.list", `{"actor":"key_nobody"}`).(*ops.AuditList)
				if none.Data == nil || len(none.Data) != 0 || none.Next != "" {
					t.Errorf("no record of key_nobody: %+v", none)
				}
			})
		})
	}
}

func jsonInt(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
