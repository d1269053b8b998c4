package e2e_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/app"
	"github.com/hookd/hookd/internal/dbtest"
)

// standmeetEvents is one realistic, thin event of each of the standard profile's 39
// types (subject + ids, never a body), keyed by type. webhook.test is sent
// with send_test, the one way it is ever sent.
var standmeetEvents = map[string]struct{ subject, data string }{
	"corpus.note.changed":           {"wiki://software/project/standmeet/architecture", `{"op":"updated","note_id":"note_01","published":true,"was_published":true}`},
	"access_request.created":        {"access://requests/ar_1", `{"request_id":"ar_1"}`},
	"access_request.approved":       {"access://requests/ar_1", `{"request_id":"ar_1","code_id":"code_1"}`},
	"access_request.status_changed": {"access://requests/ar_2", `{"request_id":"ar_2","status":"declined"}`},
	"code.issued":                   {"access://codes/code_1", `{"code_id":"code_1"}`},
	"code.revoked":                  {"access://codes/code_1", `{"code_id":"code_1"}`},
	"code.redeemed":                 {"access://codes/code_2", `{"code_id":"code_2"}`},
	"conversation.started":          {"chat://conversations/cv_1", `{"conversation_id":"cv_1"}`},
	"conversation.message":          {"chat://conversations/cv_1", `{"conversation_id":"cv_1","message_id":"msg_1"}`},
	"conversation.pruned":           {"chat://conversations", `{"pruned":12}`},
	"ghost.accepted":                {"ghost://drafts/gd_1", `{"draft_id":"gd_1"}`},
	"booking.created":               {"booking://bk_1", `{"booking_id":"bk_1"}`},
	"booking.cancelled":             {"booking://bk_1", `{"booking_id":"bk_1"}`},
	"booking.rescheduled":           {"booking://bk_2", `{"booking_id":"bk_2"}`},
	"application.committed":         {"jobs://applications/ap_1", `{"application_id":"ap_1"}`},
	"jobs.fetched":                  {"jobs://sources/src_1", `{"source_id":"src_1","count":40}`},
	"writing.published":             {"writing://posts/hello-world", `{"post_id":"post_1"}`},
	"writing.unpublished":           {"writing://posts/hello-world", `{"post_id":"post_1"}`},
	"vault.imported":                {"vault://imports/im_1", `{"import_id":"im_1","notes":321}`},
	"microsite.build.settled":       {"site://ms_1/builds/b_7", `{"microsite_id":"ms_1","build_id":"b_7","ok":true}`},
	"page.promoted_live":            {"site://ms_1/pages/about", `{"microsite_id":"ms_1","page_id":"pg_1"}`},
	"page.rolled_back":              {"site://ms_1/pages/about", `{"microsite_id":"ms_1","page_id":"pg_1","version":3}`},
	"page.unpublished":              {"site://ms_1/pages/old", `{"microsite_id":"ms_1","page_id":"pg_2"}`},
	"microsite.store.doc_inserted":  {"site://ms_1/store/orders/o_1", `{"microsite_id":"ms_1","collection":"orders","doc_id":"o_1"}`},
	"api_key.issued":                {"keys://ak_1", `{"key_id":"ak_1"}`},
	"api_key.revoked":               {"keys://ak_1", `{"key_id":"ak_1"}`},
	"supplier.connected":            {"suppliers://openai", `{"supplier":"openai"}`},
	"supplier.disconnected":         {"suppliers://openai", `{"supplier":"openai"}`},
	"supplier.activated":            {"suppliers://anthropic", `{"supplier":"anthropic"}`},
	"block.installed":               {"blocks://calendar", `{"block":"calendar","version":"1.2.0"}`},
	"block.failed":                  {"blocks://calendar", `{"block":"calendar","reason":"timeout"}`},
	"gas.exhausted":                 {"gas://instance", `{"balance":0}`},
	"gas.refilled":                  {"gas://instance", `{"balance":5000}`},
	"instance.upgrade_requested":    {"instance://self", `{"to":"v0.1.77"}`},
	"owner.login":                   {"owner://self", `{"ip":"203.0.113.7"}`},
	"owner.email_changed":           {"owner://self", `{}`},
	"owner.recovery_requested":      {"owner://self", `{"ip":"203.0.113.8"}`},
	"ip_ban.added":                  {"security://bans/198.51.100.9", `{"ip":"198.51.100.9"}`},
}

func withStandmeet(c *app.Config) { c.Catalogs = []string{"standmeet"} }

// TestWebhookEventTypes is the standard profile's webhook-event-types e2e: each of the
// 39 types once (webhook.test through send_test, the only way it is sent);
// a "*" endpoint receives exactly those 39, each once. A type left
// internal reaches no endpoint, and the test event reaches only the
// endpoint it names.
func TestWebhookEventTypes(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend, setupOpts{mutate: withStandmeet})
		all, other := newReceiver(t), newReceiver(t)
		ep := b.endpoint(all.URL, "*")
		ep2 := b.endpoint(other.URL, "*")
		// Internal first: by the time the rest arrived, it had its chance.
		b.must(200, "PUT", "/api/admin/event_types/audit.login_attempt", map[string]string{"exposure": "internal"}, nil)
		var internal struct{ ID, Exposure string }
		b.must(202, "POST", "/api/v1/events", map[string]any{"type": "audit.login_attempt", "subject": "owner://self", "data": map[string]string{"ip": "203.0.113.7"}}, &internal)
		if internal.Exposure != "internal" {
			t.Fatalf("audit.login_attempt published as %q", internal.Exposure)
		}
		if len(standmeetEvents) != 38 {
			t.Fatalf("%d published types, want 38 (+ webhook.test)", len(standmeetEvents))
		}
		want := map[string]string{} // event id → type
		for typ, e := range standmeetEvents {
			var out struct{ ID string }
			b.must(202, "POST", "/api/v1/events", map[string]any{"type": typ, "subject": e.subject, "data": json.RawMessage(e.data)}, &out)
			want[out.ID] = typ
		}
		want[b.sendTestTo(ep.ID)] = "webhook.test"

		got := all.waitFor(t, 39, wait)
		seen := map[string]int{}
		for _, r := range got {
			ev := verify(t, ep.Secret, r)
			if want[ev.ID] != ev.Type {
				t.Errorf("received %s %s, which was not published as that", ev.Type, ev.ID)
			}
			seen[ev.Type]++
		}
		for _, typ := range append(keys(standmeetEvents), "webhook.test") {
			if seen[typ] != 1 {
				t.Errorf("%s received %d times, want once", typ, seen[typ])
			}
		}
		if len(seen) != 39 {
			t.Errorf("received %d distinct types, want 39: %v", len(seen), seen)
		}
		// The other "*" endpoint: every published type, not the test event.
		for _, r := range other.waitFor(t, 38, wait) {
			if verify(t, ep2.Secret, r).Type == "webhook.test" {
				t.Error("the test event reached an endpoint it did not name")
			}
		}
		for _, id := range []string{ep.ID, ep2.ID} {
			if d := b.deliveryOf(id, internal.ID); d != nil {
				t.Errorf("internal event delivered to %s: %+v", id, d)
			}
		}
		if n := len(all.receipts()); n != 39 {
			t.Errorf("the * endpoint received %d requests, want 39", n)
		}
	})
}

func (b *bundle) sendTestTo(epID string) string {
	b.t.Helper()
	var sent struct {
		EventID string `json:"event_id"`
	}
	b.must(202, "POST", "/api/admin/webhooks/"+epID+"/send_test", nil, &sent)
	return sent.EventID
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

type typeOut struct {
	Name     string `json:"name"`
	Exposure string `json:"exposure"`
	Scoped   bool   `json:"scoped"`
}

func (b *bundle) webhookEventTypes() map[string]typeOut {
	b.t.Helper()
	var out struct{ Data []typeOut }
	b.must(200, "GET", "/api/admin/webhooks/event_types", nil, &out)
	m := map[string]typeOut{}
	for _, t := range out.Data {
		m[t.Name] = t
	}
	return m
}

// TestEventTypesOfferedByProfile: webhooks.event_types lists what the
// owner's profile and the server's catalogs offer, never another
// profile's own types.
func TestEventTypesOfferedByProfile(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend, setupOpts{mutate: withStandmeet})
		std := b.webhookEventTypes()
		if len(std) != 39+3 {
			t.Errorf("standard owner offered %d types, want standmeet's 39 and hookd's 3 failure notifications: %v", len(std), keys(std))
		}
		for _, typ := range append(keys(standmeetEvents), "webhook.test", "hookd.endpoint.failing", "hookd.endpoint.disabled", "hookd.endpoint.recovered") {
			if _, ok := std[typ]; !ok {
				t.Errorf("standard owner not offered %s", typ)
			}
		}
		for _, typ := range []string{"app.installed", "app.scopes_changed", "open.ping"} {
			if _, ok := std[typ]; ok {
				t.Errorf("standard owner offered kwork's %s", typ)
			}
		}
		if !std["corpus.note.changed"].Scoped || std["booking.created"].Scoped {
			t.Errorf("scoped: corpus.note.changed %v, booking.created %v", std["corpus.note.changed"].Scoped, std["booking.created"].Scoped)
		}
		var e struct{ Error struct{ Message string } }
		if got := b.do("POST", "/api/admin/webhooks", map[string]any{"url": "http://127.0.0.1:9/x", "event_types": []string{"app.installed"}}, &e); got != 422 {
			t.Errorf("standard owner subscribing to app.installed: %d %s, want 422", got, e.Error.Message)
		}
		kw := b.kworkOwner("shop", shopApp).webhookEventTypes()
		for _, typ := range []string{"app.installed", "app.uninstalled", "app.upgraded", "app.scopes_changed", "open.ping", "booking.created"} {
			if _, ok := kw[typ]; !ok {
				t.Errorf("kwork owner not offered %s", typ)
			}
		}
		if _, ok := kw["webhook.test"]; ok {
			t.Error("kwork owner offered the standard profile's webhook.test")
		}
	})
}

// TestPublishRefusesTestType: a published webhook.test would reach every
// "*" endpoint; publish refuses it (and kwork's open.ping), naming send_test.
func TestPublishRefusesTestType(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend, setupOpts{mutate: withStandmeet})
		rc := newReceiver(t)
		ep := b.endpoint(rc.URL, "*")
		kw := b.kworkOwner("shop", shopApp)
		for _, c := range []struct {
			b    *bundle
			typ  string
			path string
			body any
		}{
			{b, "webhook.test", "/api/v1/events", map[string]any{"type": "webhook.test"}},
			{b, "webhook.test", "/api/v1/events/batch", map[string]any{"events": []map[string]any{{"type": "booking.created"}, {"type": "webhook.test"}}}},
			{kw, "open.ping", "/api/v1/events", map[string]any{"type": "open.ping", "tenant": "acme_corp"}},
		} {
			var e struct{ Error struct{ Message string } }
			if got := c.b.do("POST", c.path, c.body, &e); got != 422 || !strings.Contains(e.Error.Message, "webhooks.send_test") {
				t.Errorf("publish %s to %s: %d %q, want 422 naming webhooks.send_test", c.typ, c.path, got, e.Error.Message)
			}
		}
		// Nothing half-written: the batch's booking.created went nowhere either.
		id := b.publish("booking.created", `{"booking_id":"bk_1"}`)
		if r := rc.waitFor(t, 1, wait); len(r) != 1 || verify(t, ep.Secret, r[0]).ID != id {
			t.Fatalf("first delivery is not the booking published after the refusals: %d receipts", len(r))
		}
		if ds := b.deliveries(ep.ID); len(ds) != 1 {
			t.Fatalf("%d deliveries, want only the booking's", len(ds))
		}
	})
}

// TestScopedTypes: only scoped types are judged for scope. An unscoped
// type goes to every subscribed endpoint whatever its data says; a scoped
// one to an endpoint without a grant only when published or was_published;
// raw:// never leaves. Making a type scoped applies at the next fanout.
func TestScopedTypes(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend, setupOpts{mutate: withStandmeet})
		rc := newReceiver(t)
		ep := b.endpoint(rc.URL, "*")
		b.registerType("doc.changed")
		cases := []struct {
			typ, subject, data string
			want               bool
		}{
			{"corpus.note.changed", "wiki://a", `{"op":"updated","published":true,"was_published":true}`, true},
			{"corpus.note.changed", "wiki://a", `{"op":"unpublished","published":false,"was_published":true}`, true},
			{"corpus.note.changed", "wiki://draft", `{"op":"created","published":false,"was_published":false}`, false},
			{"corpus.note.changed", "wiki://b", `{"op":"created"}`, false},
			{"writing.unpublished", "writing://posts/x", `{"published":false,"was_published":false}`, true},
			{"doc.changed", "docs://d", `{"published":false}`, true},
			{"booking.created", "raw://bookings/bk_1", `{}`, false},
			{"corpus.note.changed", "raw://notes/n", `{"published":true}`, false},
		}
		check := func(typ, subject, data string, want bool) {
			t.Helper()
			var out struct{ ID string }
			b.must(202, "POST", "/api/v1/events", map[string]any{"type": typ, "subject": subject, "data": json.RawMessage(data)}, &out)
			b.fanoutNow(out.ID)
			if got := b.deliveryOf(ep.ID, out.ID) != nil; got != want {
				t.Errorf("%s %s %s: delivered %v, want %v", typ, subject, data, got, want)
			}
		}
		for _, c := range cases {
			check(c.typ, c.subject, c.data, c.want)
		}
		// The owner makes doc.changed scoped: the next event is judged.
		b.must(200, "PUT", "/api/admin/event_types/doc.changed", map[string]any{"exposure": "webhook", "scoped": true}, nil)
		check("doc.changed", "docs://d", `{"published":false}`, false)
		check("doc.changed", "docs://d", `{"published":true}`, true)
	})
}
