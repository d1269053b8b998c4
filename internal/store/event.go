package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/event"
)

const eventCols = `id, owner_id, type, subject, occurred_at, data, tenant, endpoint_id, COALESCE(idempotency_key, ''), created_at`

func scanEvent(r row) (*event.Event, error) {
	var e event.Event
	var occurred, created int64
	var data []byte
	if err := r.Scan(&e.ID, &e.OwnerID, &e.Type, &e.Subject, &occurred, &data, &e.Tenant, &e.EndpointID, &e.IdempotencyKey, &created); err != nil {
		return nil, err
	}
	e.Data = data
	e.OccurredAt = fromTS(occurred)
	e.CreatedAt = fromTS(created)
	return &e, nil
}

// InsertEvent inserts e. With an idempotency key already used by the owner,
// nothing is written and the earlier event's id is returned with
// inserted=false.
func (q *Q) InsertEvent(ctx context.Context, e *event.Event) (id string, inserted bool, err error) {
	var key any
	if e.IdempotencyKey != "" {
		key = e.IdempotencyKey
	}
	n, err := q.q.exec(ctx, `INSERT INTO hookd_events (id, owner_id, type, subject, occurred_at, data, tenant, endpoint_id, idempotency_key, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (owner_id, idempotency_key) DO NOTHING`,
		e.ID, e.OwnerID, e.Type, e.Subject, ts(e.OccurredAt), []byte(e.Data), e.Tenant, e.EndpointID, key, ts(e.CreatedAt))
	if err != nil {
		return "", false, fmt.Errorf("insert event: %w", err)
	}
	if n == 1 {
		return e.ID, true, nil
	}
	err = q.q.queryRow(ctx, `SELECT id FROM hookd_events WHERE owner_id = $1 AND idempotency_key = $2`, e.OwnerID, e.IdempotencyKey).Scan(&id)
	if err != nil {
		return "", false, fmt.Errorf("insert event: idempotency lookup: %w", err)
	}
	return id, false, nil
}

// GetEvent returns one event of an owner ("" for any owner).
func (q *Q) GetEvent(ctx context.Context, ownerID, id string) (*event.Event, error) {
	e, err := scanEvent(q.q.queryRow(ctx, `SELECT `+eventCols+` FROM hookd_events WHERE id = $1 AND ($2 = '' OR owner_id = $2)`, id, ownerID))
	if NotFound(err) {
		return nil, apperr.New(apperr.NotFound, "event %q not found", id)
	}
	return e, err
}

// PruneEvents deletes up to limit events created before cutoff; it returns
// how many it deleted.
func (q *Q) PruneEvents(ctx context.Context, cutoff int64, limit int) (int64, error) {
	n, err := q.q.exec(ctx, `DELETE FROM hookd_events WHERE id IN (SELECT id FROM hookd_events WHERE created_at < $1 ORDER BY created_at LIMIT $2)`, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("prune events: %w", err)
	}
	return n, nil
}

// SetFanoutJobs records each event's webhook.fanout job id (publish, in the
// event's transaction): the event awaits fanout until MarkFannedOut.
func (q *Q) SetFanoutJobs(ctx context.Context, jobs map[string]int64) error {
	if len(jobs) == 0 {
		return nil
	}
	var sb strings.Builder
	args := make([]any, 0, 2*len(jobs))
	sb.WriteString(`UPDATE hookd_events SET fanout_job = CASE id`)
	for id, job := range jobs {
		fmt.Fprintf(&sb, ` WHEN $%d THEN CAST($%d AS BIGINT)`, len(args)+1, len(args)+2)
		args = append(args, id, job)
	}
	sb.WriteString(` ELSE fanout_job END WHERE id IN (` + placeholders(len(args)+1, len(jobs)) + `)`)
	for id := range jobs {
		args = append(args, id)
	}
	if _, err := q.q.exec(ctx, sb.String(), args...); err != nil {
		return fmt.Errorf("set fanout jobs: %w", err)
	}
	return nil
}

// AwaitingFanout returns up to limit of the owner's events still awaiting
// fanout, oldest first, except the one given, with their fanout jobs' ids;
// on PostgreSQL it locks them (skipping any another fanout has locked), so
// call it inside the transaction that fans them out.
func (q *Q) AwaitingFanout(ctx context.Context, ownerID, except string, limit int) ([]*event.Event, []int64, error) {
	rs, err := q.q.query(ctx, `SELECT `+eventCols+`, fanout_job FROM hookd_events WHERE owner_id = $1 AND fanout_job <> 0 AND id <> $2
		ORDER BY id LIMIT $3`+q.skipLocked(), ownerID, except, limit)
	if err != nil {
		return nil, nil, fmt.Errorf("events awaiting fanout: %w", err)
	}
	defer rs.Close()
	var evs []*event.Event
	var jobs []int64
	for rs.Next() {
		var e event.Event
		var occurred, created, job int64
		if err := rs.Scan(&e.ID, &e.OwnerID, &e.Type, &e.Subject, &occurred, &e.Data, &e.Tenant, &e.EndpointID, &e.IdempotencyKey, &created, &job); err != nil {
			return nil, nil, fmt.Errorf("events awaiting fanout: %w", err)
		}
		e.OccurredAt, e.CreatedAt = fromTS(occurred), fromTS(created)
		evs = append(evs, &e)
		jobs = append(jobs, job)
	}
	if err := rs.Err(); err != nil {
		return nil, nil, fmt.Errorf("events awaiting fanout: %w", err)
	}
	return evs, jobs, nil
}

// MarkFannedOut records that these events were fanned out.
func (q *Q) MarkFannedOut(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := q.q.exec(ctx, `UPDATE hookd_events SET fanout_job = 0 WHERE id IN (`+placeholders(1, len(ids))+`)`, anys(ids)...); err != nil {
		return fmt.Errorf("mark fanned out: %w", err)
	}
	return nil
}

// LockEvent waits until no other transaction holds the event (on
// PostgreSQL: SELECT … FOR UPDATE; SQLite has one writer at a time): a
// fanout then sees whatever another fanout that took it committed.
func (q *Q) LockEvent(ctx context.Context, id string) error {
	if q.db.Engine != Postgres {
		return nil
	}
	var got string
	err := q.q.queryRow(ctx, `SELECT id FROM hookd_events WHERE id = $1 FOR UPDATE`, id).Scan(&got)
	if err != nil && !NotFound(err) {
		return fmt.Errorf("lock event: %w", err)
	}
	return nil
}
