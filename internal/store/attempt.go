package store

import (
	"context"
	"encoding/json"
	"fmt"

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
// caller appends the WHERE clause. The owner's attributes are those the
// event's fanout captured (the envelope's: every attempt sends the same
// bytes), the current ones for an event fanned out before the capture.
// attemptSelectIndexed is the same read through an index the caller
// names (a dialect's pendingIndex).
const attemptSelect = attemptColumns + ` FROM hookd_deliveries d` + attemptJoins

func attemptSelectIndexed(index string) string {
	return attemptColumns + ` FROM hookd_deliveries d` + index + attemptJoins
}

const attemptColumns = `SELECT
		d.id, d.owner_id, d.endpoint_id, d.event_id, d.event_type, d.job_id, d.state, d.attempts, d.last_status, d.last_error, d.next_attempt_at, d.created_at, d.updated_at, d.finished_at,
		e.url, e.description, e.event_types, e.secret_sealed, e.scope_source, e.enabled, e.disabled_reason, e.failing_since, e.max_in_flight, e.created_at, e.updated_at, e.headers, e.rate_limit, e.ordered, e.trace_context, e.slow_since, e.transform_code,
		o.profile, COALESCE(ev.owner_attributes, o.attributes), o.created_at,
		ev.id, ev.type, ev.subject, ev.occurred_at, ev.data, ev.tenant, ev.endpoint_id, ev.idempotency_key, ev.created_at`

const attemptJoins = `
	JOIN hookd_endpoints e ON e.id = d.endpoint_id
	JOIN hookd_owners o ON o.id = d.owner_id
	LEFT JOIN hookd_events ev ON ev.id = d.event_id
	WHERE `

// loadAttemptSQL is LoadAttempt's statement ($1 the endpoint, $2 the event).
const loadAttemptSQL = attemptSelect + `d.endpoint_id = $1 AND d.event_id = $2`

// LoadAttempt reads a delivery with its endpoint, owner and event in one
// round trip (the deliver worker's hot path). NotFound when the delivery is
// gone (its endpoint was deleted).
func (q *Q) LoadAttempt(ctx context.Context, endpointID, eventID string) (*AttemptInput, error) {
	a, err := new(attemptScanner).scan(q.queryRow(ctx, q.routed(loadAttemptSQL, eventID), endpointID, eventID))
	if NotFound(err) {
		return nil, apperr.New(apperr.NotFound, "no delivery of event %q to endpoint %q", eventID, endpointID)
	}
	if err != nil {
		return nil, fmt.Errorf("load attempt: %w", q.db.routeMissed(err))
	}
	return a, nil
}

// OwnerAsOfEvent returns o with the attributes the event's fanout
// captured, as every attempt of its deliveries renders them
// (attemptSelect); o itself when none were captured.
func (q *Q) OwnerAsOfEvent(ctx context.Context, o *owner.Owner, eventID string) (*owner.Owner, error) {
	var attrs *string
	err := q.queryRow(ctx, q.routed(`SELECT owner_attributes FROM hookd_events WHERE id = $1`, eventID), eventID).Scan(&attrs)
	if err != nil && !NotFound(err) {
		return nil, fmt.Errorf("event %s owner attributes: %w", eventID, err)
	}
	if attrs == nil {
		return o, nil
	}
	as := *o
	as.Attributes = nil
	if err := json.Unmarshal([]byte(*attrs), &as.Attributes); err != nil {
		return nil, fmt.Errorf("event %s owner attributes: %w", eventID, err)
	}
	return &as, nil
}

func (q *Q) attempts(ctx context.Context, what, query string, args ...any) ([]*AttemptInput, error) {
	out, err := collect(ctx, q, new(attemptScanner).scan, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// attemptScanner reads the rows of one attemptSelect. The rows of one
// statement see one snapshot, so every row of an endpoint carries the same
// endpoint columns: a drain reads one endpoint's deliveries, and decoding
// its event types, headers and owner attributes again for each row was a
// fifth of the objects a delivery allocated (docs/performance.md). The
// scanner decodes them once and hands every row of that endpoint the same
// *Endpoint, and the same *Owner while the attributes' text is the same.
// What a caller records on a row's endpoint (settle's health moves) is
// then what the read's later rows of that endpoint see too: the state the
// database has by then, where each row's own copy kept the read's.
type attemptScanner struct {
	endpoint *endpoint.Endpoint
	owner    *owner.Owner
	attrs    string
	// e and o take each row's endpoint and owner columns; a row of a new
	// endpoint or owner copies them out. v holds the columns that are
	// converted: Scan's arguments escape, so locals would be allocated
	// again for every row.
	e endpoint.Endpoint
	o owner.Owner
	v attemptScratch
}

type attemptScratch struct {
	dNext, dFinished, eFailing, eSlow *int64
	dCreated, dUpdated                int64
	eCreated, eUpdated, oCreated      int64
	globs, attrs, headers             string
	evID, evType, evSubject, evTenant *string
	evEndpoint, evKey                 *string
	evOccurred, evCreated             *int64
	evData                            []byte
}

func (s *attemptScanner) scan(r row) (*AttemptInput, error) {
	a := &AttemptInput{Delivery: new(endpoint.Delivery)}
	d, e, o, v := a.Delivery, &s.e, &s.o, &s.v
	// Byte slices are scanned fresh: the previous row's event data and
	// endpoint secret went out with its AttemptInput, and a driver that
	// reused a destination's array would write this row's into them.
	v.evData, e.SecretSealed = nil, nil
	err := r.Scan(
		&d.ID, &d.OwnerID, &d.EndpointID, &d.EventID, &d.EventType, &d.JobID, &d.State, &d.Attempts, &d.LastStatus, &d.LastError, &v.dNext, &v.dCreated, &v.dUpdated, &v.dFinished,
		&e.URL, &e.Description, &v.globs, &e.SecretSealed, &e.GrantID, &e.Enabled, &e.DisabledReason, &v.eFailing, &e.MaxInFlight, &v.eCreated, &v.eUpdated, &v.headers, &e.RateLimit, &e.Ordered, &e.TraceContext, &v.eSlow, &e.Transformation,
		&o.Profile, &v.attrs, &v.oCreated,
		&v.evID, &v.evType, &v.evSubject, &v.evOccurred, &v.evData, &v.evTenant, &v.evEndpoint, &v.evKey, &v.evCreated)
	if err != nil {
		return nil, err
	}
	d.NextAttemptAt, d.FinishedAt = fromTSPtr(v.dNext), fromTSPtr(v.dFinished)
	d.CreatedAt, d.UpdatedAt = fromTS(v.dCreated), fromTS(v.dUpdated)
	if s.endpoint != nil && s.endpoint.ID == d.EndpointID {
		a.Endpoint = s.endpoint
	} else {
		// The copy takes what is decoded: decoding into the scratch would
		// reuse the slice and map the previous endpoint's copy holds.
		ne := *e
		ne.ID, ne.OwnerID = d.EndpointID, d.OwnerID
		if err := json.Unmarshal([]byte(v.globs), &ne.EventTypes); err != nil {
			return nil, fmt.Errorf("endpoint %s event types: %w", ne.ID, err)
		}
		if err := scanHeaders(&ne, v.headers); err != nil {
			return nil, err
		}
		ne.FailingSince, ne.SlowSince = fromTSPtr(v.eFailing), fromTSPtr(v.eSlow)
		ne.CreatedAt, ne.UpdatedAt = fromTS(v.eCreated), fromTS(v.eUpdated)
		a.Endpoint, s.endpoint = &ne, &ne
	}
	if s.owner != nil && s.owner.ID == d.OwnerID && s.attrs == v.attrs {
		a.Owner = s.owner
	} else {
		no := *o
		no.ID, no.CreatedAt = d.OwnerID, fromTS(v.oCreated)
		if err := json.Unmarshal([]byte(v.attrs), &no.Attributes); err != nil {
			return nil, fmt.Errorf("owner %s attributes: %w", no.ID, err)
		}
		a.Owner, s.owner, s.attrs = &no, &no, v.attrs
	}
	if v.evID != nil {
		a.Event = &event.Event{ID: *v.evID, OwnerID: d.OwnerID, Type: *v.evType, Subject: *v.evSubject, OccurredAt: fromTS(*v.evOccurred),
			Data: v.evData, Tenant: *v.evTenant, EndpointID: *v.evEndpoint, CreatedAt: fromTS(*v.evCreated)}
		if v.evKey != nil {
			a.Event.IdempotencyKey = *v.evKey
		}
	}
	return a, nil
}
