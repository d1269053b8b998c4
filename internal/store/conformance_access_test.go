package store_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/scope"
	"github.com/hookd/hookd/internal/store"
)

// TestSessions: a key's session is found by its hash until it expires,
// follows the owner it is switched to, and ends by sign-out, with its key,
// or by pruning; an OIDC sign-in's session likewise.
func TestSessions(t *testing.T) {
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		s.owner("beta")
		k := &owner.APIKey{ID: "key_1", OwnerID: "acme", Role: owner.Admin, Hash: owner.HashKey("s1"), Prefix: "hkd_s1", CreatedAt: t0}
		must(t, s.q.CreateAPIKey(s.ctx, k))
		h1, h2 := []byte("session-1"), []byte("session-2")
		must(t, s.q.CreateSession(s.ctx, h1, "key_1", "acme", t0, t0.Add(time.Hour)))
		must(t, s.q.CreateSession(s.ctx, h2, "key_1", "acme", t0, t0.Add(time.Minute)))
		got, err := s.q.SessionByHash(s.ctx, h1, t0.Add(time.Second))
		must(t, err)
		if got.KeyID != "key_1" || got.Role != owner.Admin || got.KeyOwner != "acme" || got.OwnerID != "acme" || got.Revoked || !got.ExpiresAt.Equal(t0.Add(time.Hour)) {
			t.Fatalf("SessionByHash = %+v", got)
		}
		_, err = s.q.SessionByHash(s.ctx, h1, t0.Add(time.Hour))
		wantCode(t, err, apperr.Unauthorized) // at its expiry

		must(t, s.q.SetSessionOwner(s.ctx, h1, "beta"))
		if got, err = s.q.SessionByHash(s.ctx, h1, t0); err != nil || got.OwnerID != "beta" {
			t.Fatalf("after SetSessionOwner: %+v, %v", got, err)
		}
		must(t, s.q.RevokeAPIKey(s.ctx, "acme", "key_1", ts(t0)))
		if got, err = s.q.SessionByHash(s.ctx, h1, t0); err != nil || !got.Revoked {
			t.Fatalf("a revoked key's session: %+v, %v (want Revoked)", got, err)
		}

		n, err := s.q.PruneSessions(s.ctx, t0.Add(time.Minute))
		must(t, err)
		if n != 1 || s.count(`SELECT count(*) FROM hookd_console_sessions`) != 1 {
			t.Fatalf("PruneSessions at h2's expiry removed %d, want 1 (h1 lasts an hour)", n)
		}
		must(t, s.q.DeleteSession(s.ctx, h1))
		_, err = s.q.SessionByHash(s.ctx, h1, t0)
		wantCode(t, err, apperr.Unauthorized)

		must(t, s.q.CreateSession(s.ctx, h2, "key_1", "acme", t0, t0.Add(time.Hour)))
		must(t, s.q.DeleteKeySessions(s.ctx, "key_1"))
		_, err = s.q.SessionByHash(s.ctx, h2, t0)
		wantCode(t, err, apperr.Unauthorized)

		u := &store.Session{Subject: "sub-1", User: "ada@example.com", Role: owner.Publisher, KeyOwner: "acme", OwnerID: "acme", ExpiresAt: t0.Add(time.Hour)}
		hu := []byte("user-session")
		must(t, s.q.CreateUserSession(s.ctx, hu, u, t0))
		got, err = s.q.SessionByHash(s.ctx, hu, t0)
		must(t, err)
		jsonEq(t, "OIDC session", got, u)
		must(t, s.q.SetSessionOwner(s.ctx, hu, "beta"))
		if got, err = s.q.SessionByHash(s.ctx, hu, t0); err != nil || got.OwnerID != "beta" {
			t.Fatalf("OIDC session after SetSessionOwner: %+v, %v", got, err)
		}
		if n, err = s.q.PruneSessions(s.ctx, t0.Add(time.Hour)); err != nil || n != 1 {
			t.Fatalf("PruneSessions of the OIDC session: %d, %v", n, err)
		}
	})
}

// TestGrants: a grant reads back as written, is its owner's alone, lists
// oldest first, is updated and deleted; GrantsByID names those that exist.
func TestGrants(t *testing.T) {
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		s.owner("beta")
		exp := t0.Add(day)
		g1 := &scope.Grant{ID: "grt_1", OwnerID: "acme", Description: "billing", Allow: []string{"invoice.*"}, Deny: []string{"invoice.secret"}, ExpiresAt: &exp, CreatedAt: t0, UpdatedAt: t0}
		g2 := &scope.Grant{ID: "grt_2", OwnerID: "acme", Description: "all", Allow: []string{"*"}, Deny: []string{}, PublishedOnly: true, CreatedAt: t0.Add(time.Second), UpdatedAt: t0.Add(time.Second)}
		must(t, s.q.CreateGrant(s.ctx, g2))
		must(t, s.q.CreateGrant(s.ctx, g1))
		got, err := s.q.GetGrant(s.ctx, "acme", "grt_1")
		must(t, err)
		jsonEq(t, "GetGrant", got, g1)
		if got.ExpiresAt == nil || !got.ExpiresAt.Equal(exp) {
			t.Fatalf("expires_at = %v, want %v", got.ExpiresAt, exp)
		}
		_, err = s.q.GetGrant(s.ctx, "beta", "grt_1")
		wantCode(t, err, apperr.NotFound)

		list, err := s.q.ListGrants(s.ctx, "acme")
		must(t, err)
		if ids := pluck(list, func(g *scope.Grant) string { return g.ID }); !slices.Equal(ids, []string{"grt_1", "grt_2"}) {
			t.Fatalf("ListGrants = %v, want oldest first", ids)
		}
		byID, err := s.q.GrantsByID(s.ctx, "acme", []string{"grt_2", "grt_none"})
		must(t, err)
		if len(byID) != 1 || byID["grt_2"] == nil || !byID["grt_2"].PublishedOnly {
			t.Fatalf("GrantsByID = %v, want grt_2 only", byID)
		}
		if other, err := s.q.GrantsByID(s.ctx, "beta", []string{"grt_1"}); err != nil || len(other) != 0 {
			t.Fatalf("another owner's GrantsByID = %v, %v", other, err)
		}

		revoked := t0.Add(time.Hour)
		g1.Allow, g1.RevokedAt, g1.UpdatedAt = []string{"order.*"}, &revoked, revoked
		must(t, s.q.UpdateGrant(s.ctx, g1))
		got, err = s.q.GetGrant(s.ctx, "acme", "grt_1")
		must(t, err)
		jsonEq(t, "updated grant", got, g1)

		wantCode(t, s.q.DeleteGrant(s.ctx, "beta", "grt_1"), apperr.NotFound)
		must(t, s.q.DeleteGrant(s.ctx, "acme", "grt_1"))
		_, err = s.q.GetGrant(s.ctx, "acme", "grt_1")
		wantCode(t, err, apperr.NotFound)
	})
}

// TestPortalLogo: a logo is put, replaced, stamped with its time, read
// back byte for byte and deleted; none reads NotFound and stamps 0.
func TestPortalLogo(t *testing.T) {
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		_, err := s.q.GetPortalLogo(s.ctx, "acme")
		wantCode(t, err, apperr.NotFound)
		if at, err := s.q.PortalLogoStamp(s.ctx, "acme"); err != nil || at != 0 {
			t.Fatalf("no logo's stamp: %d, %v", at, err)
		}
		must(t, s.q.PutPortalLogo(s.ctx, "acme", &store.PortalLogo{ContentType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}, UpdatedAt: t0}))
		l := &store.PortalLogo{ContentType: "image/svg+xml", Data: []byte("<svg/>"), UpdatedAt: t0.Add(time.Minute)}
		must(t, s.q.PutPortalLogo(s.ctx, "acme", l))
		got, err := s.q.GetPortalLogo(s.ctx, "acme")
		must(t, err)
		if got.ContentType != l.ContentType || !bytes.Equal(got.Data, l.Data) || !got.UpdatedAt.Equal(l.UpdatedAt) {
			t.Fatalf("GetPortalLogo = %+v, want the replacement %+v", got, l)
		}
		if at, err := s.q.PortalLogoStamp(s.ctx, "acme"); err != nil || at != ts(l.UpdatedAt) {
			t.Fatalf("stamp = %d, %v; want %d", at, err, ts(l.UpdatedAt))
		}
		must(t, s.q.DeletePortalLogo(s.ctx, "acme"))
		must(t, s.q.DeletePortalLogo(s.ctx, "acme")) // none: nothing to do
		_, err = s.q.GetPortalLogo(s.ctx, "acme")
		wantCode(t, err, apperr.NotFound)
	})
}

// TestOperatorKeyCommands: AllAPIKeys lists every owner's keys and the
// operator's; RevokeAPIKeyByID revokes any key by id and returns it.
func TestOperatorKeyCommands(t *testing.T) {
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		s.owner("beta")
		for _, k := range []*owner.APIKey{
			{ID: "key_a", OwnerID: "acme", Role: owner.Admin, Hash: owner.HashKey("a"), Prefix: "hkd_a", CreatedAt: t0},
			{ID: "key_b", OwnerID: "beta", Role: owner.Publisher, Hash: owner.HashKey("b"), Prefix: "hkd_b", CreatedAt: t0.Add(time.Second)},
			{ID: "key_op", Role: owner.Operator, Hash: owner.HashKey("op"), Prefix: "hkd_op", CreatedAt: t0.Add(2 * time.Second)},
		} {
			must(t, s.q.CreateAPIKey(s.ctx, k))
		}
		all, err := s.q.AllAPIKeys(s.ctx)
		must(t, err)
		ids := keyIDs(all)
		slices.Sort(ids)
		if !slices.Equal(ids, []string{"key_a", "key_b", "key_op"}) {
			t.Fatalf("AllAPIKeys = %v", ids)
		}
		k, err := s.q.RevokeAPIKeyByID(s.ctx, "key_b", ts(t0.Add(day)))
		must(t, err)
		if k.ID != "key_b" || k.OwnerID != "beta" || k.Prefix != "hkd_b" {
			t.Fatalf("RevokeAPIKeyByID returned %+v, want key_b of beta", k)
		}
		got, err := s.q.APIKeyByHash(s.ctx, owner.HashKey("b"))
		must(t, err)
		if got.RevokedAt == nil || !got.RevokedAt.Equal(t0.Add(day)) {
			t.Fatalf("the key reads back revoked at %v, want %v", got.RevokedAt, t0.Add(day))
		}
		if _, err := s.q.RevokeAPIKeyByID(s.ctx, "key_b", ts(t0.Add(2*day))); err != nil {
			t.Fatal(err)
		}
		if got, err = s.q.APIKeyByHash(s.ctx, owner.HashKey("b")); err != nil || !got.RevokedAt.Equal(t0.Add(day)) {
			t.Fatalf("revoked again: revoked_at %v, %v; want the first time kept", got.RevokedAt, err)
		}
		_, err = s.q.RevokeAPIKeyByID(s.ctx, "key_none", ts(t0))
		wantCode(t, err, apperr.NotFound)
	})
}

// TestPortalLinkUpkeep: a link's locale reads back (none: ""); an owner's
// unused links are spent at once; expired links and sessions are pruned.
func TestPortalLinkUpkeep(t *testing.T) {
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		s.owner("beta")
		g := &store.PortalGrant{OwnerID: "acme", Features: []string{"endpoints"}, Locale: "zh-Hans", ExpiresAt: t0.Add(time.Hour)}
		a1, a2, old := []byte("link-a1"), []byte("link-a2"), []byte("link-old")
		must(t, s.q.CreatePortalLink(s.ctx, a1, g, t0))
		must(t, s.q.CreatePortalLink(s.ctx, a2, g, t0))
		gb := *g
		gb.OwnerID, gb.Locale = "beta", "en"
		must(t, s.q.CreatePortalLink(s.ctx, []byte("link-b"), &gb, t0))
		gold := *g
		gold.ExpiresAt = t0.Add(time.Minute)
		must(t, s.q.CreatePortalLink(s.ctx, old, &gold, t0))
		if l := s.q.PortalLinkLocale(s.ctx, a1); l != "zh-Hans" {
			t.Fatalf("PortalLinkLocale = %q, want zh-Hans", l)
		}
		if l := s.q.PortalLinkLocale(s.ctx, []byte("nothing")); l != "" {
			t.Fatalf("PortalLinkLocale of no link = %q, want empty", l)
		}
		if _, err := s.q.TakePortalLink(s.ctx, a1, t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		// a1 is used, old expired: only a2 is left to spend.
		n, err := s.q.SpendPortalLinks(s.ctx, "acme", t0.Add(2*time.Minute))
		must(t, err)
		if n != 1 {
			t.Fatalf("SpendPortalLinks spent %d, want 1 (a2)", n)
		}
		if _, err := s.q.TakePortalLink(s.ctx, a2, t0.Add(3*time.Minute)); !errors.Is(err, store.ErrLinkUsed) {
			t.Fatalf("a spent link: %v, want ErrLinkUsed", err)
		}
		if l := s.q.PortalLinkLocale(s.ctx, a2); l != "zh-Hans" {
			t.Fatalf("a spent link's locale = %q, want zh-Hans", l)
		}
		if _, err := s.q.TakePortalLink(s.ctx, []byte("link-b"), t0.Add(3*time.Minute)); err != nil {
			t.Fatalf("beta's link after acme's were spent: %v", err)
		}
		must(t, s.q.PrunePortal(s.ctx, t0.Add(time.Minute)))
		if n := s.count(`SELECT count(*) FROM hookd_portal_links`); n != 3 {
			t.Fatalf("%d links after pruning at old's expiry, want 3", n)
		}
		must(t, s.q.PrunePortal(s.ctx, t0.Add(time.Hour)))
		if n := s.count(`SELECT count(*) FROM hookd_portal_links`) + s.count(`SELECT count(*) FROM hookd_portal_sessions`); n != 0 {
			t.Fatalf("%d links and sessions left after everything expired", n)
		}
	})
}

// TestSharedCatalog: the shared catalog lists by name with each type's
// profile; removing names is all or none; GetEventType, TypeSchema and
// ScopedTypes resolve an owner's own registration before the catalog's.
func TestSharedCatalog(t *testing.T) {
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		schema := json.RawMessage(`{"type":"object"}`)
		for _, ty := range []*event.Type{
			{Name: "invoice.paid", Exposure: event.Webhook, Schema: schema, SchemaHash: "h-shared", CreatedAt: t0},
			{Name: "kwork.only", Exposure: event.Webhook, Profile: "kwork", CreatedAt: t0},
			{Name: "order.placed", Exposure: event.Webhook, Scoped: true, CreatedAt: t0},
			{OwnerID: "acme", Name: "invoice.paid", Exposure: event.Webhook, Scoped: true, Schema: json.RawMessage(`{"type":"string"}`), SchemaHash: "h-acme", CreatedAt: t0},
		} {
			must(t, s.q.PutEventType(s.ctx, ty))
		}
		shared, err := s.q.SharedEventTypes(s.ctx)
		must(t, err)
		got := pluck(shared, func(ty *event.Type) string { return ty.Name + "@" + ty.Profile })
		if !slices.Equal(got, []string{"invoice.paid@", "kwork.only@kwork", "order.placed@"}) {
			t.Fatalf("SharedEventTypes = %v", got)
		}

		own, err := s.q.GetEventType(s.ctx, "acme", "invoice.paid")
		must(t, err)
		if own.OwnerID != "acme" || !own.Scoped {
			t.Fatalf("GetEventType(acme) = %+v, want acme's own registration", own)
		}
		if _, err := s.q.GetEventType(s.ctx, "acme", "never.registered"); apperr.CodeOf(err) != apperr.NotFound {
			t.Fatalf("GetEventType of no type: %v, want not_found", err)
		}
		sch, hash, err := s.q.TypeSchema(s.ctx, "acme", "invoice.paid")
		must(t, err)
		if string(sch) != `{"type":"string"}` || hash != "h-acme" {
			t.Fatalf("TypeSchema(acme) = %s, %q; want acme's", sch, hash)
		}
		if sch, hash, err := s.q.TypeSchema(s.ctx, "beta", "invoice.paid"); err != nil || string(sch) != string(schema) || hash != "h-shared" {
			t.Fatalf("TypeSchema(beta) = %s, %q, %v; want the catalog's", sch, hash, err)
		}
		scoped, err := s.q.ScopedTypes(s.ctx, "acme")
		must(t, err)
		if !scoped["invoice.paid"] || !scoped["order.placed"] || len(scoped) != 2 {
			t.Fatalf("ScopedTypes(acme) = %v, want invoice.paid (its own) and order.placed", scoped)
		}

		err = s.q.RemoveSharedEventTypes(s.ctx, []string{"order.placed", "not.there"})
		if err == nil || !strings.Contains(err.Error(), "not.there") {
			t.Fatalf("removing a name the catalog lacks: %v, want a refusal naming it", err)
		}
		if n := s.count(`SELECT count(*) FROM hookd_event_types WHERE owner_id = ''`); n != 3 {
			t.Fatalf("%d shared types after a refused removal, want 3 (all or none)", n)
		}
		must(t, s.q.RemoveSharedEventTypes(s.ctx, []string{"invoice.paid", "order.placed"}))
		if own, err = s.q.GetEventType(s.ctx, "acme", "invoice.paid"); err != nil || own.OwnerID != "acme" {
			t.Fatalf("acme's own registration after the shared one went: %+v, %v", own, err)
		}
		if shared, err = s.q.SharedEventTypes(s.ctx); err != nil || len(shared) != 1 {
			t.Fatalf("SharedEventTypes after removal = %d, %v; want kwork.only", len(shared), err)
		}
	})
}
