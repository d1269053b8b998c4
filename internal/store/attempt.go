package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/owner"
)

// AttemptInput is everything one delivery attempt needs, read in one query:
// the delivery with its endpoint, owner and event.
type AttemptInput struct {
	Delivery *endpoint.Delivery
	Endpoint *endpoint.Endpoint
	Owner    *owner.Owner
	// Event is nil when it was pruned.
	Event *event.Event
}

// attemptSelect reads a delivery with its endpoint, owner and event; the
// caller appends the WHERE clause.
const attemptSelect = `SELECT
		d.id, d.owner_id, d.endpoint_id, d.event_id, d.event_type, d.job_id, d.state, d.attempts, d.last_status, d.last_error, d.next_attempt_at, d.created_at, d.updated_at, d.finished_at,
		e.url, e.description, e.event_types, e.secret_sealed, e.scope_source, e.enabled, e.disabled_reason, e.failing_since, e.max_in_flight, e.created_at, e.updated_at, e.headers, e.rate_limit, e.ordered, e.trace_context,
		o.profile, o.attributes, o.created_at,
		ev.id, ev.type, ev.subject, ev.occurred_at, ev.data, ev.tenant, ev.endpoint_id, ev.idempotency_key, ev.created_at
	FROM hookd_deliveries d
	JOIN hookd_endpoints e ON e.id = d.endpoint_id
	JOIN hookd_owners o ON o.id = d.owner_id
	LEFT JOIN hookd_events ev ON ev.id = d.event_id
	WHERE `

// LoadAttempt reads a delivery with its endpoint, owner and event in one
// round trip (the deliver worker's hot path). NotFound when the delivery is
// gone (its endpoint was deleted).
func (q *Q) LoadAttempt(ctx context.Context, endpointID, eventID string) (*AttemptInput, error) {
	a, err := scanAttempt(q.queryRow(ctx, attemptSelect+`d.endpoint_id = $1 AND d.event_id = $2`, endpointID, eventID))
	if NotFound(err) {
		return nil, apperr.New(apperr.NotFound, "no delivery of event %q to endpoint %q", eventID, endpointID)
	}
	if err != nil {
		return nil, fmt.Errorf("load attempt: %w", err)
	}
	return a, nil
}

// LoadAttempts reads the deliveries with these ids (those that still
// exist), oldest first, in one round trip: what a lease drain sends next.
func (q *Q) LoadAttempts(ctx context.Context, deliveryIDs []string) ([]*AttemptInput, error) {
	if len(deliveryIDs) == 0 {
		return nil, nil
	}
	return q.attempts(ctx, "load attempts", attemptSelect+`d.id IN (`+placeholders(1, len(deliveryIDs))+`) ORDER BY d.id`, anys(deliveryIDs)...)
}

// FreshAttempts reads up to limit of the endpoint's oldest fresh
// deliveries (pending, never attempted, due, unclaimed) with everything an
// attempt needs, in one query and without claiming them: for the holder
// of an exclusive lease, whom nobody else can send beside. after is as for
// ClaimFresh.
func (q *Q) FreshAttempts(ctx context.Context, endpointID, after string, limit int, now int64) ([]*AttemptInput, error) {
	return q.attempts(ctx, "fresh attempts", attemptSelect+`d.endpoint_id = $1 AND d.id > $4 AND `+freshAt2D+`
		ORDER BY d.id LIMIT $3`, endpointID, now, limit, after)
}

// fresh is the condition a drain sends by: a delivery pending, never
// attempted, due at $2 and unclaimed at $2. alias prefixes its columns.
func fresh(alias string) string {
	return strings.NewReplacer("?", alias).Replace(
		`?state = 'pending' AND ?attempts = 0 AND (?next_attempt_at IS NULL OR ?next_attempt_at <= $2) AND (?claimed_until IS NULL OR ?claimed_until <= $2)`)
}

// fresh for hookd_deliveries unaliased, and as d (attemptSelect).
var freshAt2, freshAt2D = fresh(""), fresh("d.")

// FreshDue reports whether the endpoint has a fresh delivery (pending,
// never attempted, unclaimed) due at now: what FreshAttempts and
// ClaimFresh would read.
func (q *Q) FreshDue(ctx context.Context, endpointID string, now int64) (bool, error) {
	var one int
	err := q.queryRow(ctx, `SELECT 1 FROM hookd_deliveries WHERE endpoint_id = $1 AND `+freshAt2+` LIMIT 1`, endpointID, now).Scan(&one)
	if NotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("fresh due: %w", err)
	}
	return true, nil
}

func (q *Q) attempts(ctx context.Context, what, query string, args ...any) ([]*AttemptInput, error) {
	rs, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rs.Close()
	var out []*AttemptInput
	for rs.Next() {
		a, err := scanAttempt(rs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, a)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

func scanAttempt(r row) (*AttemptInput, error) {
	var (
		a                                 AttemptInput
		d                                 endpoint.Delivery
		e                                 endpoint.Endpoint
		o                                 owner.Owner
		dNext, dFinished, eFailing        *int64
		dCreated, dUpdated                int64
		eCreated, eUpdated, oCreated      int64
		globs, attrs, headers             string
		evID, evType, evSubject, evTenant *string
		evEndpoint, evKey                 *string
		evOccurred, evCreated             *int64
		evData                            []byte
	)
	err := r.Scan(
		&d.ID, &d.OwnerID, &d.EndpointID, &d.EventID, &d.EventType, &d.JobID, &d.State, &d.Attempts, &d.LastStatus, &d.LastError, &dNext, &dCreated, &dUpdated, &dFinished,
		&e.URL, &e.Description, &globs, &e.SecretSealed, &e.GrantID, &e.Enabled, &e.DisabledReason, &eFailing, &e.MaxInFlight, &eCreated, &eUpdated, &headers, &e.RateLimit, &e.Ordered, &e.TraceContext,
		&o.Profile, &attrs, &oCreated,
		&evID, &evType, &evSubject, &evOccurred, &evData, &evTenant, &evEndpoint, &evKey, &evCreated)
	if err != nil {
		return nil, err
	}
	d.NextAttemptAt, d.FinishedAt = fromTSPtr(dNext), fromTSPtr(dFinished)
	d.CreatedAt, d.UpdatedAt = fromTS(dCreated), fromTS(dUpdated)
	e.ID, e.OwnerID = d.EndpointID, d.OwnerID
	if err := json.Unmarshal([]byte(globs), &e.EventTypes); err != nil {
		return nil, fmt.Errorf("endpoint %s event types: %w", e.ID, err)
	}
	if err := scanHeaders(&e, headers); err != nil {
		return nil, err
	}
	e.FailingSince = fromTSPtr(eFailing)
	e.CreatedAt, e.UpdatedAt = fromTS(eCreated), fromTS(eUpdated)
	o.ID, o.CreatedAt = d.OwnerID, fromTS(oCreated)
	if err := json.Unmarshal([]byte(attrs), &o.Attributes); err != nil {
		return nil, fmt.Errorf("owner %s attributes: %w", o.ID, err)
	}
	a.Delivery, a.Endpoint, a.Owner = &d, &e, &o
	if evID != nil {
		a.Event = &event.Event{ID: *evID, OwnerID: d.OwnerID, Type: *evType, Subject: *evSubject, OccurredAt: fromTS(*evOccurred),
			Data: evData, Tenant: *evTenant, EndpointID: *evEndpoint, CreatedAt: fromTS(*evCreated)}
		if evKey != nil {
			a.Event.IdempotencyKey = *evKey
		}
	}
	return &a, nil
}

// placeholders returns "$from, …, $(from+n-1)".
func placeholders(from, n int) string {
	var sb strings.Builder
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteByte('$')
		sb.WriteString(strconv.Itoa(from + i))
	}
	return sb.String()
}

func anys[T any](vs []T) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}
