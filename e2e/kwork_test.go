package e2e_test

// Tests of the kwork profile, end to end: real deliveries through
// hookd on SQLite and PostgreSQL to real HTTP receivers.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/kworkref"
	"github.com/hookd/hookd/webhook"
)

// TestKworkSeedReceiverAcceptsEveryDelivery: a receiver written exactly as
// the kwork profile's specification tells developers to write one accepts every kind of kwork
// delivery hookd makes, and the envelope carries what the specification says.
func TestKworkSeedReceiverAcceptsEveryDelivery(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		shop := b.kworkOwner("shop", shopApp)
		seed := newSeedReceiver(t)
		shop.registerType("order.paid")
		shop.registerType("order.refunded")
		ep := shop.subscribe(seed.URL+"/webhooks", []string{"order.*"}, map[string]any{"developer": true})
		seed.setSecret(ep.Secret)

		type sent struct{ id, typ, tenant, data string }
		var all []sent
		for _, e := range []struct{ typ, tenant, data string }{
			{"app.installed", "acme_corp", `{"version": "1.0.0", "scopes": ["tables.base:read", "platform:ping"]}`},
			{"app.upgraded", "acme_corp", `{"from": "1.0.0", "to": "1.1.0", "scopes": ["tables.base:read"]}`},
			{"app.scopes_changed", "globex", `{"scopes": ["tables.base:read"], "added": [], "removed": ["platform:ping"]}`},
			{"order.paid", "acme_corp", `{"order": "o_1", "note": "租户 \"quoted\" \u2028"}`},
			{"order.refunded", "租户_2", `{"order": "o_1"}`},
			{"app.uninstalled", "acme_corp", `{}`},
		} {
			all = append(all, sent{shop.publishFor(e.typ, e.tenant, e.data), e.typ, e.tenant, compact(t, e.data)})
		}
		ping := shop.sendTest(ep.ID)
		all = append(all, sent{id: ping, typ: "open.ping"})

		byID := map[string]sent{}
		for _, s := range all {
			byID[s.id] = s
			d := shop.waitDelivery(ep.ID, s.id, wait, func(d deliveryOut) bool { return d.State != "pending" })
			if d.State != "delivered" || d.LastStatus != 200 || d.Attempts != 1 {
				seed.mu.Lock()
				rejected := slices.Clone(seed.rejected)
				seed.mu.Unlock()
				t.Fatalf("%s not accepted by the kwork specification's receiver: %+v; rejections: %v", s.typ, d, rejected)
			}
		}
		seed.mu.Lock()
		accepted, events, rejected := seed.accepted, seed.events, seed.rejected
		seed.mu.Unlock()
		if len(rejected) != 0 || len(accepted) != len(all) {
			t.Fatalf("accepted %d of %d; rejected: %v", len(accepted), len(all), rejected)
		}
		for i, r := range accepted {
			env := checkKwork(t, ep.Secret, r)
			s, ok := byID[env.ID]
			if !ok || events[i].ID != env.ID {
				t.Fatalf("unexpected event %s", env.ID)
			}
			if env.Type != s.typ || env.App != "shop-sync" || env.Environment != "live" || env.APIVersion != "2026-10-28" || env.Tenant != s.tenant {
				t.Fatalf("envelope of %s: %+v", s.typ, env)
			}
			if s.data != "" && string(env.Data) != s.data {
				t.Fatalf("data of %s: %s, want %s", s.typ, env.Data, s.data)
			}
			created, _ := time.Parse(time.RFC3339, env.CreatedAt)
			near(t, "createdAt", created, time.Now(), time.Minute)
			if d := shop.deliveryOf(ep.ID, env.ID); d == nil || r.Header.Get("X-Kwork-Delivery") != d.ID {
				t.Fatalf("X-Kwork-Delivery %q is not the delivery record's id (%+v)", r.Header.Get("X-Kwork-Delivery"), d)
			}
		}

		// The transcription is not vacuous: it refuses a wrong secret, a
		// changed body and a timestamp more than 300 s old.
		r := accepted[0]
		sig := r.Header.Get("X-Kwork-Signature")
		stale := webhook.SignKwork(ep.Secret, time.Now().Add(-301*time.Second).Unix(), r.Body)
		fresh := webhook.SignKwork(ep.Secret, time.Now().Unix(), r.Body)
		if kworkref.VerifyPlainHMAC(r.Body, sig, ep.Secret+"x", 300*time.Second) ||
			kworkref.VerifyPlainHMAC(append(bytes.Clone(r.Body), ' '), sig, ep.Secret, 300*time.Second) ||
			kworkref.VerifyPlainHMAC(r.Body, stale, ep.Secret, 300*time.Second) ||
			!kworkref.VerifyPlainHMAC(r.Body, fresh, ep.Secret, 300*time.Second) {
			t.Fatal("verifyPlainHMAC decides wrongly on a forged, changed or stale request")
		}
	})
}

// lifecycle is the kwork profile's app lifecycle events with their example data.
var lifecycle = []struct{ typ, data string }{
	{"app.installed", `{"version":"1.0.0","scopes":["tables.base:read"]}`},
	{"app.upgraded", `{"from":"1.0.0","to":"1.1.0","scopes":["tables.base:read"]}`},
	{"app.scopes_changed", `{"scopes":["tables.base:read"],"added":[],"removed":["platform:ping"]}`},
	{"app.uninstalled", `{}`},
}

// TestKworkLifecycleRouting: lifecycle events reach the app's developer
// subscription without being listed, and no other subscription of the app,
// not even one that lists them (kwork: "sent automatically to the app's
// dedicated developer subscription"); app.scopes_changed only an
// integration app's. An app has one developer subscription, and a standard
// endpoint cannot be one.
func TestKworkLifecycleRouting(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		for _, app := range []struct {
			id    string
			attrs map[string]string
			gets  map[string]bool
		}{
			{"shop", shopApp, map[string]bool{"app.installed": true, "app.upgraded": true, "app.scopes_changed": true, "app.uninstalled": true}},
			{"pages", pageApp, map[string]bool{"app.installed": true, "app.upgraded": true, "app.uninstalled": true}},
		} {
			o := b.kworkOwner(app.id, app.attrs)
			o.registerType("order.paid")
			o.registerType("order.shipped")
			empty, unrelated := newReceiver(t), newReceiver(t)
			epEmpty := o.subscribe(empty.URL, nil, map[string]any{"developer": true})
			epUnrelated := o.subscribe(unrelated.URL, []string{"order.paid"}, nil)
			epLists := o.subscribe(unrelated.URL+"/lists", []string{"app.*"}, nil)
			var conflict map[string]any
			if st := o.do("POST", "/api/admin/webhooks", map[string]any{"url": unrelated.URL, "event_types": []string{}, "developer": true}, &conflict); st != 409 || !strings.Contains(fmt.Sprint(conflict), epEmpty.ID) {
				t.Fatalf("a second developer subscription: %d %v; want 409 naming %s", st, conflict, epEmpty.ID)
			}
			// A type that is neither listed nor lifecycle reaches neither.
			shipped := o.publishFor("order.shipped", "acme_corp", `{}`)
			o.fanoutNow(shipped)
			var want []string
			for _, e := range lifecycle {
				id := o.publishFor(e.typ, "acme_corp", e.data)
				o.fanoutNow(id)
				if d := o.deliveryOf(epEmpty.ID, id); app.gets[e.typ] != (d != nil) {
					t.Fatalf("%s (%s app): %s reached the developer subscription: %v, want %v", app.id, app.attrs["app_kind"], e.typ, d != nil, app.gets[e.typ])
				}
				for _, ep := range []string{epUnrelated.ID, epLists.ID} {
					if d := o.deliveryOf(ep, id); d != nil {
						t.Fatalf("%s: %s reached subscription %s, which is not the developer subscription", app.id, e.typ, ep)
					}
				}
				if app.gets[e.typ] {
					want = append(want, e.typ)
				}
			}
			for _, ep := range []string{epEmpty.ID, epUnrelated.ID} {
				if d := o.deliveryOf(ep, shipped); d != nil {
					t.Fatalf("order.shipped reached subscription %s", ep)
				}
			}
			if n := len(unrelated.receipts()); n != 0 {
				t.Fatalf("%s: %d requests to subscriptions other than the developer one", app.id, n)
			}
			for rc, secret := range map[*receiver]string{empty: epEmpty.Secret} {
				var got []string
				for _, r := range rc.waitFor(t, len(want), wait) {
					env := checkKwork(t, secret, r)
					if env.App != app.attrs["app"] || env.Environment != app.attrs["environment"] {
						t.Fatalf("envelope %+v for app %s", env, app.id)
					}
					got = append(got, env.Type)
				}
				slices.Sort(got)
				w := slices.Clone(want)
				slices.Sort(w)
				if !slices.Equal(got, w) {
					t.Fatalf("%s receiver got %v, want %v", app.id, got, w)
				}
			}
		}
		var refused map[string]any
		if st := b.do("POST", "/api/admin/webhooks", map[string]any{"url": "https://example.com/", "event_types": []string{"*"}, "developer": true}, &refused); st != 422 || !strings.Contains(fmt.Sprint(refused), "developer") {
			t.Fatalf("a standard developer endpoint: %d %v; want 422 naming developer", st, refused)
		}
	})
}

// TestKworkPageAppNeverGetsScopesChanged: the kwork profile — app.scopes_changed "只发给
// 没有页面的后端应用（integration）… 有页面的应用 … 收不到这个事件". A page app
// never gets it, even from a subscription that lists it or matches it by glob.
func TestKworkPageAppNeverGetsScopesChanged(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		pages := b.kworkOwner("pages", pageApp)
		rc := newReceiver(t)
		var eps []endpointOut
		for _, globs := range [][]string{{"app.scopes_changed"}, {"app.*"}, {"*"}} {
			eps = append(eps, pages.subscribe(rc.URL+"/"+globs[0], globs, map[string]any{"developer": globs[0] == "*"}))
		}
		id := pages.publishFor("app.scopes_changed", "acme_corp", lifecycle[2].data)
		pages.fanoutNow(id)
		for _, ep := range eps {
			if d := pages.deliveryOf(ep.ID, id); d != nil {
				t.Errorf("page app subscription %s gets app.scopes_changed: %+v", ep.URL[len(rc.URL):], d)
			}
		}
	})
}

// TestStandardAndKworkSideBySide: one hookd, one event type, a standard
// owner and a kwork owner: each endpoint gets its own profile's wire format.
func TestStandardAndKworkSideBySide(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend) // acme: standard
		shop := b.kworkOwner("shop", shopApp)
		rc := newReceiver(t)
		b.registerType("order.paid")
		shop.registerType("order.paid")
		epStd := b.endpoint(rc.URL+"/acme", "order.paid")
		epKw := shop.subscribe(rc.URL+"/shop", []string{"order.paid"}, nil)
		stdID := b.publishFor("order.paid", "acme_corp", `{"order":"o_1"}`)
		kwID := shop.publishFor("order.paid", "acme_corp", `{"order":"o_1"}`)
		byPath := map[string]receipt{}
		for _, r := range rc.waitFor(t, 2, wait) {
			byPath[r.Path] = r
		}
		std, kw := byPath["/acme"], byPath["/shop"]

		ev := verify(t, epStd.Secret, std)
		if ev.ID != stdID || std.Header.Get("webhook-id") != stdID || ev.Subject != "test://x" {
			t.Fatalf("standard delivery: %+v", ev)
		}
		for _, h := range []string{"X-Kwork-Signature", "X-Kwork-Event", "X-Kwork-Delivery"} {
			if std.Header.Get(h) != "" {
				t.Fatalf("standard delivery carries %s", h)
			}
		}
		var thin map[string]json.RawMessage
		if err := json.Unmarshal(std.Body, &thin); err != nil || len(thin) != 5 || thin["tenant"] != nil || thin["createdAt"] != nil {
			t.Fatalf("standard body %s", std.Body)
		}

		env := checkKwork(t, epKw.Secret, kw)
		if env.ID != kwID || env.Type != "order.paid" || env.Tenant != "acme_corp" || env.App != "shop-sync" {
			t.Fatalf("kwork envelope %+v", env)
		}
		// Neither verifies as the other.
		if v, err := webhook.NewVerifier(epStd.Secret); err == nil {
			if _, err := v.Verify(kw.Header, kw.Body); err == nil {
				t.Fatal("the kwork delivery verifies as standard")
			}
		}
		if kworkref.VerifyPlainHMAC(std.Body, std.Header.Get("X-Kwork-Signature"), epStd.Secret, 300*time.Second) {
			t.Fatal("the standard delivery verifies as kwork")
		}
		b.waitDelivery(epStd.ID, stdID, wait, func(d deliveryOut) bool { return d.State == "delivered" })
		shop.waitDelivery(epKw.ID, kwID, wait, func(d deliveryOut) bool { return d.State == "delivered" })
	})
}
