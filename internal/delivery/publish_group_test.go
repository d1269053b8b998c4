package delivery_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/delivery/hookstest"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/profile"
	"github.com/hookd/hookd/internal/store"
)

// publishOne publishes one event in hookd's own transaction: the group
// commit's path (delivery.Request with one event and no Tx).
func publishOne(ctx context.Context, svc *delivery.Service, ev *event.Event) (delivery.Published, error) {
	out, err := svc.Publish(ctx, delivery.Request{Events: []*event.Event{ev}})
	if err != nil {
		return delivery.Published{}, err
	}
	return out[0], nil
}

// groupBench is one engine's database with an insert-only River client, an
// owner "acme" whose type "order.paid" is webhook-exposed and who has an
// endpoint, an owner "quiet" alike but with a disabled endpoint only, and
// the engine.
type groupBench struct {
	db  *store.DB
	svc *delivery.Service
}

func eachGroupBackend(t *testing.T, fn func(t *testing.T, b groupBench)) {
	t.Helper()
	for _, e := range dbtest.Backends() {
		t.Run(e.Name, func(t *testing.T) {
			t.Parallel()
			fn(t, openGroupBench(t, e))
		})
	}
}

func openGroupBench(t testing.TB, e dbtest.Backend) groupBench {
	cfg := e.Config(t)
	cfg.MaxConns = 8
	db := dbtest.Open(t, cfg)
	if _, err := db.NewRiver(&river.Config{}); err != nil { // insert-only
		t.Fatal(err)
	}
	ctx := context.Background()
	now := time.Now()
	for _, id := range []string{"acme", "quiet"} {
		must(t, db.Q().CreateOwner(ctx, &owner.Owner{ID: id, Profile: "standard", Attributes: map[string]string{"app": id}, CreatedAt: now}))
		must(t, db.Q().PutEventType(ctx, &event.Type{OwnerID: id, Name: "order.paid", Exposure: event.Webhook, CreatedAt: now}))
	}
	// acme has an endpoint, quiet a disabled one only.
	for _, ep := range []struct {
		owner   string
		enabled bool
	}{{"acme", true}, {"quiet", false}} {
		e := &endpoint.Endpoint{ID: event.NewID("ep_", now), OwnerID: ep.owner, URL: "https://example.com/hook",
			EventTypes: []string{"*"}, SecretSealed: []byte{1}, Enabled: ep.enabled, MaxInFlight: 1, CreatedAt: now, UpdatedAt: now}
		must(t, db.InTx(ctx, store.TxOptions{}, func(q *store.Q) error { return q.CreateEndpoint(ctx, e) }))
	}
	return groupBench{db: db, svc: delivery.New(delivery.Config{DB: db, Profiles: profile.Default(), GroupMax: 8})}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantWritten checks what is really in the tables: events rows, and jobs
// fanout jobs (a duplicate's or a rolled-back publish's must not remain).
func wantWritten(t testing.TB, db *store.DB, events, jobs int) {
	t.Helper()
	if n := dbtest.Count(t, db, `SELECT count(*) FROM hookd_events`); n != events {
		t.Fatalf("%d events written; want %d", n, events)
	}
	if n := dbtest.Count(t, db, `SELECT count(*) FROM river_job WHERE kind = 'webhook.fanout'`); n != jobs {
		t.Fatalf("%d fanout jobs; want %d", n, jobs)
	}
}

func paid(key string, n int) *event.Event {
	return &event.Event{OwnerID: "acme", Type: "order.paid", Data: []byte(fmt.Sprintf(`{"n": %d}`, n)), IdempotencyKey: key}
}

// publishPaid publishes count single events of acme's (paid 0, 1, …)
// one after another and returns their ids.
func publishPaid(t testing.TB, svc *delivery.Service, count int) []string {
	t.Helper()
	ids := make([]string, count)
	for n := range count {
		p, err := publishOne(context.Background(), svc, paid("", n))
		must(t, err)
		ids[n] = p.ID
	}
	return ids
}

// held makes the engine's first group commit wait inside its transaction
// until release is called, so the publishes that arrive meanwhile queue and
// go together in the next group; queued(n) returns once n are queued.
type held struct {
	mu         sync.Mutex
	sizes      []int
	first      chan struct{} // closed when the first group is inside its transaction
	release    chan struct{}
	queued     chan int
	fail       func(group int) error // the group'th group's error (nil: none)
	onExpected *expectedGroups       // records the ExpectedGroup hook (nil: nothing)
}

func holdFirstGroup(t testing.TB, b groupBench) *held {
	h := &held{first: make(chan struct{}), release: make(chan struct{}), queued: make(chan int, 1000)}
	hookstest.Set(t, b.svc, &delivery.Hooks{
		PublishQueued: func(n int) { h.queued <- n },
		PublishGroup: func(size int) error {
			h.mu.Lock()
			h.sizes = append(h.sizes, size)
			nth := len(h.sizes)
			h.mu.Unlock()
			if nth == 1 {
				close(h.first)
				<-h.release
			}
			if h.fail != nil {
				return h.fail(nth)
			}
			return nil
		},
		ExpectedGroup: func(held bool) {
			if h.onExpected != nil {
				h.onExpected.record(held)
			}
		},
	})
	return h
}

func (h *held) waitQueued(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case got := <-h.queued:
			if got >= n {
				return
			}
		case <-deadline:
			t.Fatalf("fewer than %d publishes queued behind the held group", n)
		}
	}
}

func (h *held) groupSizes() []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]int(nil), h.sizes...)
}

type answer struct {
	pub delivery.Published
	err error
}

// publishBehindHeldGroup publishes first alone (its group held in its
// transaction), then evs concurrently, which queue behind it; it releases
// the held group once all have queued and returns every answer, first's
// last.
func publishBehindHeldGroup(t *testing.T, b groupBench, h *held, first *event.Event, evs []*event.Event) []answer {
	t.Helper()
	ctx := context.Background()
	out := make([]answer, len(evs)+1)
	var wg sync.WaitGroup
	wg.Go(func() {
		p, err := publishOne(ctx, b.svc, first)
		out[len(evs)] = answer{p, err}
	})
	<-h.first
	for i, ev := range evs {
		wg.Go(func() {
			p, err := publishOne(ctx, b.svc, ev)
			out[i] = answer{p, err}
		})
	}
	h.waitQueued(t, len(evs))
	close(h.release)
	wg.Wait()
	return out
}

// TestPublishGroupCommit: publishes arriving while a group commits go
// together in the next one (bounded by GroupMax), and each caller gets its
// own event id; every event is written once, with one fanout job.
func TestPublishGroupCommit(t *testing.T) {
	t.Parallel()
	eachGroupBackend(t, func(t *testing.T, b groupBench) {
		h := holdFirstGroup(t, b)
		var evs []*event.Event
		for i := range 12 {
			evs = append(evs, paid("", i))
		}
		answers := publishBehindHeldGroup(t, b, h, paid("", 99), evs)
		ids := map[string]bool{}
		for i, a := range answers {
			if a.err != nil || a.pub.ID == "" || a.pub.Duplicate || a.pub.Exposure != event.Webhook {
				t.Fatalf("caller %d: %+v, %v; want its own new webhook event", i, a.pub, a.err)
			}
			ids[a.pub.ID] = true
		}
		if len(ids) != 13 {
			t.Fatalf("%d distinct ids for 13 callers", len(ids))
		}
		// The held group alone, then the 12 queued in groups of at most 8.
		if got := h.groupSizes(); len(got) != 3 || got[0] != 1 || got[1] != 8 || got[2] != 4 {
			t.Fatalf("group sizes %v; want [1 8 4]", got)
		}
		for i, a := range answers[:12] {
			got, err := b.db.Q().GetEvent(context.Background(), "acme", a.pub.ID)
			must(t, err)
			if string(got.Data) != fmt.Sprintf(`{"n":%d}`, i) {
				t.Fatalf("caller %d's id %s holds %s: answered with another caller's event", i, a.pub.ID, got.Data)
			}
		}
		wantWritten(t, b.db, 13, 13)
	})
}

// TestPublishGroupIdempotency: two callers of one group with one key are
// answered as if one came after the other (one event, the other a
// duplicate of it), and a later group's caller with that key too.
func TestPublishGroupIdempotency(t *testing.T) {
	t.Parallel()
	eachGroupBackend(t, func(t *testing.T, b groupBench) {
		h := holdFirstGroup(t, b)
		evs := []*event.Event{paid("k-same", 1), paid("k-same", 2), paid("k-other", 3), paid("k-first", 4)}
		answers := publishBehindHeldGroup(t, b, h, paid("k-first", 0), evs)
		for _, a := range answers {
			must(t, a.err)
		}
		a, c := answers[0].pub, answers[1].pub
		if a.ID != c.ID || a.Duplicate == c.Duplicate {
			t.Fatalf("one key in one group: %+v and %+v; want one event and one duplicate of it", a, c)
		}
		if answers[2].pub.Duplicate || answers[2].pub.ID == a.ID {
			t.Fatalf("another key: %+v", answers[2].pub)
		}
		// k-first was committed by the held group before this one.
		if first, again := answers[4].pub, answers[3].pub; first.Duplicate || !again.Duplicate || again.ID != first.ID {
			t.Fatalf("key of an earlier group: first %+v, again %+v; want the earlier id, duplicate", first, again)
		}
		if got := h.groupSizes(); len(got) != 2 || got[1] != 4 {
			t.Fatalf("group sizes %v; want [1 4]", got)
		}
		// Across groups, after the fact.
		again, err := publishOne(context.Background(), b.svc, paid("k-same", 5))
		must(t, err)
		if !again.Duplicate || again.ID != a.ID {
			t.Fatalf("key of an earlier group, later: %+v; want duplicate of %s", again, a.ID)
		}
		wantWritten(t, b.db, 3, 3)
	})
}

// TestPublishGroupInvalidEvent: an invalid event among concurrent valid
// ones fails only its own caller, before it joins any group.
func TestPublishGroupInvalidEvent(t *testing.T) {
	t.Parallel()
	eachGroupBackend(t, func(t *testing.T, b groupBench) {
		h := holdFirstGroup(t, b)
		bad := &event.Event{OwnerID: "acme", Type: "order.paid", Data: []byte(`[1, 2]`)}
		testType := &event.Event{OwnerID: "acme", Type: "webhook.test"} // a test event is sent, not published
		var wg sync.WaitGroup
		var badErr error
		evs := []*event.Event{paid("", 1), paid("", 2), paid("", 3)}
		var answers []answer
		wg.Go(func() { answers = publishBehindHeldGroup(t, b, h, paid("", 0), evs) })
		<-h.first
		_, badErr = publishOne(context.Background(), b.svc, bad) // answered while the group is still held
		_, testErr := publishOne(context.Background(), b.svc, testType)
		wg.Wait()
		if apperr.CodeOf(testErr) != apperr.Invalid {
			t.Fatalf("test event type: err = %v; want invalid", testErr)
		}
		if apperr.CodeOf(badErr) != apperr.Invalid {
			t.Fatalf("invalid event: err = %v; want invalid", badErr)
		}
		for i, a := range answers {
			if a.err != nil {
				t.Fatalf("valid caller %d failed beside an invalid one: %v", i, a.err)
			}
		}
		wantWritten(t, b.db, 4, 4)
	})
}

// TestPublishGroupFailureFallsBack: when the shared transaction fails, its
// callers are each retried alone, so each gets its own result and nothing
// of the failed transaction remains.
func TestPublishGroupFailureFallsBack(t *testing.T) {
	t.Parallel()
	eachGroupBackend(t, func(t *testing.T, b groupBench) {
		h := holdFirstGroup(t, b)
		h.fail = func(group int) error {
			if group == 2 {
				return errors.New("the shared transaction failed")
			}
			return nil
		}
		evs := []*event.Event{paid("", 1), paid("k", 2), paid("k", 3)}
		answers := publishBehindHeldGroup(t, b, h, paid("", 0), evs)
		for i, a := range answers {
			if a.err != nil {
				t.Fatalf("caller %d got the group's failure: %v", i, a.err)
			}
		}
		if answers[1].pub.ID != answers[2].pub.ID || answers[1].pub.Duplicate == answers[2].pub.Duplicate {
			t.Fatalf("one key, retried alone: %+v, %+v; want one event and its duplicate", answers[1].pub, answers[2].pub)
		}
		wantWritten(t, b.db, 3, 3)
	})
}

// TestPublishGroupDatabaseError: a database error reaches every caller of
// the group (each retried alone meets it too), and nothing is half-written:
// no fanout job is left without its event.
func TestPublishGroupDatabaseError(t *testing.T) {
	t.Parallel()
	eachGroupBackend(t, func(t *testing.T, b groupBench) {
		dbtest.Exec(t, b.db, `ALTER TABLE hookd_events RENAME TO hookd_events_away`)
		h := holdFirstGroup(t, b)
		answers := publishBehindHeldGroup(t, b, h, paid("", 0), []*event.Event{paid("", 1), paid("k", 2), paid("", 3)})
		for i, a := range answers {
			if a.err == nil || apperr.CodeOf(a.err) == apperr.Invalid {
				t.Fatalf("caller %d: %+v, %v; want the database's error", i, a.pub, a.err)
			}
		}
		if got := h.groupSizes(); len(got) != 2 || got[1] != 3 {
			t.Fatalf("group sizes %v; want [1 3]", got)
		}
		dbtest.Exec(t, b.db, `ALTER TABLE hookd_events_away RENAME TO hookd_events`)
		wantWritten(t, b.db, 0, 0)
		// The engine recovers with the database.
		p, err := publishOne(context.Background(), b.svc, paid("k", 4))
		if err != nil || p.Duplicate {
			t.Fatalf("after repair: %+v, %v", p, err)
		}
	})
}

// TestPublishGroupCommitFailure: the group's events go out with its
// COMMIT in one round trip (PostgreSQL); when the COMMIT itself fails, every
// caller of the group gets that failure and none is published again alone
// (a failed commit's outcome is unknown), and nothing is half-written. A
// deferred constraint trigger makes the COMMIT, not the INSERT, fail.
func TestPublishGroupCommitFailure(t *testing.T) {
	t.Parallel()
	b := openGroupBench(t, dbtest.Backend{Name: "postgres", Config: dbtest.Postgres}) // a deferred trigger: PostgreSQL only
	dbtest.Exec(t, b.db, `CREATE FUNCTION refuse_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.subject = 'refused-at-commit' THEN RAISE EXCEPTION 'refused at commit'; END IF; RETURN NULL; END $$`)
	dbtest.Exec(t, b.db, `CREATE CONSTRAINT TRIGGER refuse_at_commit AFTER INSERT ON hookd_events
		DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refuse_at_commit()`)
	h := holdFirstGroup(t, b)
	refused := paid("", 2)
	refused.Subject = "refused-at-commit"
	answers := publishBehindHeldGroup(t, b, h, paid("", 0), []*event.Event{paid("", 1), refused, paid("k", 3)})
	if a := answers[3]; a.err != nil {
		t.Fatalf("the held group's caller: %v", a.err)
	}
	for i, a := range answers[:3] {
		if a.err == nil || !strings.Contains(a.err.Error(), "refused at commit") {
			t.Fatalf("caller %d: %+v, %v; want the COMMIT's failure", i, a.pub, a.err)
		}
	}
	if got := h.groupSizes(); len(got) != 2 || got[1] != 3 {
		t.Fatalf("group sizes %v; want [1 3]", got)
	}
	wantWritten(t, b.db, 1, 1) // the held group's event and its job only
	// The connection's failed transaction was ended: the next publish
	// commits.
	p, err := publishOne(context.Background(), b.svc, paid("k", 4))
	if err != nil || p.Duplicate {
		t.Fatalf("after the failed commit: %+v, %v", p, err)
	}
	wantWritten(t, b.db, 2, 2)
}

// TestPublishOneAlone: a lone publisher is not held back: its group is
// itself, committed at once.
func TestPublishOneAlone(t *testing.T) {
	t.Parallel()
	eachGroupBackend(t, func(t *testing.T, b groupBench) {
		var sizes []int
		hookstest.Set(t, b.svc, &delivery.Hooks{PublishGroup: func(n int) error { sizes = append(sizes, n); return nil }})
		for i := range 3 {
			p, err := publishOne(context.Background(), b.svc, paid(fmt.Sprint("solo-", i), i))
			must(t, err)
			got, err := b.db.Q().GetEvent(context.Background(), "acme", p.ID)
			must(t, err)
			if got.IdempotencyKey != fmt.Sprint("solo-", i) {
				t.Fatalf("publish %d: stored %+v", i, got)
			}
		}
		if len(sizes) != 3 || sizes[0] != 1 || sizes[1] != 1 || sizes[2] != 1 {
			t.Fatalf("group sizes %v; want three groups of one", sizes)
		}
	})
}

// TestPublishWithoutSubscribers: an event of an owner without an enabled
// endpoint is stored, answered as a webhook event, and gets no fanout job
// (there is nothing to fan out to); beside it, an owner's with an endpoint
// gets its job in the same group.
func TestPublishWithoutSubscribers(t *testing.T) {
	t.Parallel()
	eachGroupBackend(t, func(t *testing.T, b groupBench) {
		h := holdFirstGroup(t, b)
		quiet := paid("", 1)
		quiet.OwnerID = "quiet"
		answers := publishBehindHeldGroup(t, b, h, paid("", 0), []*event.Event{quiet, paid("", 2)})
		for i, a := range answers {
			if a.err != nil || a.pub.Exposure != event.Webhook {
				t.Fatalf("caller %d: %+v, %v", i, a.pub, a.err)
			}
		}
		if got := h.groupSizes(); len(got) != 2 || got[1] != 2 {
			t.Fatalf("group sizes %v; want [1 2]", got)
		}
		wantWritten(t, b.db, 3, 2)
		if n := dbtest.Count(t, b.db, `SELECT count(*) FROM hookd_events WHERE owner_id = 'quiet' AND fanout_job = 0`); n != 1 {
			t.Fatalf("quiet's event: %d without a fanout job; want 1", n)
		}
	})
}

// TestPublishDeletedOwner: an event of an owner with no row (deleted while
// the publish ran, or never there: a library caller's) is refused 404,
// saying so, and nothing of it is written. In a group, only its caller is
// refused and the others commit; a batch is refused whole.
func TestPublishDeletedOwner(t *testing.T) {
	t.Parallel()
	eachGroupBackend(t, func(t *testing.T, b groupBench) {
		h := holdFirstGroup(t, b)
		ghost := paid("", 1)
		ghost.OwnerID = "ghost"
		answers := publishBehindHeldGroup(t, b, h, paid("", 0), []*event.Event{ghost, paid("", 2)})
		for i, a := range answers {
			switch {
			case i == 0 && (apperr.CodeOf(a.err) != apperr.NotFound || !strings.Contains(a.err.Error(), `owner "ghost" not found`)):
				t.Errorf("the deleted owner's caller: %v; want 404 saying the owner is not found", a.err)
			case i != 0 && a.err != nil:
				t.Errorf("caller %d: %v; only the deleted owner's caller is refused", i, a.err)
			}
		}
		if got := h.groupSizes(); len(got) != 2 || got[1] != 2 {
			t.Fatalf("group sizes %v; want [1 2]", got)
		}
		wantWritten(t, b.db, 2, 2)

		ghost = paid("", 3)
		ghost.OwnerID = "ghost"
		err := b.db.InTx(context.Background(), store.TxOptions{}, func(q *store.Q) error {
			_, err := b.svc.Publish(context.Background(), delivery.Request{Tx: q, Events: []*event.Event{paid("", 4), ghost}})
			return err
		})
		if apperr.CodeOf(err) != apperr.NotFound {
			t.Errorf("a batch with the deleted owner's event: %v; want 404", err)
		}
		wantWritten(t, b.db, 2, 2)
	})
}

// TestPublishConfirmsKeyOnEveryPath: a key answered from the key cache
// (Request.UnconfirmedKey) is read in the publish's own transaction
// whichever path Publish chooses: the group commit (one event), a
// transaction of its own (several) and the caller's transaction. Revoked,
// it refuses the publish (401) and nothing is written; live, the events
// are published.
func TestPublishConfirmsKeyOnEveryPath(t *testing.T) {
	eachGroupBackend(t, func(t *testing.T, b groupBench) {
		ctx := context.Background()
		now := time.Now()
		live := &owner.APIKey{ID: "key_live", OwnerID: "acme", Role: owner.Publisher, Hash: []byte("live"), Prefix: "hkd_live", CreatedAt: now}
		gone := &owner.APIKey{ID: "key_gone", OwnerID: "acme", Role: owner.Publisher, Hash: []byte("gone"), Prefix: "hkd_gone", CreatedAt: now}
		must(t, b.db.Q().CreateAPIKey(ctx, live))
		must(t, b.db.Q().CreateAPIKey(ctx, gone))
		must(t, b.db.Q().RevokeAPIKey(ctx, "acme", gone.ID, now.UnixMicro()))
		paths := []struct {
			name    string
			publish func(key string, evs []*event.Event) error
		}{
			{"group commit", func(key string, evs []*event.Event) error {
				_, err := b.svc.Publish(ctx, delivery.Request{Events: evs[:1], UnconfirmedKey: key})
				return err
			}},
			{"own transaction", func(key string, evs []*event.Event) error {
				_, err := b.svc.Publish(ctx, delivery.Request{Events: evs, UnconfirmedKey: key})
				return err
			}},
			{"caller's transaction", func(key string, evs []*event.Event) error {
				return b.db.InTx(ctx, store.TxOptions{}, func(q *store.Q) error {
					_, err := b.svc.Publish(ctx, delivery.Request{Tx: q, Events: evs, UnconfirmedKey: key})
					return err
				})
			}},
		}
		written := 0
		for i, p := range paths {
			evs := []*event.Event{paid("", 10*i), paid("", 10*i+1)}
			if err := p.publish(gone.ID, evs); apperr.CodeOf(err) != apperr.Unauthorized || !strings.Contains(err.Error(), "revoked") {
				t.Errorf("%s with a revoked key: %v; want 401, revoked", p.name, err)
			}
			wantWritten(t, b.db, written, written)
			evs = []*event.Event{paid("", 10*i+2), paid("", 10*i+3)}
			if err := p.publish(live.ID, evs); err != nil {
				t.Errorf("%s with a live key: %v", p.name, err)
			}
			if i == 0 {
				written++
			} else {
				written += 2
			}
			wantWritten(t, b.db, written, written)
		}
	})
}
