package delivery_test

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/delivery/hookstest"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/metrics"
	"github.com/hookd/hookd/internal/profile"
	"github.com/hookd/hookd/internal/store"
)

// The one-round-trip group commit (publish_onetrip.go) is PostgreSQL's: these
// tests prove it is taken once a type's rule was read, with a fanout job
// for each event of an owner with an endpoint, and that whenever what it
// expected no longer holds, each caller is answered as the usual way
// answers: a fanout job once the owner has an endpoint, none once it has
// none, a refusal once its type's schema refuses the data, 404 once it is
// gone.

// expectedGroups records the ExpectedGroup hook's calls.
type expectedGroups struct {
	mu   sync.Mutex
	held []bool
}

func watchExpected(t testing.TB, b groupBench) *expectedGroups {
	w := &expectedGroups{}
	hookstest.Set(t, b.svc, &delivery.Hooks{ExpectedGroup: w.record})
	return w
}

func (w *expectedGroups) record(held bool) {
	w.mu.Lock()
	w.held = append(w.held, held)
	w.mu.Unlock()
}

// since returns the calls recorded after the first n.
func (w *expectedGroups) since(n int) []bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]bool(nil), w.held[n:]...)
}

func quietEvent(n int) *event.Event {
	ev := paid("", n)
	ev.OwnerID = "quiet"
	return ev
}

func openQuietBench(t *testing.T) groupBench {
	return openGroupBench(t, dbtest.Backend{Name: "postgres", Config: dbtest.Postgres})
}

// TestExpectedGroupEndpoints: the first publish of a type reads its rule
// the usual way; the next, of an owner without endpoints, commits in one
// round trip with no fanout job. Once the owner has an endpoint the
// expectation fails, the publish goes the usual way and gets its job, and
// the publish after it commits in one round trip with its job. Once the
// endpoint is disabled the expectation fails again, and the publish goes
// the usual way, with no job.
func TestExpectedGroupEndpoints(t *testing.T) {
	t.Parallel()
	b := openQuietBench(t)
	m := metrics.New(metrics.Config{Profiles: []string{"standard"}})
	b.svc = delivery.New(delivery.Config{DB: b.db, Profiles: profile.Default(), GroupMax: 8, Metrics: m})
	w := watchExpected(t, b)
	ctx := context.Background()
	publish := func(n int) delivery.Published {
		t.Helper()
		p, err := publishOne(ctx, b.svc, quietEvent(n))
		if err != nil || p.Exposure != event.Webhook || p.Duplicate {
			t.Fatalf("publish %d: %+v, %v; want a new webhook event", n, p, err)
		}
		return p
	}
	publish(1)
	if got := w.since(0); len(got) != 0 {
		t.Fatalf("the first publish of the type tried the one-round-trip insert (%v) with no rule read before", got)
	}
	p := publish(2)
	if got := w.since(0); len(got) != 1 || !got[0] {
		t.Fatalf("the second publish: one-round-trip inserts %v; want one that held", got)
	}
	stored, err := b.db.Q().GetEvent(ctx, "quiet", p.ID)
	must(t, err)
	if string(stored.Data) != `{"n":2}` {
		t.Fatalf("stored %s for publish 2", stored.Data)
	}
	wantWritten(t, b.db, 2, 0)

	now := time.Now()
	ep := &endpoint.Endpoint{ID: event.NewID("ep_", now), OwnerID: "quiet", URL: "https://example.com/hook",
		EventTypes: []string{"*"}, SecretSealed: []byte{1}, Enabled: true, MaxInFlight: 1, CreatedAt: now, UpdatedAt: now}
	must(t, b.db.InTx(ctx, store.TxOptions{}, func(q *store.Q) error { return q.CreateEndpoint(ctx, ep) }))
	publish(3)
	if got := w.since(1); len(got) != 1 || got[0] {
		t.Fatalf("the publish after the endpoint's creation: one-round-trip inserts %v; want one that missed", got)
	}
	wantWritten(t, b.db, 3, 1)
	p = publish(4)
	if got := w.since(2); len(got) != 1 || !got[0] {
		t.Fatalf("a publish to an owner last read with an endpoint: one-round-trip inserts %v; want one that held", got)
	}
	wantWritten(t, b.db, 4, 2)
	if n := dbtest.Count(t, b.db, `SELECT count(*) FROM hookd_events e JOIN river_job j ON j.id = e.fanout_job
		WHERE e.id = $1 AND j.kind = 'webhook.fanout' AND j.queue = $2 AND j.args->>'event_id' = e.id AND j.state = 'available'`, p.ID, delivery.QueueFanout); n != 1 {
		t.Fatalf("the event committed in one round trip is not stored with its fanout job")
	}

	ep.Enabled, ep.DisabledReason, ep.UpdatedAt = false, "disabled by owner", time.Now()
	must(t, b.db.InTx(ctx, store.TxOptions{}, func(q *store.Q) error { return q.UpdateEndpoint(ctx, ep) }))
	publish(5)
	if got := w.since(3); len(got) != 1 || got[0] {
		t.Fatalf("the publish after the endpoint was disabled: one-round-trip inserts %v; want one that missed", got)
	}
	wantWritten(t, b.db, 5, 2)

	// What the metrics say of the five groups of one.
	fams, err := m.Registry().Gather()
	must(t, err)
	got := map[string]float64{}
	var sizes *dto.Histogram
	for _, f := range fams {
		for _, s := range f.GetMetric() {
			switch f.GetName() {
			case "hookd_publish_groups_total":
				got[s.GetLabel()[0].GetValue()] = s.GetCounter().GetValue()
			case "hookd_publish_group_size":
				sizes = s.GetHistogram()
			}
		}
	}
	if want := map[string]float64{"usual": 1, "one_round_trip": 2, "missed": 2}; !maps.Equal(got, want) {
		t.Errorf("hookd_publish_groups_total by path %v, want %v", got, want)
	}
	if sizes == nil || sizes.GetSampleCount() != 5 || sizes.GetSampleSum() != 5 {
		t.Errorf("hookd_publish_group_size %v; want 5 groups of one", sizes)
	}
}

// TestExpectedGroupSchema: in a group that commits in one round trip, a call
// whose data its type's schema refuses is refused alone and the others
// commit; when the schema changed since it was last read, the expectation
// fails and the new schema judges the data.
func TestExpectedGroupSchema(t *testing.T) {
	t.Parallel()
	b := openQuietBench(t)
	ctx := context.Background()
	setSchema := func(schema string) {
		t.Helper()
		typ := &event.Type{OwnerID: "quiet", Name: "order.paid", Exposure: event.Webhook, Schema: []byte(schema), CreatedAt: time.Now()}
		_, err := typ.CheckSchema()
		must(t, err)
		must(t, b.db.Q().PutEventType(ctx, typ))
	}
	setSchema(`{"type": "object", "required": ["n"], "properties": {"n": {"type": "integer", "maximum": 100}}}`)
	// The callers' data is checked before they join a group, against the
	// schema last read: one publish reads it.
	if _, err := publishOne(ctx, b.svc, quietEvent(0)); err != nil {
		t.Fatal(err)
	}
	w := &expectedGroups{}
	h := holdFirstGroup(t, b)
	h.onExpected = w
	bad := quietEvent(1000) // over the maximum
	answers := publishBehindHeldGroup(t, b, h, quietEvent(0), []*event.Event{quietEvent(1), bad, quietEvent(2)})
	for i, a := range answers {
		switch {
		case i == 1 && apperr.CodeOf(a.err) != apperr.Invalid:
			t.Errorf("the caller whose data the schema refuses: %v; want invalid", a.err)
		case i != 1 && a.err != nil:
			t.Errorf("caller %d failed beside a refused one: %v", i, a.err)
		}
	}
	if got := h.groupSizes(); len(got) != 2 || got[1] != 3 {
		t.Fatalf("group sizes %v; want [1 3]", got)
	}
	if got := w.since(0); len(got) != 2 || !got[0] || !got[1] {
		t.Fatalf("one-round-trip inserts %v; want the held group's and the group of three's, both held", got)
	}
	wantWritten(t, b.db, 4, 0)

	// The schema now refuses what the last one allowed.
	setSchema(`{"type": "object", "properties": {"n": {"type": "integer", "maximum": 1}}}`)
	_, err := publishOne(ctx, b.svc, quietEvent(5))
	if apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("data the new schema refuses: %v; want invalid", err)
	}
	if got := w.since(2); len(got) != 1 || got[0] {
		t.Fatalf("after the schema's change: one-round-trip inserts %v; want one that missed", got)
	}
	wantWritten(t, b.db, 4, 0)
	if _, err := publishOne(ctx, b.svc, quietEvent(1)); err != nil {
		t.Fatalf("data the new schema allows: %v", err)
	}
	wantWritten(t, b.db, 5, 0)
}

// TestExpectedGroupOwnerDeleted: a publish to an owner deleted since its
// type was last read is refused 404 and writes nothing.
func TestExpectedGroupOwnerDeleted(t *testing.T) {
	t.Parallel()
	b := openQuietBench(t)
	w := watchExpected(t, b)
	ctx := context.Background()
	_, err := publishOne(ctx, b.svc, quietEvent(1))
	must(t, err)
	must(t, b.db.InTx(ctx, store.TxOptions{}, func(q *store.Q) error { return q.DeleteOwner(ctx, "quiet") }))
	_, err = publishOne(ctx, b.svc, quietEvent(2))
	if apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("publish to the deleted owner: %v; want 404", err)
	}
	if got := w.since(0); len(got) != 1 || got[0] {
		t.Fatalf("one-round-trip inserts %v; want one that missed", got)
	}
	wantWritten(t, b.db, 0, 0)
}

// TestExpectedGroupUncheckedData: callers who joined before this process had
// read their type's schema were not checked against it, so their group
// goes the usual way, which checks them, even though the group before
// read the owner without endpoints.
func TestExpectedGroupUncheckedData(t *testing.T) {
	t.Parallel()
	b := openQuietBench(t)
	typ := &event.Type{OwnerID: "quiet", Name: "order.paid", Exposure: event.Webhook, Schema: []byte(`{"properties": {"n": {"maximum": 100}}}`), CreatedAt: time.Now()}
	_, err := typ.CheckSchema()
	must(t, err)
	must(t, b.db.Q().PutEventType(context.Background(), typ))
	w := &expectedGroups{}
	h := holdFirstGroup(t, b)
	h.onExpected = w
	answers := publishBehindHeldGroup(t, b, h, quietEvent(0), []*event.Event{quietEvent(1000), quietEvent(1)})
	if apperr.CodeOf(answers[0].err) != apperr.Invalid {
		t.Errorf("the caller whose data the schema refuses: %+v, %v; want invalid", answers[0].pub, answers[0].err)
	}
	for _, a := range answers[1:] {
		must(t, a.err)
	}
	if got := h.groupSizes(); len(got) != 2 || got[1] != 2 {
		t.Fatalf("group sizes %v; want [1 2]", got)
	}
	if got := w.since(0); len(got) != 0 {
		t.Fatalf("one-round-trip inserts %v; want none: no caller's data was checked against the schema", got)
	}
	wantWritten(t, b.db, 2, 0)
}

// TestExpectedGroupTracing: with tracing on, each fanout job carries its
// caller's trace, which only River's client writes: a group with fanout
// jobs goes the usual way, and its events' jobs carry the traces.
func TestExpectedGroupTracing(t *testing.T) {
	t.Parallel()
	b := openQuietBench(t)
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	b.svc = delivery.New(delivery.Config{DB: b.db, Profiles: profile.Default(), GroupMax: 8, Tracer: tp.Tracer("test")})
	w := watchExpected(t, b)
	for n := range 3 {
		ctx, span := tp.Tracer("test").Start(context.Background(), "caller")
		_, err := publishOne(ctx, b.svc, paid("", n)) // acme has an endpoint
		span.End()
		must(t, err)
	}
	if got := w.since(0); len(got) != 0 {
		t.Fatalf("one-round-trip inserts %v; want none: the jobs must carry their callers' traces", got)
	}
	wantWritten(t, b.db, 3, 3)
	if n := dbtest.Count(t, b.db, `SELECT count(*) FROM river_job WHERE kind = 'webhook.fanout' AND metadata::text LIKE '%traceparent%'`); n != 3 {
		t.Errorf("%d of 3 fanout jobs carry a trace", n)
	}
}
