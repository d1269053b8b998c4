package delivery

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/riverqueue/river"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/metrics"
	"github.com/hookd/hookd/internal/store"
)

// FanoutArgs is the webhook.fanout job: offer one event to the owner's
// endpoints.
type FanoutArgs struct {
	EventID string `json:"event_id"`
}

// Kind is the job kind River knows the fanout job by.
func (FanoutArgs) Kind() string { return "webhook.fanout" }

// InsertOpts puts fanout jobs in the fanout queue, with 25 attempts.
func (FanoutArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueFanout, MaxAttempts: 25}
}

// Published is the result of publishing one event.
type Published struct {
	ID string `json:"id"`
	// Duplicate: the idempotency key was used before; ID is that event's.
	Duplicate bool `json:"duplicate,omitempty"`
	// Exposure of the type: "internal" events are stored but never leave.
	Exposure event.Exposure `json:"exposure"`
}

// Request is one publish: its events, where they commit, and the caller's
// key when it was not read for this call.
type Request struct {
	// Events each have OwnerID and the caller's fields set; ids and times
	// are filled in by Publish.
	Events []*event.Event
	// Tx is the caller's transaction: the events and their fanout jobs
	// exist if and only if it commits (the transactional outbox). nil:
	// hookd commits them in a transaction of its own.
	Tx *store.Q
	// UnconfirmedKey is the id of the caller's API key when it was
	// answered from the key cache (store.DB.APIKeyByHashCached) rather
	// than read for this call: the publish reads it in its own
	// transaction, and a key revoked or gone by then refuses the publish
	// (Unauthorized). "": nothing to confirm.
	UnconfirmedKey string
}

// Publish publishes r's events, all or none, and chooses how; its callers
// need not know the paths:
//   - in the caller's transaction (r.Tx): written in it, the plain path
//     (publishIn, below);
//   - one event in hookd's own transaction: shared with the other single
//     publishes in flight (group commit, publish_group.go), committed in
//     one round trip where the rules are what was expected
//     (publish_onetrip.go) and else as one pipelined batch;
//   - several events in hookd's own transaction: the plain path in a
//     transaction of their own.
//
// The written events are the same on every path; only the transaction
// differs. A producer may not publish hookd's own types (hookd.endpoint.*):
// see refuseOwnType.
func (s *Service) Publish(ctx context.Context, r Request) ([]Published, error) {
	switch {
	case r.Tx != nil:
		return s.publishIn(ctx, r.Tx, r.Events, r.UnconfirmedKey, byProducer)
	case len(r.Events) == 1:
		c, err := s.publishGrouped(ctx, r.Events[0], r.UnconfirmedKey)
		if err != nil {
			return nil, err
		}
		return c.out[:], nil
	}
	var out []Published
	err := s.db.InTx(ctx, store.TxOptions{}, func(q *store.Q) error {
		var err error
		out, err = s.publishIn(ctx, q, r.Events, r.UnconfirmedKey, byProducer)
		return err
	})
	return out, err
}

// publisher is who publishes: a producer, or hookd itself (its failure
// notifications, the only events of hookd.endpoint.* types).
type publisher bool

const (
	byProducer publisher = false
	byHookd    publisher = true
)

// publishIn publishes evs in q's transaction, the plain path; apiKey, when
// not "", is confirmed in it (Request.UnconfirmedKey).
func (s *Service) publishIn(ctx context.Context, q *store.Q, evs []*event.Event, apiKey string, by publisher) (_ []Published, err error) {
	ctx, span := s.startSpan(ctx, "hookd.publish", nil, attribute.Int("hookd.events", len(evs)))
	defer func() { endSpan(span, err) }()
	if err := s.prepare(evs, by); err != nil {
		return nil, err
	}
	var keys []string
	if apiKey != "" {
		keys = []string{apiKey}
	}
	v, err := s.admit(ctx, q, evs, s.precheck(evs), keys)
	if err != nil {
		return nil, err
	}
	if apiKey != "" && !v.confirmed[apiKey] {
		return nil, keyRevoked(apiKey)
	}
	// All or none: one event refused refuses the batch.
	for i, err := range v.refused {
		if err != nil {
			if len(evs) > 1 {
				return nil, apperr.Prefix(fmt.Sprintf("events[%d]", i), err)
			}
			return nil, err
		}
	}
	return s.insert(ctx, q, evs, v, nil, leaveOpen)
}

// keyRevoked is the refusal of a publish whose caller's key, answered
// from the key cache, was found revoked or gone in the publish's
// transaction (Request.UnconfirmedKey).
func keyRevoked(keyID string) error {
	return apperr.New(apperr.Unauthorized, "API key %s was revoked", keyID)
}

// prepare validates evs and fills in what publishing decides: the compact
// data, the id and the times. It reads nothing, so a caller can run it
// before it joins a publish group, and a bad event never fails another's.
func (s *Service) prepare(evs []*event.Event, by publisher) error {
	now := s.now().UTC()
	for i, ev := range evs {
		err := ev.Validate()
		if err == nil && by == byProducer {
			err = refuseOwnType(ev)
		}
		if err == nil {
			err = s.refuseTestType(ev)
		}
		if err != nil {
			if len(evs) > 1 {
				return apperr.Prefix(fmt.Sprintf("events[%d]", i), err)
			}
			return err
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, ev.Data); err != nil {
			return fmt.Errorf("events[%d]: data: %w", i, err)
		}
		ev.Data = compact.Bytes()
		ev.ID = event.NewID("evt_", now)
		ev.CreatedAt = now
		if ev.OccurredAt.IsZero() {
			ev.OccurredAt = now
		}
		ev.OccurredAt = ev.OccurredAt.UTC()
	}
	return nil
}

// txEnd says whether insert's write is its transaction's last.
type txEnd bool

const (
	// leaveOpen: the caller's transaction goes on (Publish).
	leaveOpen txEnd = false
	// commitWithInsert: a group commit's transaction ends with the
	// events' INSERT, which goes out with its COMMIT
	// (store.Q.InsertEventsAndCommit).
	commitWithInsert txEnd = true
)

// insert writes prepared, admitted events and their fanout jobs in q's
// transaction; v.rules[i] is event i's type rule, from admit. traces, when
// not nil, is each event's trace context, carried by its fanout job (a
// group commit's events come from different callers); nil: every job
// carries ctx's, the trace of the one publish.
func (s *Service) insert(ctx context.Context, q *store.Q, evs []*event.Event, v verdicts, traces []map[string]string, end txEnd) ([]Published, error) {
	exposure := make([]event.Exposure, len(evs))
	for i := range evs {
		exposure[i] = v.rules[i].Exposure
	}
	// Fanout jobs first, so each event row is written once, with its job
	// (another fanout of the same owner may fan the event out first and
	// delete that job). A job made for an event that turns out to repeat an
	// idempotency key is deleted again below.
	if err := s.insertFanoutJobs(ctx, q, evs, exposure, v.subscribed, traces); err != nil {
		return nil, err
	}
	insertEvents := q.InsertEvents
	if end == commitWithInsert {
		insertEvents = q.InsertEventsAndCommit
	}
	res, err := insertEvents(ctx, evs)
	if err != nil {
		return nil, err
	}
	out := make([]Published, 0, len(evs))
	var unused []int64
	for i, ev := range evs {
		out = append(out, Published{ID: res[i].ID, Duplicate: !res[i].Inserted, Exposure: exposure[i]})
		if !res[i].Inserted && ev.FanoutJob != 0 {
			unused = append(unused, ev.FanoutJob)
		}
	}
	if err := q.DeleteJobs(ctx, unused); err != nil {
		if end != commitWithInsert {
			return nil, err
		}
		// Committed already: the job's fanout finds no event of its id and
		// ends without doing anything, so the events' callers are answered.
		s.log.Warn("publish: the fanout jobs of repeated idempotency keys stay; each will find no event and end", "jobs", unused, "error", err)
	}
	if s.cfg.Metrics != nil {
		s.countPublished(ctx, q, evs, res)
	}
	if len(out) == 1 && s.cfg.Tracer != nil {
		trace.SpanFromContext(ctx).SetAttributes(attribute.String("hookd.event", out[0].ID), attribute.String("hookd.event_type", evs[0].Type))
	}
	return out, nil
}

// insertFanoutJobs inserts the fanout jobs of the webhook-exposed events
// (exposure[i] is evs[i]'s) whose owner has an enabled endpoint
// (subscribed, from admit), and sets each such event's FanoutJob; traces
// as for insert. An owner without an enabled endpoint has nothing to fan
// out to: its events are stored with no fanout job, as if their fanout had
// run at once (where a job would cost a River fetch, a fanout transaction
// and a completion each).
func (s *Service) insertFanoutJobs(ctx context.Context, q *store.Q, evs []*event.Event, exposure []event.Exposure, subscribed map[string]bool, traces []map[string]string) error {
	var jobs []river.InsertManyParams
	var withJob []int // of evs
	for i, ev := range evs {
		if exposure[i] != event.Webhook || !subscribed[ev.OwnerID] {
			continue
		}
		p := river.InsertManyParams{Args: FanoutArgs{EventID: ev.ID}}
		if traces != nil {
			p.InsertOpts = &river.InsertOpts{Metadata: traceMetadata(traces[i])}
		}
		jobs, withJob = append(jobs, p), append(withJob, i)
	}
	if len(jobs) == 0 {
		return nil
	}
	res, err := q.InsertJobs(ctx, jobs)
	if err != nil {
		return fmt.Errorf("enqueue fanout: %w", err)
	}
	for j, r := range res {
		evs[withJob[j]].FanoutJob = r.Job.ID
	}
	return nil
}

// OwnTypePrefix is the prefix of the types only hookd publishes: its
// failure notifications (notify.go). Owners may neither publish nor
// redefine them.
const OwnTypePrefix = "hookd.endpoint."

// refuseOwnType refuses a producer's event of one of hookd's own types: a
// subscriber of hookd.endpoint.* must be able to trust that hookd said
// its endpoint is failing, disabled or recovered.
func refuseOwnType(ev *event.Event) error {
	if !strings.HasPrefix(ev.Type, OwnTypePrefix) {
		return nil
	}
	return apperr.New(apperr.Invalid, "type %q: hookd.endpoint.* are hookd's own failure notifications (%s, %s, %s), published by hookd itself when an endpoint's health changes; a producer may not publish them", ev.Type, Failing, Disabled, Recovered)
}

// refuseTestType refuses a published profile test event (webhook.test,
// open.ping): it would reach every endpoint subscribed to "*", while a test
// goes to one endpoint only, through send_test (which sets EndpointID).
func (s *Service) refuseTestType(ev *event.Event) error {
	if ev.EndpointID != "" {
		return nil
	}
	if p, ok := s.cfg.Profiles.ByTestEventType(ev.Type); ok {
		return apperr.New(apperr.Invalid, "%s is the %s profile's test event and is not published: send it to one endpoint with webhooks.send_test (POST /api/admin/webhooks/{id}/send_test)", ev.Type, p.Name())
	}
	return nil
}

// countPublished counts the events a publish inserted, by their owner's
// profile. The transaction has not committed yet: one the caller rolls back
// is counted too.
func (s *Service) countPublished(ctx context.Context, q *store.Q, evs []*event.Event, res []store.Inserted) {
	n, owner := 0, ""
	flush := func() {
		if n > 0 {
			s.cfg.Metrics.Published(s.profileOf(ctx, q, owner), metrics.Owner{OwnerID: owner}, n)
		}
	}
	for i, ev := range evs {
		if !res[i].Inserted {
			continue
		}
		if ev.OwnerID != owner {
			flush()
			n, owner = 0, ev.OwnerID
		}
		n++
	}
	flush()
}

// profileOf is the owner's profile name for the metrics: remembered from
// the last fanout or publish of its events (a profile change shows in the
// next fanout), else read.
func (s *Service) profileOf(ctx context.Context, q *store.Q, ownerID string) string {
	if p, ok := s.profiles.Load(ownerID); ok {
		return p.(string)
	}
	o, err := q.GetOwner(ctx, ownerID)
	if err != nil {
		return "unknown"
	}
	s.profiles.Store(ownerID, o.Profile)
	return o.Profile
}
