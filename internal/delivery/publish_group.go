package delivery

// Fast path of publish (publish.go): group commit. The plain path is
// publishIn, which writes one caller's events in one transaction, a commit
// each; here the single publishes in flight share one transaction and its
// commit (publishGrouped), sent as one pipelined batch (store.DB.InTx, TxOptions.Foreground),
// or in one round trip when the rules are what was expected
// (publish_onetrip.go).

import (
	"context"
	"errors"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/group"
	"github.com/hookd/hookd/internal/metrics"
	"github.com/hookd/hookd/internal/store"
	"github.com/hookd/hookd/internal/tracing"
)

// Group commit of single-event publishes. Each publish is one transaction,
// and a transaction's cost is mostly its commit: the WAL flush on
// PostgreSQL, the fsync of the WAL file on SQLite, and a handful of round
// trips (on PostgreSQL three for an owner with endpoints: BEGIN goes out
// with the read of the types' rules, the owners' endpoints and the
// callers' keys, River inserts the fanout jobs, and the events' INSERT
// goes out with COMMIT; store.DB.InTx with TxOptions.Foreground; one when the rules are what
// the last read said, publish_onetrip.go). So concurrent
// single publishes share one (internal/group): the
// first to arrive commits at once, alone; the calls arriving while that
// commit runs queue and go together in the next one, led by the first of
// them. A lone publisher waits for nothing, and under load every commit
// carries all the publishes that arrived during the one before it (at most
// GroupMax).
//
// Each caller still gets its own answer: its own event id, its own
// idempotency result (two callers of one group with one key are answered as
// if they had come one after the other) and its own error. Validation runs
// in the caller before it joins (prepare), so a bad event fails only its
// own caller. The check of data against its type's schema runs in the
// caller too, against the schema its type had at the last publish
// (precheck, schema.go); the group's transaction reads each type's rule
// (one read per owner and type for the whole group) and keeps the
// caller's verdict if the schema is still the same, else checks again
// (admit). A refused caller is answered alone while the others commit.
// If the shared transaction fails before its commit, every
// caller of the group is retried in a transaction of its own, so no caller
// is answered with another's failure; a failed commit (its outcome unknown)
// reaches every caller of the group, as it would have reached each alone.

// DefaultGroupMax is the most publishes one group commit carries.
const DefaultGroupMax = 100

// groupLinger is how long, as a fraction of the last group commit's run
// time, the next one may wait for the publishers the last one answered
// (group.Runner.Linger). Under load, 32 clients publishing one event each
// split into two halves taking turns, so each commit carried half of
// them. While hookd delivered to 10 endpoints of one owner, commits took
// 6–8 ms and carried 16 calls without lingering, 25–30 with it, and the
// clients published 1.35× as fast; with no subscribers 1.12× as fast at
// 0.88× the CPU per publish, at 0.3; 0.5 published 1.06× as fast as 0.3
// while delivering and 1.2× on SQLite. Once the load generator answered
// its clients as fast as pgbench does (one epoll thread), they came back
// within the whole of the last commit's run time: at 1.0 a commit carried
// 30 of 32 callers instead of 25 (docs/notes/performance-history.md).
const groupLinger = 1.0

// groupTimeout bounds one group's transaction: it runs on behalf of several
// callers, so no one caller's cancellation may cut it short.
const groupTimeout = 30 * time.Second

// publishCall is one caller's publish and, once its group ran, its answer.
type publishCall struct {
	ev *event.Event
	// trace is the caller's hookd.publish span (tracing on): the group's
	// transaction runs in one caller's context, so each event's fanout
	// job carries its own caller's trace explicitly.
	trace map[string]string
	// pre is precheck's verdict on the event's data, reached before the
	// caller joined the group.
	pre checked
	// confirmKey is the id of the caller's API key when it was answered
	// from the key cache: the group's first statement reads it, and a key
	// revoked or gone refuses the call (Request.UnconfirmedKey).
	confirmKey string
	// out is the answer: an array, so that Publish answers with a slice
	// of it and allocates nothing more.
	out [1]Published
	err error
}

var errNotRun = errors.New("publish: its group commit did not run")

func newPublishGroup(s *Service) *group.Runner[*publishCall] {
	g := &publishGroup{s: s}
	return &group.Runner[*publishCall]{
		Max:    s.cfg.GroupMax,
		Linger: groupLinger,
		Run:    g.run,
		Queued: s.publishQueued(),
	}
}

// publishGroup commits groups of single publishes.
type publishGroup struct{ s *Service }

// publishGrouped publishes one event in a transaction it shares with
// the other single publishes in flight (group commit, above), confirming
// apiKey (Request.UnconfirmedKey; "" for none) in that transaction's first
// statement: a key revoked or gone by then refuses the call, alone. The
// event is written exactly as publishIn writes it; only the transaction is
// shared. The answer is c.out, in the call, which outlives the group.
func (s *Service) publishGrouped(ctx context.Context, ev *event.Event, apiKey string) (_ *publishCall, err error) {
	// With tracing on, the group's one insert runs in the context of the
	// call that leads the group; each event's fanout job carries its own
	// caller's span (publishCall.trace), so each event continues its
	// caller's trace.
	ctx, span := s.startSpan(ctx, "hookd.publish", nil, attribute.Int("hookd.events", 1))
	defer func() { endSpan(span, err) }()
	if err := s.prepare([]*event.Event{ev}, byProducer); err != nil {
		return nil, err
	}
	c := &publishCall{ev: ev, err: errNotRun, confirmKey: apiKey}
	if pre := s.precheck([]*event.Event{ev}); pre != nil {
		c.pre = pre[0]
	}
	if s.cfg.Tracer != nil {
		c.trace = tracing.Carrier(ctx)
	}
	s.group.Do(ctx, c)
	if c.err == nil && s.cfg.Tracer != nil {
		span.SetAttributes(attribute.String("hookd.event", c.out[0].ID), attribute.String("hookd.event_type", ev.Type))
	}
	if c.err != nil {
		return nil, c.err
	}
	return c, nil
}

// run commits one group; no one caller's cancellation may cut it short.
func (g *publishGroup) run(ctx context.Context, calls []*publishCall) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), groupTimeout)
	defer cancel()
	g.s.beforePublishGroup(len(calls))
	g.commit(ctx, calls)
}

// commit publishes the group's events in one transaction and sets every
// call's answer.
func (g *publishGroup) commit(ctx context.Context, group []*publishCall) {
	var out []Published
	var admitted []*publishCall
	var inTx error // the transaction's own failure, before its commit
	path := metrics.Usual
	err := g.s.db.InTx(ctx, store.TxOptions{Foreground: true}, func(q *store.Q) error {
		if inTx = g.s.publishGroupHook(len(group)); inTx != nil {
			return inTx
		}
		var tried, held bool
		if admitted, out, tried, held, inTx = g.s.insertExpected(ctx, q, group); held || inTx != nil {
			path = metrics.OneRoundTrip
			return inTx
		}
		if tried {
			path = metrics.Missed
		}
		admitted, out, inTx = g.s.insertAdmitted(ctx, q, group)
		return inTx
	})
	g.s.cfg.Metrics.PublishGroup(len(group), path)
	switch {
	case err == nil:
		for i, c := range admitted {
			c.out[0], c.err = out[i], nil
		}
	case inTx == nil || errors.As(inTx, new(*store.CommitError)) || len(group) == 1:
		// The commit failed (its outcome unknown: the events may be
		// stored), or the group's one caller did: that failure is each
		// caller's own (a caller refused before it keeps its refusal).
		for _, c := range group {
			if c.err == errNotRun {
				c.err = err
			}
		}
	default:
		// Something in the shared transaction failed, and it may have been
		// one caller's: each caller alone, so each gets only its own result.
		for _, c := range group {
			g.s.publishAlone(ctx, c)
		}
	}
}

// insertAdmitted admits the calls' events (their types' rules and
// schemas) and inserts those admitted. A refused call is answered with its
// refusal here and is not in admitted: its bad data fails only its own
// publish, and the others commit as if it had not come.
func (s *Service) insertAdmitted(ctx context.Context, q *store.Q, calls []*publishCall) (admitted []*publishCall, out []Published, err error) {
	evs := make([]*event.Event, len(calls))
	pre := make([]checked, len(calls))
	var keys []string
	for i, c := range calls {
		evs[i], pre[i] = c.ev, c.pre
		if c.confirmKey != "" && !slices.Contains(keys, c.confirmKey) {
			keys = append(keys, c.confirmKey)
		}
	}
	v, err := s.admit(ctx, q, evs, pre, keys)
	if err != nil {
		return nil, nil, err
	}
	for i, c := range calls {
		if c.confirmKey != "" && !v.confirmed[c.confirmKey] && v.refused[i] == nil {
			v.refused[i] = keyRevoked(c.confirmKey)
		}
	}
	evs, rules := evs[:0], v.rules[:0]
	var traces []map[string]string // tracing on: each event's caller's
	for i, c := range calls {
		if v.refused[i] != nil {
			c.err = v.refused[i]
			continue
		}
		admitted = append(admitted, c)
		evs, rules = append(evs, c.ev), append(rules, v.rules[i])
		if c.trace != nil {
			traces = append(traces, c.trace)
		}
	}
	if len(evs) == 0 {
		return nil, nil, nil
	}
	if len(traces) != len(evs) {
		traces = nil
	}
	out, err = s.insert(ctx, q, evs, verdicts{rules: rules, subscribed: v.subscribed}, traces, commitWithInsert)
	return admitted, out, err
}

// publishAlone publishes one prepared event in a transaction of its own.
func (s *Service) publishAlone(ctx context.Context, c *publishCall) {
	c.ev.FanoutJob = 0 // set by the rolled-back attempt
	var admitted []*publishCall
	var out []Published
	err := s.db.InTx(ctx, store.TxOptions{Foreground: true}, func(q *store.Q) error {
		var err error
		admitted, out, err = s.insertAdmitted(ctx, q, []*publishCall{c})
		return err
	})
	switch {
	case err != nil:
		c.out[0], c.err = Published{}, err
	case len(admitted) == 1:
		c.out[0], c.err = out[0], nil
	}
}
