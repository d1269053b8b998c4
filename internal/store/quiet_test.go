package store_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/store"
)

// InsertQuietEventsAndCommit writes a group commit's events in one round
// trip only if the rules it reads in that statement are the ones expected
// (quiet.go). These tests prove the statement writes when they are, and
// writes nothing when any one of them is not, leaving the transaction
// able to go on the usual way.

// quietBundle is an owner acme with a webhook type invoice.paid, an API
// key, and the Expected of that type as the rules' read answers it.
func quietBundle(t *testing.T) (*bundle, []store.Expected) {
	s := newBundle(t, dbtest.Open(t, dbtest.Postgres(t)))
	s.owner("acme")
	must(t, s.q.PutEventType(s.ctx, &event.Type{OwnerID: "acme", Name: "invoice.paid", Exposure: event.Webhook, CreatedAt: t0}))
	must(t, s.q.CreateAPIKey(s.ctx, &owner.APIKey{ID: "key_a", OwnerID: "acme", Role: owner.Publisher, Hash: owner.HashKey("a"), Prefix: "hkd_a", CreatedAt: t0}))
	k := store.OwnerType{Owner: "acme", Type: "invoice.paid"}
	read, err := s.q.ReadPublishRules(s.ctx, []store.OwnerType{k}, nil)
	must(t, err)
	return s, []store.Expected{{OwnerType: k, Rule: read.Of[k]}}
}

// insertQuiet runs InsertQuietEventsAndCommit as a group commit does, then
// (not held) then's statements in what follows of the transaction.
func (s *bundle) insertQuiet(evs []*event.Event, expect []store.Expected, keys []string, then func(q *store.Q) error) (res []store.Inserted, held bool, err error) {
	err = s.db.InTxForeground(s.ctx, func(q *store.Q) error {
		if !q.CanInsertQuiet() {
			s.t.Fatal("a fresh foreground transaction on PostgreSQL cannot send the one-round-trip insert")
		}
		var err error
		if res, held, err = q.InsertQuietEventsAndCommit(s.ctx, evs, expect, keys); err != nil || held {
			return err
		}
		if then != nil {
			return then(q)
		}
		return nil
	})
	return res, held, err
}

// TestInsertQuietHeld: with the rules as expected the events are written
// and committed in the one statement, a repeated idempotency key answered
// with the earlier event's id, as InsertEvents answers it.
func TestInsertQuietHeld(t *testing.T) {
	t.Parallel()
	s, expect := quietBundle(t)
	earlier := newEvent("acme", "k1", t0)
	_, err := s.q.InsertEvents(s.ctx, []*event.Event{earlier})
	must(t, err)
	a, again := newEvent("acme", "", t0), newEvent("acme", "k1", t0)
	res, held, err := s.insertQuiet([]*event.Event{a, again}, expect, []string{"key_a"}, nil)
	must(t, err)
	if !held {
		t.Fatal("the rules are as expected, but the insert did not hold")
	}
	want := []store.Inserted{{ID: a.ID, Inserted: true}, {ID: earlier.ID, Inserted: false}}
	if len(res) != 2 || res[0] != want[0] || res[1] != want[1] {
		t.Fatalf("inserted %v, want %v", res, want)
	}
	if n := s.count(`SELECT count(*) FROM hookd_events WHERE owner_id = 'acme'`); n != 2 {
		t.Errorf("%d events stored, want 2 (the earlier one and a)", n)
	}
	got, err := s.q.GetEvent(s.ctx, "acme", a.ID)
	must(t, err)
	if got.Type != a.Type || got.Subject != a.Subject || string(got.Data) != string(a.Data) || !got.OccurredAt.Equal(a.OccurredAt) || !got.CreatedAt.Equal(a.CreatedAt) {
		t.Errorf("stored %+v, want %+v", got, a)
	}
}

// TestInsertQuietMisses: each way the rules can differ from what was
// expected writes nothing, and the transaction goes on: a statement after
// the miss runs in a new transaction, which a failure rolls back.
func TestInsertQuietMisses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(s *bundle, expect []store.Expected) ([]store.Expected, []string)
	}{
		{"an endpoint enabled", func(s *bundle, expect []store.Expected) ([]store.Expected, []string) {
			s.endpoint("acme", 1)
			return expect, nil
		}},
		{"the schema changed", func(s *bundle, expect []store.Expected) ([]store.Expected, []string) {
			must(s.t, s.q.PutEventType(s.ctx, &event.Type{OwnerID: "acme", Name: "invoice.paid", Exposure: event.Webhook, Schema: []byte(`{"type":"object"}`), SchemaHash: "h2", CreatedAt: t0}))
			return expect, nil
		}},
		{"the exposure changed", func(s *bundle, expect []store.Expected) ([]store.Expected, []string) {
			must(s.t, s.q.PutEventType(s.ctx, &event.Type{OwnerID: "acme", Name: "invoice.paid", Exposure: event.Internal, CreatedAt: t0}))
			return expect, nil
		}},
		{"the type registered since", func(s *bundle, expect []store.Expected) ([]store.Expected, []string) {
			return []store.Expected{{OwnerType: expect[0].OwnerType, Rule: store.Rule{Exposure: event.Internal}}}, nil
		}},
		{"the owner deleted", func(s *bundle, expect []store.Expected) ([]store.Expected, []string) {
			must(s.t, s.db.InTx(s.ctx, func(q *store.Q) error { return q.DeleteOwner(s.ctx, "acme") }))
			return expect, nil
		}},
		{"the key revoked", func(s *bundle, expect []store.Expected) ([]store.Expected, []string) {
			must(s.t, s.q.RevokeAPIKey(s.ctx, "acme", "key_a", t0.UnixMicro()))
			return expect, []string{"key_a"}
		}},
		{"a key unknown", func(s *bundle, expect []store.Expected) ([]store.Expected, []string) {
			return expect, []string{"key_a", "key_gone"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, expect := quietBundle(t)
			expect, keys := tc.change(s, expect)
			rolledBack := errors.New("roll back")
			after := newEvent("acme", "", t0)
			_, held, err := s.insertQuiet([]*event.Event{newEvent("acme", "", t0)}, expect, keys, func(q *store.Q) error {
				if _, err := q.InsertEvents(s.ctx, []*event.Event{after}); err != nil {
					return err
				}
				return rolledBack
			})
			if !errors.Is(err, rolledBack) {
				t.Fatalf("err = %v, want the transaction after the miss to fail with %v", err, rolledBack)
			}
			if held {
				t.Fatal("the insert held although the rules differ from what was expected")
			}
			if n := s.count(`SELECT count(*) FROM hookd_events`); n != 0 {
				t.Errorf("%d events stored, want none: the miss writes nothing, and the insert after it was rolled back", n)
			}
		})
	}
}

// TestInsertQuietSQLite: SQLite has no round trips to save; nothing is
// sent and nothing written, and the caller goes the usual way.
func TestInsertQuietSQLite(t *testing.T) {
	t.Parallel()
	s := newBundle(t, dbtest.Open(t, dbtest.SQLite(t)))
	s.owner("acme")
	k := store.OwnerType{Owner: "acme", Type: "invoice.paid"}
	must(t, s.db.InTxForeground(s.ctx, func(q *store.Q) error {
		if q.CanInsertQuiet() {
			t.Error("SQLite offers the one-round-trip insert")
		}
		_, held, err := q.InsertQuietEventsAndCommit(s.ctx, []*event.Event{newEvent("acme", "", t0)}, []store.Expected{{OwnerType: k, Rule: store.Rule{Exposure: event.Internal}}}, nil)
		if held || err != nil {
			t.Errorf("held %v, err %v; want false, nil", held, err)
		}
		return nil
	}))
	if n := s.count(`SELECT count(*) FROM hookd_events`); n != 0 {
		t.Errorf("%d events stored, want none", n)
	}
}

// TestQuietInsertWaitsForOwnerDelete: the statement locks the owner's row
// as the rules' read does, so while the owner's delete is uncommitted the
// insert waits for it, then finds the owner gone and writes nothing.
func TestQuietInsertWaitsForOwnerDelete(t *testing.T) {
	t.Parallel()
	s, expect := quietBundle(t)
	deleting := make(chan struct{})
	release := make(chan struct{})
	var released sync.Once
	defer released.Do(func() { close(release) })
	deleted := make(chan error, 1)
	go func() {
		deleted <- s.db.InTx(s.ctx, func(q *store.Q) error {
			if err := q.DeleteOwner(s.ctx, "acme"); err != nil {
				return err
			}
			close(deleting)
			<-release
			return nil
		})
	}()
	<-deleting
	type result struct {
		held bool
		err  error
	}
	inserted := make(chan result, 1)
	go func() {
		_, held, err := s.insertQuiet([]*event.Event{newEvent("acme", "", t0)}, expect, nil, nil)
		inserted <- result{held, err}
	}()
	// The insert waits on the delete's lock of the owner's row.
	s.waitBlocked("WITH k(o, n, x, h)", "the insert", func() {
		select {
		case r := <-inserted:
			t.Fatalf("the insert finished (held %v, %v) while its owner's delete was open: it did not wait for the delete's lock", r.held, r.err)
		default:
		}
	})
	released.Do(func() { close(release) })
	must(t, <-deleted)
	r := <-inserted
	must(t, r.err)
	if r.held {
		t.Error("the insert held although its owner was deleted before it")
	}
	if n := s.count(`SELECT count(*) FROM hookd_events`); n != 0 {
		t.Errorf("%d events stored for a deleted owner, want none", n)
	}
}
