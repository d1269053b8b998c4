package store_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/audit"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/store"
)

// TestAuditRecordCommitsWithItsChange: an op's pending record is written
// by the first transaction of the op that commits, with the change, once;
// a transaction that rolls back writes neither and leaves the record to
// the next one.
func TestAuditRecordCommitsWithItsChange(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		ctx, pending := audit.Start(s.ctx, audit.Record{At: t0, Actor: audit.Actor{Kind: audit.KindCLI}, Op: "owners.create", Resource: "owner", ResourceID: "acme"}, nil)
		boom := errors.New("boom")
		err := s.db.InTx(ctx, store.TxOptions{}, func(q *store.Q) error {
			must(t, q.CreateOwner(ctx, &owner.Owner{ID: "acme", Profile: "standard", Attributes: map[string]string{}, CreatedAt: t0}))
			return boom
		})
		if !errors.Is(err, boom) || pending.Taken() || s.count(`SELECT count(*) FROM hookd_audit`) != 0 || s.count(`SELECT count(*) FROM hookd_owners`) != 0 {
			t.Fatalf("a rolled-back transaction: %v, taken %v, %d records", err, pending.Taken(), s.count(`SELECT count(*) FROM hookd_audit`))
		}
		for range 2 { // the op's second transaction writes no second record
			must(t, s.db.InTx(ctx, store.TxOptions{}, func(q *store.Q) error { return nil }))
		}
		if n := s.count(`SELECT count(*) FROM hookd_audit WHERE op = 'owners.create' AND resource_id = 'acme'`); n != 1 || !pending.Taken() {
			t.Fatalf("%d records after two commits, want 1", n)
		}
		// Without a pending record, a transaction writes none.
		must(t, s.db.InTx(s.ctx, store.TxOptions{}, func(q *store.Q) error { return nil }))
		if n := s.count(`SELECT count(*) FROM hookd_audit`); n != 1 {
			t.Fatalf("%d records, want 1", n)
		}
	})
}

// TestPruneAudit deletes records older than the cutoff, in batches, and
// keeps the rest.
func TestPruneAudit(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		cutoff := t0.Add(365 * day)
		for i := range 5 {
			at := t0.Add(time.Duration(i) * time.Hour)
			if i >= 3 {
				at = cutoff.Add(time.Duration(i) * time.Microsecond) // at or after the cutoff: kept
			}
			must(t, s.q.InsertAudit(s.ctx, &audit.Record{ID: fmt.Sprintf("aud_%02d", i), At: at, OwnerID: "acme", Actor: audit.Actor{Kind: audit.KindAPIKey}, Op: "webhooks.update", Resource: "endpoint", Changes: []audit.Change{}}))
		}
		var total int64
		for {
			n, err := s.q.PruneAudit(s.ctx, cutoff.UnixMicro(), 2)
			must(t, err)
			total += n
			if n < 2 {
				break
			}
		}
		rs, err := s.q.ListAudit(s.ctx, store.AuditFilter{OwnerID: "acme", Limit: 10})
		must(t, err)
		if total != 3 || len(rs) != 2 || rs[0].ID != "aud_04" || rs[1].ID != "aud_03" {
			t.Fatalf("pruned %d, kept %d (%v), want 3 pruned and aud_04, aud_03 kept", total, len(rs), rs)
		}
	})
}
