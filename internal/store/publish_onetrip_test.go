package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/store"
)

// InsertExpectedAndCommit writes a group commit's events in one round
// trip only if the rules it reads in that statement are the ones expected
// (publish_onetrip.go). These tests prove the statement writes when they are, and
// writes nothing when any one of them is not, leaving the transaction
// able to go on the usual way.

// expectedBundle is an owner acme with a webhook type invoice.paid, an API
// key, and the Expected of that type as the rules' read answers it.
func expectedBundle(t *testing.T) (*bundle, []store.Expected) {
	s := newBundle(t, dbtest.Open(t, dbtest.Postgres(t)))
	s.owner("acme")
	must(t, s.q.PutEventType(s.ctx, &event.Type{OwnerID: "acme", Name: "invoice.paid", Exposure: event.Webhook, CreatedAt: t0}))
	must(t, s.q.CreateAPIKey(s.ctx, &owner.APIKey{ID: "key_a", OwnerID: "acme", Role: owner.Publisher, Hash: owner.HashKey("a"), Prefix: "hkd_a", CreatedAt: t0}))
	k := store.OwnerType{Owner: "acme", Type: "invoice.paid"}
	read, err := s.q.ReadPublishRules(s.ctx, []store.OwnerType{k}, nil)
	must(t, err)
	return s, []store.Expected{{OwnerType: k, Rule: read.Of[k]}}
}

// insertExpected runs InsertExpectedAndCommit as a group commit does, then
// (not held) then's statements in what follows of the transaction.
func (s *bundle) insertExpected(evs []*event.Event, jobs []*store.Job, expect []store.Expected, keys []string, then func(q *store.Q) error) (res []store.Inserted, held bool, err error) {
	err = s.db.InTx(s.ctx, store.TxOptions{Foreground: true}, func(q *store.Q) error {
		if !q.CanInsertExpected() {
			s.t.Fatal("a fresh foreground transaction on PostgreSQL cannot send the one-round-trip insert")
		}
		var err error
		if res, held, err = q.InsertExpectedAndCommit(s.ctx, evs, jobs, expect, keys); err != nil || held {
			return err
		}
		if then != nil {
			return then(q)
		}
		return nil
	})
	return res, held, err
}

// TestInsertExpectedHeld: with the rules as expected the events are written
// and committed in the one statement, a repeated idempotency key answered
// with the earlier event's id, as InsertEvents answers it.
func TestInsertExpectedHeld(t *testing.T) {
	t.Parallel()
	s, expect := expectedBundle(t)
	earlier := newEvent("acme", "k1", t0)
	_, err := s.q.InsertEvents(s.ctx, []*event.Event{earlier})
	must(t, err)
	a, again := newEvent("acme", "", t0), newEvent("acme", "k1", t0)
	res, held, err := s.insertExpected([]*event.Event{a, again}, nil, expect, []string{"key_a"}, nil)
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

// TestInsertExpectedMisses: each way the rules can differ from what was
// expected writes nothing, and the transaction goes on: a statement after
// the miss runs in a new transaction, which a failure rolls back.
func TestInsertExpectedMisses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(s *bundle, expect []store.Expected) ([]store.Expected, []string)
	}{
		{"an endpoint enabled", func(s *bundle, expect []store.Expected) ([]store.Expected, []string) {
			s.endpoint("acme", 1)
			return expect, nil
		}},
		{"the last endpoint disabled", func(s *bundle, expect []store.Expected) ([]store.Expected, []string) {
			ep := s.endpoint("acme", 1)
			ep.Enabled, ep.DisabledReason = false, "disabled by owner"
			must(s.t, s.db.InTx(s.ctx, store.TxOptions{}, func(q *store.Q) error { return q.UpdateEndpoint(s.ctx, ep) }))
			expect[0].Subscribed = true
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
			must(s.t, s.db.InTx(s.ctx, store.TxOptions{}, func(q *store.Q) error { return q.DeleteOwner(s.ctx, "acme") }))
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
			s, expect := expectedBundle(t)
			expect, keys := tc.change(s, expect)
			rolledBack := errors.New("roll back")
			after := newEvent("acme", "", t0)
			_, held, err := s.insertExpected([]*event.Event{newEvent("acme", "", t0)}, nil, expect, keys, func(q *store.Q) error {
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

// TestInsertExpectedSQLite: SQLite has no round trips to save; nothing is
// sent and nothing written, and the caller goes the usual way.
func TestInsertExpectedSQLite(t *testing.T) {
	t.Parallel()
	s := newBundle(t, dbtest.Open(t, dbtest.SQLite(t)))
	s.owner("acme")
	k := store.OwnerType{Owner: "acme", Type: "invoice.paid"}
	must(t, s.db.InTx(s.ctx, store.TxOptions{Foreground: true}, func(q *store.Q) error {
		if q.CanInsertExpected() {
			t.Error("SQLite offers the one-round-trip insert")
		}
		_, held, err := q.InsertExpectedAndCommit(s.ctx, []*event.Event{newEvent("acme", "", t0)}, nil, []store.Expected{{OwnerType: k, Rule: store.Rule{Exposure: event.Internal}}}, nil)
		if held || err != nil {
			t.Errorf("held %v, err %v; want false, nil", held, err)
		}
		return nil
	}))
	if n := s.count(`SELECT count(*) FROM hookd_events`); n != 0 {
		t.Errorf("%d events stored, want none", n)
	}
}

// TestExpectedInsertWaitsForOwnerDelete: the statement locks the owner's row
// as the rules' read does, so while the owner's delete is uncommitted the
// insert waits for it, then finds the owner gone and writes nothing.
func TestExpectedInsertWaitsForOwnerDelete(t *testing.T) {
	t.Parallel()
	s, expect := expectedBundle(t)
	deleting := make(chan struct{})
	release := make(chan struct{})
	var released sync.Once
	defer released.Do(func() { close(release) })
	deleted := make(chan error, 1)
	go func() {
		deleted <- s.db.InTx(s.ctx, store.TxOptions{}, func(q *store.Q) error {
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
		_, held, err := s.insertExpected([]*event.Event{newEvent("acme", "", t0)}, nil, expect, nil, nil)
		inserted <- result{held, err}
	}()
	// The insert waits on the delete's lock of the owner's row.
	s.waitBlocked("WITH k(o, n, x, h, s)", "the insert", func() {
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

// expectedJobsArgs is the job args TestInsertExpectedJobs has River work.
type expectedJobsArgs struct {
	EventID string `json:"event_id"`
}

func (expectedJobsArgs) Kind() string { return "store_test.expected" }

// workingRiver starts a River client on s's database (hookd's own, as
// NewRiver makes it) that works jobs of args' kind in queue, its poll an
// hour apart so only an insert notification wakes it, and sends what
// each job's args say (say) on worked. It returns once the producer
// listens: it has worked a warm-up job (warm) inserted through River's
// own insert.
func workingRiver[T river.JobArgs](s *bundle, queue string, warm T, say func(T) string) (store.JobClient, chan string) {
	t := s.t
	worked := make(chan string, 8)
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(func(_ context.Context, j *river.Job[T]) error {
		worked <- say(j.Args)
		return nil
	}))
	client, err := s.db.NewRiver(&river.Config{
		Queues:            map[string]river.QueueConfig{queue: {MaxWorkers: 5}},
		Workers:           workers,
		FetchPollInterval: time.Hour,
		FetchCooldown:     time.Millisecond,
	})
	must(t, err)
	must(t, client.Start(s.ctx))
	t.Cleanup(func() { must(t, client.Stop(context.Background())) })
	must(t, s.db.InTx(s.ctx, store.TxOptions{}, func(q *store.Q) error {
		_, err := q.InsertJobs(s.ctx, []river.InsertManyParams{{Args: warm, InsertOpts: &river.InsertOpts{Queue: queue}}})
		return err
	}))
	if got, want := <-worked, say(warm); got != want {
		t.Fatalf("worked %q first, want the warm-up job %q", got, want)
	}
	return client, worked
}

// awaitWorked returns what the next n jobs workingRiver works said,
// failing if they do not come within 10 s: they waited for River's poll,
// an hour apart, so no insert notification reached River's producers.
func awaitWorked(s *bundle, worked chan string, n int) map[string]bool {
	got := map[string]bool{}
	deadline := time.After(10 * time.Second)
	for len(got) < n {
		select {
		case id := <-worked:
			got[id] = true
		case <-deadline:
			s.t.Fatalf("worked %v of the %d jobs: they waited for River's poll, so the statement's notification is not what River's producers listen for", got, n)
		}
	}
	return got
}

// TestInsertExpectedJobs: to a subscribed owner, the statement writes each
// event's River job itself, as River's InsertManyTx would have (the third
// place hookd reaches past River's client, publish_onetrip.go): River's own
// client reads the job back and works it, woken by the statement's
// notification alone (its poll is an hour apart). An event repeating a
// stored idempotency key gets no job, an event without one none, and two
// events of one key in one group are not sent at all.
func TestInsertExpectedJobs(t *testing.T) {
	t.Parallel()
	s, expect := expectedBundle(t)
	s.endpoint("acme", 1)
	expect[0].Subscribed = true
	queue, worked := workingRiver(s, "expected", expectedJobsArgs{EventID: "warm-up"}, func(a expectedJobsArgs) string { return a.EventID })

	job := func(ev *event.Event) *store.Job {
		b, err := json.Marshal(expectedJobsArgs{EventID: ev.ID})
		must(t, err)
		return &store.Job{Kind: expectedJobsArgs{}.Kind(), Queue: "expected", MaxAttempts: 3, Args: b}
	}
	earlier := newEvent("acme", "k0", t0)
	_, err := s.q.InsertEvents(s.ctx, []*event.Event{earlier})
	must(t, err)

	// Two events of one key, one with a job: which one INSERT writes is
	// not known, so nothing is sent.
	twice := []*event.Event{newEvent("acme", "k2", t0), newEvent("acme", "k2", t0)}
	must(t, s.db.InTx(s.ctx, store.TxOptions{Foreground: true}, func(q *store.Q) error {
		_, held, err := q.InsertExpectedAndCommit(s.ctx, twice, []*store.Job{job(twice[0]), nil}, expect, nil)
		if held || err != nil {
			t.Errorf("one key twice: held %v, err %v; want false, nil", held, err)
		}
		if !q.CanInsertExpected() {
			t.Error("one key twice: something was sent")
		}
		return nil
	}))

	plain, keyed, repeated, internal := newEvent("acme", "", t0), newEvent("acme", "k1", t0), newEvent("acme", "k0", t0), newEvent("acme", "", t0)
	evs := []*event.Event{plain, keyed, repeated, internal}
	res, held, err := s.insertExpected(evs, []*store.Job{job(plain), job(keyed), job(repeated), nil}, expect, nil, nil)
	must(t, err)
	if !held {
		t.Fatal("the rules are as expected, but the insert did not hold")
	}
	want := []store.Inserted{{ID: plain.ID, Inserted: true}, {ID: keyed.ID, Inserted: true}, {ID: earlier.ID, Inserted: false}, {ID: internal.ID, Inserted: true}}
	for i := range want {
		if res[i] != want[i] {
			t.Fatalf("inserted %v, want %v", res, want)
		}
	}
	if plain.FanoutJob == 0 || keyed.FanoutJob == 0 || plain.FanoutJob == keyed.FanoutJob || internal.FanoutJob != 0 {
		t.Fatalf("fanout jobs %d, %d, %d; want two distinct jobs and none for the event without one", plain.FanoutJob, keyed.FanoutJob, internal.FanoutJob)
	}
	if n := s.count(`SELECT count(*) FROM river_job WHERE kind = $1`, expectedJobsArgs{}.Kind()); n != 3 {
		t.Errorf("%d jobs of the kind, want 3 (the warm-up's and two): the repeated key's event gets none", n)
	}
	for _, ev := range []*event.Event{plain, keyed, internal} {
		if n := s.count(`SELECT count(*) FROM hookd_events WHERE id = $1 AND fanout_job = $2`, ev.ID, ev.FanoutJob); n != 1 {
			t.Errorf("event %s is not stored with its fanout job %d", ev.ID, ev.FanoutJob)
		}
	}
	for _, ev := range []*event.Event{plain, keyed} {
		row, err := queue.JobGet(s.ctx, ev.FanoutJob)
		must(t, err)
		if row.Kind != (expectedJobsArgs{}).Kind() || row.Queue != "expected" || row.MaxAttempts != 3 || row.Priority != 1 || len(row.Tags) != 0 || string(row.Metadata) != "{}" {
			t.Errorf("job %d is %s in %s, %d attempts, priority %d, tags %v, metadata %s; want River's insert's row", row.ID, row.Kind, row.Queue, row.MaxAttempts, row.Priority, row.Tags, row.Metadata)
		}
	}
	got := awaitWorked(s, worked, 2)
	if !got[plain.ID] || !got[keyed.ID] {
		t.Errorf("worked %v, want the jobs of %s and %s", got, plain.ID, keyed.ID)
	}
}

// passInserts is insert middleware that does nothing but insert.
type passInserts struct{ river.MiddlewareDefaults }

func (passInserts) InsertMany(ctx context.Context, _ []*rivertype.JobInsertParams, doInner func(context.Context) ([]*rivertype.JobInsertResult, error)) ([]*rivertype.JobInsertResult, error) {
	return doInner(ctx)
}

// TestInsertExpectedJobsNeedOwnClient: with middleware on hookd's River
// client, or an application's client, the statement may not write River's
// rows (River's client would have run something on the insert): a group
// with jobs sends nothing, and goes the usual way.
func TestInsertExpectedJobsNeedOwnClient(t *testing.T) {
	t.Parallel()
	s, expect := expectedBundle(t)
	s.endpoint("acme", 1)
	expect[0].Subscribed = true
	for _, tc := range []struct {
		name   string
		client func() error
	}{
		{"middleware", func() error {
			_, err := s.db.NewRiver(&river.Config{Middleware: []rivertype.Middleware{&passInserts{}}})
			return err
		}},
		{"the application's client", func() error {
			c, err := river.NewClient(riverpgxv5.New(s.db.Pool()), &river.Config{})
			if err == nil {
				_, err = s.db.UseRiver(c)
			}
			return err
		}},
	} {
		must(t, tc.client())
		ev := newEvent("acme", "", t0)
		must(t, s.db.InTx(s.ctx, store.TxOptions{Foreground: true}, func(q *store.Q) error {
			if q.CanInsertJobs() {
				t.Errorf("%s: the store may write River's rows", tc.name)
			}
			_, held, err := q.InsertExpectedAndCommit(s.ctx, []*event.Event{ev}, []*store.Job{{Kind: "k", Queue: "q", MaxAttempts: 1, Args: []byte(`{}`)}}, expect, nil)
			if held || err != nil || !q.CanInsertExpected() {
				t.Errorf("%s: held %v, err %v, sent %v; want nothing sent", tc.name, held, err, !q.CanInsertExpected())
			}
			return nil
		}))
	}
	if n := s.count(`SELECT count(*) FROM hookd_events`); n != 0 {
		t.Errorf("%d events stored, want none", n)
	}
	must(t, func() error { _, err := s.db.NewRiver(&river.Config{}); return err }())
	must(t, s.db.InTx(s.ctx, store.TxOptions{Foreground: true}, func(q *store.Q) error {
		if !q.CanInsertJobs() {
			t.Error("hookd's own client without middleware: the store may not write River's rows")
		}
		return nil
	}))
}
