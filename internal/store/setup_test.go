package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/store"
)

// t0 is the suite's clock: every time is explicit (microsecond precision,
// as stored), nothing depends on the wall clock.
var t0 = time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC)

const day = 24 * time.Hour

// bundle is what a store test starts from: a fresh migrated database on
// one backend, its queries outside a transaction, a context, and the
// fixtures (owners, endpoints, events, deliveries, River jobs), made at t0.
type bundle struct {
	t   testing.TB
	ctx context.Context
	db  *store.DB
	q   *store.Q
}

// setup runs fn once per backend (dbtest.Backends: a temp-file SQLite, and
// a fresh PostgreSQL schema when HOOKD_TEST_POSTGRES is set), in parallel,
// each with its own bundle: so the one SQL text is proven on both.
func setup(t *testing.T, fn func(t *testing.T, s *bundle)) {
	t.Helper()
	for _, e := range dbtest.Backends() {
		t.Run(e.Name, func(t *testing.T) {
			t.Parallel()
			cfg := e.Config(t)
			cfg.MaxConns = 8 // PostgreSQL: leave connections for the parallel tests
			fn(t, newBundle(t, dbtest.Open(t, cfg)))
		})
	}
}

// newBundle wraps a database a test opened itself.
func newBundle(t testing.TB, db *store.DB) *bundle {
	return &bundle{t: t, ctx: context.Background(), db: db, q: db.Q()}
}

// count runs a SELECT count(*) … directly on the engine (not through the
// store), so tests check what is really in the tables.
func (s *bundle) count(query string, args ...any) int {
	s.t.Helper()
	return dbtest.Count(s.t, s.db, query, args...)
}

// exec runs a statement directly on either engine (to put rows into a
// state the store never writes itself).
func (s *bundle) exec(query string, args ...any) {
	s.t.Helper()
	var err error
	if p := s.db.Pool(); p != nil {
		_, err = p.Exec(s.ctx, query, args...)
	} else {
		_, err = s.db.SQLDB().ExecContext(s.ctx, query, args...)
	}
	must(s.t, err)
}

// --- fixtures ---

func (s *bundle) owner(id string) *owner.Owner {
	s.t.Helper()
	o := &owner.Owner{ID: id, Profile: "standard", Attributes: map[string]string{"app": id}, CreatedAt: t0}
	must(s.t, s.q.CreateOwner(s.ctx, o))
	return o
}

func newEndpoint(ownerID string, maxInFlight int) *endpoint.Endpoint {
	return &endpoint.Endpoint{
		ID: event.NewID("ep_", t0), OwnerID: ownerID, URL: "https://example.com/hook", Description: "d",
		EventTypes: []string{"invoice.*"}, SecretSealed: []byte{1, 2, 3}, Enabled: true,
		MaxInFlight: maxInFlight, CreatedAt: t0, UpdatedAt: t0,
	}
}

// endpoint creates an endpoint the way the ops layer does (in a
// transaction: the row and its lease slots).
func (s *bundle) endpoint(ownerID string, maxInFlight int) *endpoint.Endpoint {
	s.t.Helper()
	e := newEndpoint(ownerID, maxInFlight)
	must(s.t, s.db.InTx(s.ctx, store.TxOptions{}, func(tx *store.Q) error { return tx.CreateEndpoint(s.ctx, e) }))
	return e
}

func newEvent(ownerID, key string, created time.Time) *event.Event {
	return &event.Event{
		ID: event.NewID("evt_", created), OwnerID: ownerID, Type: "invoice.paid", Subject: "invoice://1",
		OccurredAt: created.Add(-time.Second), Data: json.RawMessage(`{"published":true,"n":1}`),
		Tenant: "tn", IdempotencyKey: key, CreatedAt: created,
	}
}

func (s *bundle) event(ownerID string) *event.Event {
	s.t.Helper()
	return s.awaiting(ownerID, 0)
}

// awaiting inserts an event awaiting fanout by job (0: none).
func (s *bundle) awaiting(ownerID string, job int64) *event.Event {
	s.t.Helper()
	e := newEvent(ownerID, "", t0)
	e.FanoutJob = job
	if _, _, err := s.q.InsertEvent(s.ctx, e); err != nil {
		s.t.Fatal(err)
	}
	return e
}

func newDelivery(ownerID, endpointID, eventID string, created time.Time) *endpoint.Delivery {
	next := created
	return &endpoint.Delivery{
		ID: event.NewID("dlv_", created), OwnerID: ownerID, EndpointID: endpointID, EventID: eventID, EventType: "invoice.paid",
		State: endpoint.Pending, NextAttemptAt: &next, CreatedAt: created, UpdatedAt: created,
	}
}

func (s *bundle) deliveries(ds ...*endpoint.Delivery) {
	s.t.Helper()
	got, err := s.q.InsertDeliveries(s.ctx, ds)
	must(s.t, err)
	if len(got) != len(ds) {
		s.t.Fatalf("inserted %d deliveries, want %d", len(got), len(ds))
	}
}

// jobs inserts n River jobs (with an insert-only client) and returns their ids.
func (s *bundle) jobs(n int) []int64 {
	s.t.Helper()
	if _, err := s.db.NewRiver(&river.Config{}); err != nil {
		s.t.Fatal(err)
	}
	params := make([]river.InsertManyParams, n)
	for i := range params {
		params[i] = river.InsertManyParams{Args: outboxArgs{EventID: fmt.Sprint(i)}}
	}
	var ids []int64
	must(s.t, s.db.InTx(s.ctx, store.TxOptions{}, func(tx *store.Q) error {
		res, err := tx.InsertJobs(s.ctx, params)
		for _, r := range res {
			ids = append(ids, r.Job.ID)
		}
		return err
	}))
	return ids
}

// pluck returns f of each of xs: the ids a test compares.
func pluck[T any](xs []T, f func(T) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

// --- assertions ---

func wantCode(t testing.TB, err error, code apperr.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want %s", code)
	}
	if got := apperr.CodeOf(err); got != code {
		t.Fatalf("err = %v (code %s), want code %s", err, got, code)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func jsonEq(t testing.TB, what string, got, want any) {
	t.Helper()
	g, err := json.Marshal(got)
	must(t, err)
	w, err := json.Marshal(want)
	must(t, err)
	if string(g) != string(w) {
		t.Fatalf("%s:\n got %s\nwant %s", what, g, w)
	}
}
