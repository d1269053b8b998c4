package store_test

import (
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/store"
)

// Migration 011 drops the foreign keys of events and deliveries on
// PostgreSQL; hookd does their work itself. These tests prove each part of
// it: the keys are gone there (and kept on SQLite), a publish's read of its
// rules knows a deleted owner and locks a live one, so an owner's delete
// waits for the publish and then deletes its events, and a delivery
// written for an endpoint already deleted is dropped by its job's read.

// TestHotTablesForeignKeys: PostgreSQL has no foreign keys on the two
// tables every publish and delivery writes; SQLite keeps them.
func TestHotTablesForeignKeys(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		for table, sqlite := range map[string]int{"hookd_events": 1, "hookd_deliveries": 2} {
			var n int
			if s.db.Backend == store.Postgres {
				n = s.count(`SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND conrelid = to_regclass($1)`, table)
			} else {
				n = s.count(`SELECT count(*) FROM pragma_foreign_key_list($1)`, table)
				if n != sqlite {
					t.Errorf("%s has %d foreign keys on SQLite, want %d", table, n, sqlite)
				}
				continue
			}
			if n != 0 {
				t.Errorf("%s has %d foreign keys on PostgreSQL, want none (migration 011)", table, n)
			}
		}
	})
}

// TestPublishRulesGoneOwner: the rules' read says which owners have no
// row, and a publish refuses their events with 404 instead of writing
// events nobody owns.
func TestPublishRulesGoneOwner(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		read, err := s.q.ReadPublishRules(s.ctx, []store.OwnerType{{Owner: "acme", Type: "a"}, {Owner: "acme", Type: "b"}, {Owner: "ghost", Type: "a"}}, nil)
		must(t, err)
		if !read.Gone["ghost"] || read.Gone["acme"] || len(read.Gone) != 1 {
			t.Errorf("gone owners %v; want ghost only", read.Gone)
		}
		if len(read.Of) != 3 {
			t.Errorf("%d rules read, want 3: %v", len(read.Of), read.Of)
		}
	})
}

// TestOwnerDeleteWaitsForPublish: on PostgreSQL a publish holds its owner's
// row locked until it commits, so an owner's delete begun meanwhile waits,
// then deletes the events the publish committed: no event outlives its
// owner, as with the foreign key.
func TestOwnerDeleteWaitsForPublish(t *testing.T) {
	t.Parallel()
	s := newBundle(t, dbtest.Open(t, dbtest.Postgres(t)))
	s.owner("acme")
	s.owner("kept")
	s.event("kept")
	ev := newEvent("acme", "", t0)

	locked := make(chan struct{})
	release := make(chan struct{})
	var released sync.Once
	// However the test ends, the publish's transaction ends before the
	// database closes.
	defer released.Do(func() { close(release) })
	published := make(chan error, 1)
	go func() {
		published <- s.db.InTx(s.ctx, store.TxOptions{}, func(q *store.Q) error {
			read, err := q.ReadPublishRules(s.ctx, []store.OwnerType{{Owner: "acme", Type: ev.Type}}, nil)
			if err != nil {
				return err
			}
			if read.Gone["acme"] {
				t.Error("acme is gone before its delete")
			}
			if _, err := q.InsertEvents(s.ctx, []*event.Event{ev}); err != nil {
				return err
			}
			close(locked)
			<-release
			return nil
		})
	}()
	<-locked
	deleted := make(chan error, 1)
	go func() {
		deleted <- s.db.InTx(s.ctx, store.TxOptions{}, func(q *store.Q) error { return q.DeleteOwner(s.ctx, "acme") })
	}()

	// The delete waits on the publish's lock: a backend deleting an owner,
	// blocked by the one in the publish's open transaction.
	s.waitBlocked("DELETE FROM hookd_owners", "the owner's delete", func() {
		select {
		case err := <-deleted:
			t.Fatalf("the owner's delete finished (%v) while a publish to it was open: it did not wait for the publish's lock", err)
		default:
		}
	})
	released.Do(func() { close(release) })
	must(t, <-published)
	must(t, <-deleted)
	if n := s.count(`SELECT count(*) FROM hookd_events WHERE owner_id = 'acme'`); n != 0 {
		t.Errorf("%d events of the deleted owner left; the publish committed before the delete went on, so it should have deleted them", n)
	}
	if n := s.count(`SELECT count(*) FROM hookd_events WHERE owner_id = 'kept'`); n != 1 {
		t.Errorf("%d events of the other owner, want 1", n)
	}
	read, err := s.q.ReadPublishRules(s.ctx, []store.OwnerType{{Owner: "acme", Type: ev.Type}}, nil)
	must(t, err)
	if !read.Gone["acme"] {
		t.Error("a publish after the delete does not know its owner is gone")
	}
}

// waitBlocked returns once a backend running a statement that starts
// with prefix (what, in messages) waits on a lock held by a transaction
// left open; check runs between looks, to fail the test if the statement
// ended without waiting. It fails the test after 10 s.
func (s *bundle) waitBlocked(prefix, what string, check func()) {
	s.t.Helper()
	waiting := func() int {
		return s.count(`SELECT count(*) FROM pg_stat_activity w WHERE w.wait_event_type = 'Lock' AND starts_with(w.query, $1)
			AND EXISTS (SELECT 1 FROM pg_stat_activity p WHERE p.pid = ANY (pg_blocking_pids(w.pid)) AND p.state = 'idle in transaction')`, prefix)
	}
	deadline := time.Now().Add(10 * time.Second)
	for waiting() == 0 {
		check()
		if time.Now().After(deadline) {
			s.t.Fatalf("%s neither waited on the open transaction's lock nor finished in 10 s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestOrphanDeliveryDropped: on PostgreSQL a fanout that read an endpoint
// before its delete can write a delivery after it; the delivery's job
// finds it (DeliveryPending, the read of a job that met no lease) and
// drops it, and DropOrphanDelivery leaves a live endpoint's delivery be.
func TestOrphanDeliveryDropped(t *testing.T) {
	t.Parallel()
	s := newBundle(t, dbtest.Open(t, dbtest.Postgres(t)))
	s.owner("acme")
	gone := s.endpoint("acme", 1)
	kept := s.endpoint("acme", 1)
	ev := s.event("acme")
	must(t, s.db.InTx(s.ctx, store.TxOptions{}, func(q *store.Q) error { return q.DeleteEndpoint(s.ctx, "acme", gone.ID) }))
	s.deliveries(newDelivery("acme", gone.ID, ev.ID, t0), newDelivery("acme", kept.ID, ev.ID, t0))

	must(t, s.q.DropOrphanDelivery(s.ctx, kept.ID, ev.ID))
	if pending, err := s.q.DeliveryPending(s.ctx, kept.ID, ev.ID, 0); err != nil || !pending {
		t.Fatalf("the live endpoint's delivery: pending %v, %v; want pending", pending, err)
	}
	_, err := s.q.DeliveryPending(s.ctx, gone.ID, ev.ID, 0)
	wantCode(t, err, apperr.NotFound)
	if n := s.count(`SELECT count(*) FROM hookd_deliveries WHERE endpoint_id = $1`, gone.ID); n != 0 {
		t.Errorf("%d deliveries of the deleted endpoint left after its job's read", n)
	}
	if n := s.count(`SELECT count(*) FROM hookd_deliveries WHERE endpoint_id = $1`, kept.ID); n != 1 {
		t.Errorf("%d deliveries of the live endpoint, want 1", n)
	}
}
