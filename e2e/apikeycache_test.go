package e2e_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/dbtest"
)

// TestPublishConfirmsCachedKey: a single publish is authenticated from the
// process's key cache after its key's first use, and its group commit
// reads the key again, so a key revoked by another process (here, behind
// the store's back) is refused with 401 and publishes nothing, while a
// request of any other op reads the key at once. A key revoked through
// this process is refused before the publish starts.
func TestPublishConfirmsCachedKey(t *testing.T) {
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		b.registerType("order.paid")
		ctx := context.Background()
		publisher, err := b.h.CreateAPIKey(ctx, "acme", "publisher")
		if err != nil {
			t.Fatal(err)
		}
		as := func(key string) []string { return []string{"Authorization", "Bearer " + key} }
		body := map[string]any{"type": "order.paid", "data": json.RawMessage(`{"n": 1}`)}
		for range 2 { // the first reads the key, the second is answered from the cache
			b.must(202, "POST", "/api/v1/events", body, nil, as(publisher)...)
		}
		events := func() int { return dbtest.Count(t, b.h.DB, `SELECT count(*) FROM hookd_events`) }
		if n := events(); n != 2 {
			t.Fatalf("%d events; want 2", n)
		}

		dbtest.Exec(t, b.h.DB, `UPDATE hookd_api_keys SET revoked_at = 1 WHERE role = 'publisher'`)
		var refusal struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if got := b.do("POST", "/api/v1/events", body, &refusal, as(publisher)...); got != 401 || !strings.Contains(refusal.Error.Message, "revoked") {
			t.Fatalf("publish with a key revoked elsewhere: %d %+v; want 401, revoked", got, refusal)
		}
		if n := events(); n != 2 {
			t.Fatalf("the refused publish wrote: %d events; want 2", n)
		}
		if got := b.do("POST", "/api/v1/events/batch", map[string]any{"events": []any{body}}, nil, as(publisher)...); got != 401 {
			t.Fatalf("batch publish with the revoked key: %d; want 401 (read at once)", got)
		}

		// Revoked through this process: refused before its transaction.
		second, err := b.h.CreateAPIKey(ctx, "acme", "publisher")
		if err != nil {
			t.Fatal(err)
		}
		b.must(202, "POST", "/api/v1/events", body, nil, as(second)...)
		var keys struct {
			Data []struct {
				ID        string  `json:"id"`
				Role      string  `json:"role"`
				RevokedAt *string `json:"revoked_at"`
			} `json:"data"`
		}
		b.must(200, "GET", "/api/admin/api_keys", nil, &keys)
		for _, k := range keys.Data {
			if k.Role == "publisher" && k.RevokedAt == nil {
				b.must(200, "POST", "/api/admin/api_keys/"+k.ID+"/revoke", nil, nil)
			}
		}
		if got := b.do("POST", "/api/v1/events", body, &refusal, as(second)...); got != 401 || !strings.Contains(refusal.Error.Message, "revoked") {
			t.Fatalf("publish with a key revoked here: %d %+v; want 401, revoked", got, refusal)
		}
		if n := events(); n != 3 {
			t.Fatalf("%d events; want 3", n)
		}
	})
}
