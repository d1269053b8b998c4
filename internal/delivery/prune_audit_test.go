package delivery_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/audit"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/profile"
	"github.com/hookd/hookd/internal/store"
)

// TestAuditRetention: the retention job keeps audit records for their own
// retention, a year unless configured, not the deliveries' 30 days: a
// record 31 days old outlives the deliveries' cutoff, one a year and a
// minute old is pruned, one a day younger is kept; a configured
// retention (48 hours) is used instead. Both engines.
func TestAuditRetention(t *testing.T) {
	if delivery.DefaultAuditRetention != 365*24*time.Hour || delivery.DefaultRetention >= delivery.DefaultAuditRetention {
		t.Fatalf("default audit retention %s (deliveries %s), want a year, longer than the deliveries'", delivery.DefaultAuditRetention, delivery.DefaultRetention)
	}
	const day = 24 * time.Hour
	for _, backend := range dbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			t.Parallel()
			b := openGroupBench(t, backend)
			ctx := context.Background()
			base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			for i, at := range []time.Time{base, base.Add(day), base.Add(300 * day)} {
				must(t, b.db.Q().InsertAudit(ctx, &audit.Record{ID: fmt.Sprintf("aud_%02d", i), At: at, OwnerID: "acme",
					Actor: audit.Actor{Kind: audit.KindAPIKey}, Op: "webhooks.update", Resource: "endpoint", Changes: []audit.Change{}}))
			}
			left := func() []string {
				rs, err := b.db.Q().ListAudit(ctx, store.AuditFilter{AllOwners: true, Limit: 10})
				must(t, err)
				var ids []string
				for _, r := range rs {
					ids = append(ids, r.ID)
				}
				return ids
			}
			var now time.Time
			svc := delivery.New(delivery.Config{DB: b.db, Profiles: profile.Default(), Now: func() time.Time { return now }})
			prune := func(at time.Time) {
				now = at
				if _, _, err := svc.Prune(ctx); err != nil {
					t.Fatal(err)
				}
			}
			prune(base.Add(31 * day))
			if ids := left(); len(ids) != 3 {
				t.Fatalf("after 31 days: %v left, want all 3 (the deliveries' 30 days do not apply)", ids)
			}
			prune(base.Add(365*day + time.Minute))
			if ids := left(); len(ids) != 2 || ids[1] != "aud_01" {
				t.Fatalf("a year and a minute on: %v left, want aud_02 and aud_01 (the year-old aud_00 pruned)", ids)
			}
			short := delivery.New(delivery.Config{DB: b.db, Profiles: profile.Default(), AuditRetention: 48 * time.Hour, Now: func() time.Time { return base.Add(301 * day) }})
			if _, _, err := short.Prune(ctx); err != nil {
				t.Fatal(err)
			}
			if ids := left(); len(ids) != 1 || ids[0] != "aud_02" {
				t.Fatalf("with 48 hours' retention: %v left, want aud_02", ids)
			}
		})
	}
}
