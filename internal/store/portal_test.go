package store_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/store"
)

// TestPortalLinks: a link is taken once, even by two requests racing for
// it; a used, an expired and an unknown link are each refused for what
// they are; a session lasts until the link's expiry, ends with
// DeletePortalSessions, and goes with its owner.
func TestPortalLinks(t *testing.T) {
	setup(t, func(t *testing.T, s *bundle) {
		if err := s.q.CreateOwner(s.ctx, &owner.Owner{ID: "acme", Profile: "standard", Attributes: map[string]string{}, CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		g := &store.PortalGrant{OwnerID: "acme", Features: []string{"endpoints", "deliveries"}, ReadOnly: true, Locale: "zh-Hans", ReturnURL: "https://app.example.com/", ExpiresAt: t0.Add(time.Hour)}
		link := []byte("link-hash-0123456789012345678901")
		if err := s.q.CreatePortalLink(s.ctx, link, g, t0); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		got := make(chan error, 4)
		for range 4 {
			wg.Go(func() {
				_, err := s.db.Q().TakePortalLink(s.ctx, link, t0.Add(time.Minute))
				got <- err
			})
		}
		wg.Wait()
		close(got)
		won := 0
		for err := range got {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, store.ErrLinkUsed):
				t.Errorf("a racing take failed with %v, want ErrLinkUsed", err)
			}
		}
		if won != 1 {
			t.Fatalf("%d of 4 racing takes got the link, want exactly 1", won)
		}
		if _, err := s.q.TakePortalLink(s.ctx, link, t0.Add(2*time.Minute)); !errors.Is(err, store.ErrLinkUsed) {
			t.Errorf("second use: %v, want ErrLinkUsed", err)
		}
		old := []byte("link-hash-expired-23456789012345")
		if err := s.q.CreatePortalLink(s.ctx, old, g, t0); err != nil {
			t.Fatal(err)
		}
		if _, err := s.q.TakePortalLink(s.ctx, old, t0.Add(time.Hour)); !errors.Is(err, store.ErrLinkExpired) {
			t.Errorf("at its expiry: %v, want ErrLinkExpired", err)
		}
		if _, err := s.q.TakePortalLink(s.ctx, []byte("nothing"), t0); !errors.Is(err, store.ErrLinkUnknown) {
			t.Errorf("unknown link: %v, want ErrLinkUnknown", err)
		}

		sess := []byte("session-hash-3456789012345678901")
		if err := s.q.CreatePortalSession(s.ctx, sess, g, t0); err != nil {
			t.Fatal(err)
		}
		back, err := s.q.PortalSessionByHash(s.ctx, sess, t0.Add(59*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if back.OwnerID != "acme" || !back.ReadOnly || back.Locale != "zh-Hans" || back.ReturnURL != g.ReturnURL || len(back.Features) != 2 || !back.ExpiresAt.Equal(g.ExpiresAt) {
			t.Errorf("session read back as %+v, want %+v", back, g)
		}
		if _, err := s.q.PortalSessionByHash(s.ctx, sess, t0.Add(time.Hour)); err == nil {
			t.Error("a session outlived its link's expiry")
		}
		if n, err := s.q.DeletePortalSessions(s.ctx, "acme"); err != nil || n != 1 {
			t.Errorf("revoke: %d, %v", n, err)
		}
		if _, err := s.q.PortalSessionByHash(s.ctx, sess, t0); err == nil {
			t.Error("a revoked session still works")
		}
		if err := s.q.CreatePortalSession(s.ctx, sess, g, t0); err != nil {
			t.Fatal(err)
		}
		if err := s.q.DeleteOwner(s.ctx, "acme"); err != nil {
			t.Fatal(err)
		}
		if n := s.count(`SELECT count(*) FROM hookd_portal_sessions`) + s.count(`SELECT count(*) FROM hookd_portal_links`); n != 0 {
			t.Errorf("%d portal rows outlived their owner", n)
		}
	})
}
