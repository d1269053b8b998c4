package store_test

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/store"
)

// TestAwaitingFanout: an event with a fanout job awaits fanout until it is
// marked fanned out; a fanout sees the owner's waiting events oldest first,
// without the one it runs for, up to a limit, with their jobs' ids.
func TestAwaitingFanout(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		s.owner("beta")
		var ids []string
		for i := range 4 {
			ids = append(ids, s.awaiting("acme", int64(100+i)).ID)
		}
		s.event("acme") // no fanout job: an internal event, or from before
		s.awaiting("beta", 200)

		evs, js, err := s.q.AwaitingFanout(s.ctx, "acme", ids[0], 2)
		must(t, err)
		if len(evs) != 2 || evs[0].ID != ids[1] || evs[1].ID != ids[2] || !slices.Equal(js, []int64{101, 102}) {
			t.Fatalf("awaiting = %v %v; want %v with jobs 101, 102", eventIDs(evs), js, ids[1:3])
		}
		if evs[0].OwnerID != "acme" || evs[0].Type == "" || len(evs[0].Data) == 0 {
			t.Fatalf("event not read whole: %+v", evs[0])
		}
		must(t, s.q.MarkFannedOut(s.ctx, ids[:3], ""))
		evs, js, err = s.q.AwaitingFanout(s.ctx, "acme", "", 10)
		must(t, err)
		if len(evs) != 1 || evs[0].ID != ids[3] || js[0] != 103 {
			t.Fatalf("after marking: awaiting %v %v; want only %s", eventIDs(evs), js, ids[3])
		}
		must(t, s.q.MarkFannedOut(s.ctx, nil, ""))
	})
}

// TestAwaitingFanoutConcurrent: fanouts of one owner taking waiting events
// along at once, each in its own transaction, never take the same event.
func TestAwaitingFanoutConcurrent(t *testing.T) {
	t.Parallel()
	const fanouts, events = 4, 40
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		for i := range events {
			s.awaiting("acme", int64(i+1))
		}
		var mu sync.Mutex
		taken := map[string]int{}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range fanouts {
			wg.Go(func() {
				<-start
				for {
					var got []*event.Event
					err := s.db.InTx(s.ctx, store.TxOptions{}, func(tx *store.Q) error {
						var err error
						if got, _, err = tx.AwaitingFanout(s.ctx, "acme", "", 3); err != nil {
							return err
						}
						time.Sleep(time.Millisecond) // hold the rows a moment, as a fanout does
						return tx.MarkFannedOut(s.ctx, eventIDs(got), "")
					})
					if err != nil {
						t.Errorf("fanout: %v", err)
						return
					}
					if len(got) == 0 {
						return
					}
					mu.Lock()
					for _, e := range got {
						taken[e.ID]++
					}
					mu.Unlock()
				}
			})
		}
		close(start)
		wg.Wait()
		if len(taken) != events {
			t.Fatalf("%d of %d events fanned out", len(taken), events)
		}
		for id, n := range taken {
			if n != 1 {
				t.Fatalf("event %s taken by %d fanouts", id, n)
			}
		}
	})
}

func eventIDs(evs []*event.Event) []string {
	return pluck(evs, func(e *event.Event) string { return e.ID })
}

// TestInsertEvents: a batch is written a few hundred per statement; an
// idempotency key used before, or earlier in the same batch, writes
// nothing and answers with the first event's id. The same holds when the
// last statement goes out with COMMIT (InsertEventsAndCommit in a
// foreground transaction: on PostgreSQL the repeated keys of the last
// statement are read after the commit).
func TestInsertEvents(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		insert func(s *bundle, evs []*event.Event) ([]store.Inserted, error)
	}{
		{"InsertEvents", func(s *bundle, evs []*event.Event) ([]store.Inserted, error) { return s.q.InsertEvents(s.ctx, evs) }},
		{"InsertEventsAndCommit", func(s *bundle, evs []*event.Event) (res []store.Inserted, err error) {
			err = s.db.InTx(s.ctx, store.TxOptions{Foreground: true}, func(q *store.Q) error {
				res, err = q.InsertEventsAndCommit(s.ctx, evs)
				return err
			})
			return res, err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			setup(t, func(t *testing.T, s *bundle) { testInsertEvents(t, s, c.insert) })
		})
	}
}

func testInsertEvents(t *testing.T, s *bundle, insert func(s *bundle, evs []*event.Event) ([]store.Inserted, error)) {
	s.owner("acme")
	earlier := newEvent("acme", "k-old", t0)
	if _, _, err := s.q.InsertEvent(s.ctx, earlier); err != nil {
		t.Fatal(err)
	}
	var evs []*event.Event
	for i := range 450 { // three statements
		key := ""
		switch i {
		case 10, 300:
			key = "k-new" // 300 repeats 10, in another statement
		case 20, 420:
			key = "k-old" // 420: in the last statement
		case 30, 440:
			key = "k-last" // 440 repeats 30 from the last statement
		}
		evs = append(evs, newEvent("acme", key, t0.Add(time.Duration(i)*time.Millisecond)))
	}
	res, err := insert(s, evs)
	must(t, err)
	if len(res) != len(evs) {
		t.Fatalf("%d results for %d events", len(res), len(evs))
	}
	for i, r := range res {
		want := store.Inserted{ID: evs[i].ID, Inserted: true}
		switch i {
		case 300:
			want = store.Inserted{ID: evs[10].ID}
		case 20, 420:
			want = store.Inserted{ID: earlier.ID}
		case 440:
			want = store.Inserted{ID: evs[30].ID}
		}
		if r != want {
			t.Fatalf("event %d: %+v, want %+v", i, r, want)
		}
	}
	if n := s.count(`SELECT count(*) FROM hookd_events`); n != 1+450-4 {
		t.Fatalf("%d events stored, want %d", n, 1+450-4)
	}
}

// TestForegroundTransaction: the API's own transaction (BEGIN sent with
// its first statement, COMMIT with InsertEventsAndCommit's) is all or
// nothing like any other: River's jobs inserted in it go when it fails
// after them, a failed first statement leaves nothing behind and the next
// transaction runs, and on PostgreSQL the events are committed, visible
// to other connections, as soon as InsertEventsAndCommit returns.
func TestForegroundTransaction(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		if _, err := s.db.NewRiver(&river.Config{}); err != nil {
			t.Fatal(err)
		}
		readThenJob := func(q *store.Q) error {
			if _, err := q.ReadPublishRules(s.ctx, []store.OwnerType{{Owner: "acme", Type: "invoice.paid"}}, nil); err != nil {
				return err
			}
			_, err := q.InsertJobs(s.ctx, []river.InsertManyParams{{Args: outboxArgs{EventID: "e"}}})
			return err
		}
		failed := errors.New("the caller's own failure")
		if err := s.db.InTx(s.ctx, store.TxOptions{Foreground: true}, func(q *store.Q) error {
			if err := readThenJob(q); err != nil {
				return err
			}
			return failed
		}); !errors.Is(err, failed) {
			t.Fatalf("InTx(Foreground) = %v, want the function's error", err)
		}
		if n := s.count(`SELECT count(*) FROM river_job`); n != 0 {
			t.Fatalf("%d jobs after a rolled-back transaction", n)
		}

		s.exec(`ALTER TABLE hookd_event_types RENAME TO hookd_event_types_away`)
		if err := s.db.InTx(s.ctx, store.TxOptions{Foreground: true}, readThenJob); err == nil {
			t.Fatal("a failing first statement: no error")
		}
		s.exec(`ALTER TABLE hookd_event_types_away RENAME TO hookd_event_types`)

		ev := newEvent("acme", "", t0)
		must(t, s.db.InTx(s.ctx, store.TxOptions{Foreground: true}, func(q *store.Q) error {
			if err := readThenJob(q); err != nil {
				return err
			}
			if _, err := q.InsertEventsAndCommit(s.ctx, []*event.Event{ev}); err != nil {
				return err
			}
			if s.db.Pool() != nil { // SQLite commits when the function returns, on its one connection
				if n := s.count(`SELECT count(*) FROM hookd_events WHERE id = $1`, ev.ID); n != 1 {
					t.Errorf("after InsertEventsAndCommit another connection sees %d events; want 1", n)
				}
			}
			return nil
		}))
		if n := s.count(`SELECT count(*) FROM river_job`); n != 1 {
			t.Fatalf("%d jobs after the committed transaction; want 1", n)
		}

		// Whole statements: the last one still carries the COMMIT.
		for _, n := range []int{200, 400} {
			evs := make([]*event.Event, n)
			for i := range evs {
				evs[i] = newEvent("acme", "", t0.Add(time.Duration(i)*time.Microsecond))
			}
			var res []store.Inserted
			must(t, s.db.InTx(s.ctx, store.TxOptions{Foreground: true}, func(q *store.Q) (err error) {
				res, err = q.InsertEventsAndCommit(s.ctx, evs)
				return err
			}))
			if len(res) != n || s.count(`SELECT count(*) FROM hookd_events WHERE id = $1`, evs[n-1].ID) != 1 {
				t.Fatalf("%d events in whole statements: %d answers, the last stored: %v", n, len(res), s.count(`SELECT count(*) FROM hookd_events WHERE id = $1`, evs[n-1].ID))
			}
		}
	})
}

// TestLockEvent: a fanout that finds its event held by another fanout's
// transaction is told so at once (PostgreSQL) instead of waiting; SQLite
// has one writer at a time, so the event is always its own.
func TestLockEvent(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		e := s.event("acme")
		ok, err := s.q.LockEvent(s.ctx, e.ID)
		must(t, err)
		if !ok {
			t.Fatal("a free event was not locked")
		}
		if s.db.Pool() == nil {
			return
		}
		release := s.holdEvent(e.ID)
		must(t, s.db.InTx(s.ctx, store.TxOptions{}, func(tx *store.Q) error {
			ok, err := tx.LockEvent(s.ctx, e.ID)
			if err == nil && ok {
				t.Error("an event another transaction holds was locked again")
			}
			return err
		}))
		release()
	})
}

// holdEvent locks the event in a transaction of its own (PostgreSQL)
// until release is called, which ends that transaction.
func (s *bundle) holdEvent(id string) (release func()) {
	held, end, done := make(chan struct{}), make(chan struct{}), make(chan error)
	go func() {
		done <- s.db.InTx(s.ctx, store.TxOptions{}, func(tx *store.Q) error {
			if ok, err := tx.LockEvent(s.ctx, id); err != nil || !ok {
				s.t.Errorf("first lock: ok %v err %v", ok, err)
			}
			close(held)
			<-end
			return nil
		})
	}()
	<-held
	return func() {
		close(end)
		must(s.t, <-done)
	}
}

// TestReadForFanout: the fanout's reads before its transaction, in one
// round trip on PostgreSQL, answer what GetEvent, GetOwner,
// ListEndpoints (enabled only) and ScopedTypes answer one after another;
// an event gone is a NotFound.
func TestReadForFanout(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		s.owner("other")
		must(t, s.q.PutEventType(s.ctx, &event.Type{OwnerID: "acme", Name: "invoice.paid", Exposure: event.Webhook, Scoped: true, CreatedAt: t0}))
		must(t, s.q.PutEventType(s.ctx, &event.Type{OwnerID: "other", Name: "order.paid", Exposure: event.Webhook, Scoped: true, CreatedAt: t0}))
		on, off := s.endpoint("acme", 1), s.endpoint("acme", 1)
		off.Enabled, off.DisabledReason = false, "disabled by owner"
		must(t, s.db.InTx(s.ctx, store.TxOptions{}, func(q *store.Q) error { return q.UpdateEndpoint(s.ctx, off) }))
		s.endpoint("other", 1)
		ev := s.event("acme")

		got, err := s.q.ReadForFanout(s.ctx, ev.ID)
		must(t, err)
		if got.Event.ID != ev.ID || got.Event.Type != ev.Type || string(got.Event.Data) != string(ev.Data) || !got.Event.CreatedAt.Equal(ev.CreatedAt) {
			t.Errorf("event %+v, want %+v", got.Event, ev)
		}
		if got.Owner.ID != "acme" || got.Owner.Attributes["app"] != "acme" {
			t.Errorf("owner %+v, want acme", got.Owner)
		}
		if len(got.Endpoints) != 1 || got.Endpoints[0].ID != on.ID || got.Endpoints[0].URL != on.URL || !got.Endpoints[0].Enabled {
			t.Errorf("endpoints %v, want acme's enabled one %s", pluck(got.Endpoints, func(e *endpoint.Endpoint) string { return e.ID }), on.ID)
		}
		if len(got.Scoped) != 1 || !got.Scoped["invoice.paid"] {
			t.Errorf("scoped types %v, want acme's invoice.paid only", got.Scoped)
		}

		_, err = s.q.ReadForFanout(s.ctx, "evt_gone")
		wantCode(t, err, apperr.NotFound)
	})
}

// TestTakeForFanout: a fanout transaction's first reads (in one round
// trip on PostgreSQL, BEGIN included) answer what LockEvent,
// EndpointsWithDelivery, AwaitingFanout, ScopedTypes and BusyEndpoints
// answer one after another, and the transaction goes on after them; an
// event another transaction holds is not Locked (PostgreSQL).
func TestTakeForFanout(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		s.owner("other")
		must(t, s.q.PutEventType(s.ctx, &event.Type{OwnerID: "acme", Name: "invoice.paid", Exposure: event.Webhook, Scoped: true, CreatedAt: t0}))
		delivered, busy, idle := s.endpoint("acme", 1), s.endpoint("acme", 1), s.endpoint("acme", 2)
		now, until := ts(t0), ts(t0.Add(20*time.Second))
		if _, ok, err := s.q.TakeLease(s.ctx, busy.ID, 1, now, until); err != nil || !ok {
			t.Fatalf("take lease: %v %v", ok, err)
		}
		if _, ok, err := s.q.TakeLease(s.ctx, idle.ID, 2, now, until); err != nil || !ok { // one of two slots
			t.Fatalf("take lease: %v %v", ok, err)
		}
		ev := s.awaiting("acme", 7)
		s.deliveries(newDelivery("acme", delivered.ID, ev.ID, t0))
		along := []*event.Event{s.awaiting("acme", 8), s.awaiting("acme", 9), s.awaiting("acme", 10)}
		s.awaiting("other", 11)
		s.event("acme") // fanned out already
		ids := []string{delivered.ID, busy.ID, idle.ID}

		var take *store.FanoutTake
		must(t, s.db.InTx(s.ctx, store.TxOptions{Relaxed: true}, func(q *store.Q) (err error) {
			if take, err = q.TakeForFanout(s.ctx, ev.ID, "acme", ids, 2, now); err != nil {
				return err
			}
			return q.MarkFannedOut(s.ctx, []string{ev.ID}, "") // the transaction goes on
		}))
		if !take.Locked {
			t.Fatal("a free event was not locked")
		}
		if len(take.Have) != 1 || !take.Have[delivered.ID] {
			t.Errorf("have %v, want only %s", take.Have, delivered.ID)
		}
		if got := pluck(take.Others, func(e *event.Event) string { return e.ID }); len(got) != 2 || got[0] != along[0].ID || got[1] != along[1].ID {
			t.Errorf("others %v, want the owner's two oldest awaiting %s %s", got, along[0].ID, along[1].ID)
		}
		if len(take.OtherJobs) != 2 || take.OtherJobs[0] != 8 || take.OtherJobs[1] != 9 {
			t.Errorf("other jobs %v, want [8 9]", take.OtherJobs)
		}
		if len(take.Scoped) != 1 || !take.Scoped["invoice.paid"] {
			t.Errorf("scoped %v, want invoice.paid", take.Scoped)
		}
		if len(take.Busy) != 1 || !take.Busy[busy.ID] {
			t.Errorf("busy %v, want only %s", take.Busy, busy.ID)
		}
		if n := s.count(`SELECT count(*) FROM hookd_events WHERE id = $1 AND fanout_job = 0`, ev.ID); n != 1 {
			t.Fatal("the transaction's write after its reads did not commit")
		}
		// No endpoints: only the event and the others are read.
		must(t, s.db.InTx(s.ctx, store.TxOptions{Relaxed: true}, func(q *store.Q) (err error) {
			take, err = q.TakeForFanout(s.ctx, ev.ID, "acme", nil, 10, now)
			return err
		}))
		if !take.Locked || len(take.Have) != 0 || len(take.Busy) != 0 || len(take.Others) != 3 {
			t.Errorf("without endpoints: %+v, want locked, 3 others, nothing else", take)
		}

		if s.db.Pool() == nil {
			return
		}
		release := s.holdEvent(ev.ID)
		must(t, s.db.InTx(s.ctx, store.TxOptions{Relaxed: true}, func(q *store.Q) (err error) {
			take, err = q.TakeForFanout(s.ctx, ev.ID, "acme", ids, 2, now)
			return err
		}))
		release()
		if take.Locked {
			t.Error("an event another transaction holds was locked again")
		}
	})
}
