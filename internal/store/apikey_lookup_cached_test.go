package store_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/store"
)

// TestAPIKeyLookupsShared: concurrent lookups (which share queries on
// PostgreSQL) each
// get their own key, an unknown key its own refusal, and a key revoked
// before a lookup is asked comes back revoked; inside a transaction the
// lookup reads that transaction.
func TestAPIKeyLookupsShared(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		const keys = 12
		for i := range keys {
			must(t, s.q.CreateAPIKey(s.ctx, &owner.APIKey{ID: fmt.Sprint("key_", i), OwnerID: "acme", Role: owner.Publisher,
				Hash: owner.HashKey(fmt.Sprint("secret-", i)), Prefix: "p", CreatedAt: t0}))
		}
		must(t, s.q.RevokeAPIKey(s.ctx, "acme", "key_3", ts(t0.Add(day))))
		var wg sync.WaitGroup
		errs := make(chan error, 4*keys+8)
		for round := range 4 {
			for i := range keys {
				wg.Go(func() {
					k, err := s.q.APIKeyByHash(s.ctx, owner.HashKey(fmt.Sprint("secret-", i)))
					switch {
					case err != nil:
						errs <- fmt.Errorf("key %d: %w", i, err)
					case k.ID != fmt.Sprint("key_", i):
						errs <- fmt.Errorf("key %d answered with %s", i, k.ID)
					case (k.RevokedAt != nil) != (i == 3):
						errs <- fmt.Errorf("key %d revoked_at %v", i, k.RevokedAt)
					}
				})
			}
			wg.Go(func() {
				_, err := s.q.APIKeyByHash(s.ctx, owner.HashKey(fmt.Sprint("unknown-", round)))
				if apperr.CodeOf(err) != apperr.Unauthorized {
					errs <- fmt.Errorf("unknown key: %v, want unauthorized", err)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		must(t, s.db.InTx(s.ctx, store.TxOptions{}, func(tx *store.Q) error {
			if err := tx.RevokeAPIKey(s.ctx, "acme", "key_5", ts(t0.Add(day))); err != nil {
				return err
			}
			k, err := tx.APIKeyByHash(s.ctx, owner.HashKey("secret-5"))
			if err == nil && k.RevokedAt == nil {
				t.Error("inside the revoking transaction, the key is not revoked")
			}
			return err
		}))
	})
}

// TestAPIKeyCache: a key looked up once is answered from the cache after
// (remembered), even once revoked elsewhere (another process's revocation
// is not seen here: the op confirms the key in its transaction), while a
// revocation through this process empties the cache; a revoked or unknown
// key is never remembered; and ReadPublishRules confirms only the keys that
// exist unrevoked.
func TestAPIKeyCache(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		for _, id := range []string{"live", "other", "gone"} {
			must(t, s.q.CreateAPIKey(s.ctx, &owner.APIKey{ID: id, OwnerID: "acme", Role: owner.Publisher, Hash: owner.HashKey("secret-" + id), Prefix: "p", CreatedAt: t0}))
		}
		lookUp := func(id string) (*owner.APIKey, bool, error) {
			return s.db.APIKeyByHashCached(s.ctx, owner.HashKey("secret-"+id))
		}
		for i, want := range []bool{false, true, true} {
			k, remembered, err := lookUp("live")
			must(t, err)
			if k.ID != "live" || remembered != want {
				t.Fatalf("lookup %d: %s, remembered %v; want live, %v", i, k.ID, remembered, want)
			}
		}
		_, _, err := lookUp("other")
		must(t, err)
		// Revoked behind the store's back (as by another process): still
		// remembered, and the transaction's read refuses it.
		s.exec(`UPDATE hookd_api_keys SET revoked_at = 1 WHERE id = 'other'`)
		if k, remembered, err := lookUp("other"); err != nil || !remembered || k.RevokedAt != nil {
			t.Fatalf("key revoked elsewhere: %+v, remembered %v, %v; want the remembered key", k, remembered, err)
		}
		read, err := s.q.ReadPublishRules(s.ctx, []store.OwnerType{{Owner: "acme", Type: "t"}}, []string{"live", "other", "never"})
		must(t, err)
		if !read.Confirmed["live"] || read.Confirmed["other"] || read.Confirmed["never"] || len(read.Confirmed) != 1 {
			t.Fatalf("confirmed %v; want live only", read.Confirmed)
		}
		// A revocation through this process forgets every key.
		must(t, s.q.RevokeAPIKey(s.ctx, "acme", "gone", ts(t0.Add(day))))
		k, remembered, err := lookUp("other")
		if err != nil || remembered || k.RevokedAt == nil {
			t.Fatalf("after a revocation here: %+v, remembered %v, %v; want read again, revoked", k, remembered, err)
		}
		for range 2 {
			if k, remembered, err := lookUp("gone"); err != nil || remembered || k.RevokedAt == nil {
				t.Fatalf("revoked key: %+v, remembered %v, %v; want read each time, revoked", k, remembered, err)
			}
			if _, remembered, err := lookUp("unknown"); apperr.CodeOf(err) != apperr.Unauthorized || remembered {
				t.Fatalf("unknown key: remembered %v, %v; want unauthorized", remembered, err)
			}
		}
	})
}
