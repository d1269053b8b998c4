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
		must(t, s.db.InTx(s.ctx, func(tx *store.Q) error {
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
