package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/endpoint"
)

// endpointCols: scope_source holds the endpoint's grant id (GrantID).
const endpointCols = `id, owner_id, url, description, event_types, secret_sealed, scope_source, enabled, disabled_reason, failing_since, max_in_flight, created_at, updated_at, signing, headers, rate_limit, ordered, trace_context, developer, kind`

// endpointReadCols are endpointCols and the columns hookd writes itself,
// not the owner (slow_since: the endpoint's lane), which scanEndpoint reads.
const endpointReadCols = endpointCols + `, slow_since, filter_code, transform_code`

func scanEndpoint(r row) (*endpoint.Endpoint, error) {
	var e endpoint.Endpoint
	var globs string
	var failing, slow *int64
	var created, updated int64
	var signing, headers string
	if err := r.Scan(&e.ID, &e.OwnerID, &e.URL, &e.Description, &globs, &e.SecretSealed, &e.GrantID, &e.Enabled, &e.DisabledReason, &failing, &e.MaxInFlight, &created, &updated, &signing,
		&headers, &e.RateLimit, &e.Ordered, &e.TraceContext, &e.Developer, &e.Kind, &slow, &e.Filter, &e.Transformation); err != nil {
		return nil, err
	}
	if err := scanHeaders(&e, headers); err != nil {
		return nil, err
	}
	var err error
	if e.Signing, err = decodeSigning(e.ID, signing); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(globs), &e.EventTypes); err != nil {
		return nil, fmt.Errorf("endpoint %s event types: %w", e.ID, err)
	}
	e.FailingSince, e.SlowSince = fromTSPtr(failing), fromTSPtr(slow)
	e.CreatedAt = fromTS(created)
	e.UpdatedAt = fromTS(updated)
	return &e, nil
}

func notFoundEndpoint(id string) error {
	return apperr.New(apperr.NotFound, "endpoint %q not found", id)
}

// encodeEndpoint returns the JSON columns of e: its event type globs and
// its signing.
func encodeEndpoint(e *endpoint.Endpoint) (globs []byte, signing string, err error) {
	if globs, err = json.Marshal(e.EventTypes); err != nil {
		return nil, "", fmt.Errorf("encode endpoint event types: %w", err)
	}
	if signing, err = encodeSigning(e.Signing); err != nil {
		return nil, "", err
	}
	return globs, signing, nil
}

// CreateEndpoint inserts e and its lease slots.
func (q *Q) CreateEndpoint(ctx context.Context, e *endpoint.Endpoint) error {
	e.Kind = e.KindOrHTTP()
	globs, signing, err := encodeEndpoint(e)
	if err != nil {
		return err
	}
	_, err = q.exec(ctx, `INSERT INTO hookd_endpoints (`+endpointCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)`,
		e.ID, e.OwnerID, e.URL, e.Description, string(globs), e.SecretSealed, e.GrantID, e.Enabled, e.DisabledReason, tsPtr(e.FailingSince), e.MaxInFlight, ts(e.CreatedAt), ts(e.UpdatedAt), signing,
		headersJSON(e.Headers), e.RateLimit, e.Ordered, e.TraceContext, e.Developer, e.Kind)
	if err != nil {
		return fmt.Errorf("create endpoint: %w", err)
	}
	if err := q.writeCode(ctx, e, true); err != nil {
		return err
	}
	return q.resizeLeases(ctx, e.ID, e.MaxInFlight)
}

// GetEndpoint returns one of an owner's endpoints ("" owner: any).
func (q *Q) GetEndpoint(ctx context.Context, ownerID, id string) (*endpoint.Endpoint, error) {
	e, err := scanEndpoint(q.queryRow(ctx, `SELECT `+endpointReadCols+` FROM hookd_endpoints WHERE id = $1 AND ($2 = '' OR owner_id = $2)`, id, ownerID))
	if NotFound(err) {
		return nil, notFoundEndpoint(id)
	}
	return e, err
}

// ListEndpoints returns an owner's endpoints, oldest first. enabledOnly
// limits them to enabled ones (what fanout offers events to).
func (q *Q) ListEndpoints(ctx context.Context, ownerID string, enabledOnly bool) ([]*endpoint.Endpoint, error) {
	out, err := collect(ctx, q, scanEndpoint, `SELECT `+endpointReadCols+` FROM hookd_endpoints WHERE owner_id = $1 AND ($2 = false OR enabled = true) ORDER BY created_at, id`, ownerID, enabledOnly)
	if err != nil {
		return nil, fmt.Errorf("list endpoints: %w", err)
	}
	return out, nil
}

// UpdateEndpoint writes e's mutable fields (url, description, globs, secret,
// scope, enabled, reason, failing_since, max_in_flight, updated_at).
func (q *Q) UpdateEndpoint(ctx context.Context, e *endpoint.Endpoint) error {
	globs, signing, err := encodeEndpoint(e)
	if err != nil {
		return err
	}
	n, err := q.exec(ctx, `UPDATE hookd_endpoints SET url = $3, description = $4, event_types = $5, secret_sealed = $6, scope_source = $7,
		enabled = $8, disabled_reason = $9, failing_since = $10, max_in_flight = $11, updated_at = $12, signing = $13,
		headers = $14, rate_limit = $15, ordered = $16, trace_context = $17, developer = $18 WHERE id = $1 AND owner_id = $2`,
		e.ID, e.OwnerID, e.URL, e.Description, string(globs), e.SecretSealed, e.GrantID, e.Enabled, e.DisabledReason, tsPtr(e.FailingSince), e.MaxInFlight, ts(e.UpdatedAt), signing,
		headersJSON(e.Headers), e.RateLimit, e.Ordered, e.TraceContext, e.Developer)
	if err != nil {
		return fmt.Errorf("update endpoint: %w", err)
	}
	if n == 0 {
		return notFoundEndpoint(e.ID)
	}
	if err := q.writeCode(ctx, e, false); err != nil {
		return err
	}
	return q.resizeLeases(ctx, e.ID, e.MaxInFlight)
}

// DeleteEndpoint deletes one of an owner's endpoints with its deliveries and
// leases; run it in a transaction. Leases go by their foreign key;
// deliveries have none on PostgreSQL (migration 011), so they are deleted
// here. A fanout that read the endpoint before it went may still write a
// delivery for it; that delivery's job drops it (DropOrphanDelivery).
func (q *Q) DeleteEndpoint(ctx context.Context, ownerID, id string) error {
	n, err := q.exec(ctx, `DELETE FROM hookd_endpoints WHERE id = $1 AND owner_id = $2`, id, ownerID)
	if err != nil {
		return fmt.Errorf("delete endpoint: %w", err)
	}
	if n == 0 {
		return notFoundEndpoint(id)
	}
	if _, err := q.exec(ctx, `DELETE FROM hookd_deliveries WHERE endpoint_id = $1`, id); err != nil {
		return fmt.Errorf("delete endpoint: %w", err)
	}
	return nil
}

// MarkEndpointFailing records a non-success at now: failing_since is set if
// it was not. If rules say an endpoint failing that long is disabled
// ([endpoint.Rules.ShouldDisable]), it is disabled with reason. It returns
// the endpoint's failing_since and whether this call disabled it.
func (q *Q) MarkEndpointFailing(ctx context.Context, id string, now time.Time, rules endpoint.Rules, reason string) (failingSince int64, disabled bool, err error) {
	at := now.UnixMicro()
	err = q.queryRow(ctx, `UPDATE hookd_endpoints SET failing_since = COALESCE(failing_since, $2) WHERE id = $1 RETURNING failing_since`, id, at).Scan(&failingSince)
	if NotFound(err) {
		return 0, false, notFoundEndpoint(id)
	}
	if err != nil {
		return 0, false, fmt.Errorf("mark endpoint failing: %w", err)
	}
	// Both times at the column's microsecond precision.
	since := time.UnixMicro(failingSince)
	if !rules.ShouldDisable(&since, time.UnixMicro(at)) {
		return failingSince, false, nil
	}
	n, err := q.exec(ctx, `UPDATE hookd_endpoints SET enabled = false, disabled_reason = $2, updated_at = $3 WHERE id = $1 AND enabled = true`, id, reason, at)
	if err != nil {
		return 0, false, fmt.Errorf("disable endpoint: %w", err)
	}
	return failingSince, n == 1, nil
}

// MarkEndpointHealthy clears failing_since after a success; cleared says
// whether it was set (this call is the endpoint's recovery).
func (q *Q) MarkEndpointHealthy(ctx context.Context, id string) (cleared bool, err error) {
	n, err := q.exec(ctx, `UPDATE hookd_endpoints SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL`, id)
	if err != nil {
		return false, fmt.Errorf("mark endpoint healthy: %w", err)
	}
	return n == 1, nil
}
