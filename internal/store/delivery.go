package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/endpoint"
)

const deliveryCols = `id, owner_id, endpoint_id, event_id, event_type, job_id, state, attempts, last_status, last_error, next_attempt_at, created_at, updated_at, finished_at`

func scanDelivery(r row) (*endpoint.Delivery, error) {
	var d endpoint.Delivery
	var next, finished *int64
	var created, updated int64
	if err := r.Scan(&d.ID, &d.OwnerID, &d.EndpointID, &d.EventID, &d.EventType, &d.JobID, &d.State, &d.Attempts, &d.LastStatus, &d.LastError, &next, &created, &updated, &finished); err != nil {
		return nil, err
	}
	d.NextAttemptAt = fromTSPtr(next)
	d.CreatedAt = fromTS(created)
	d.UpdatedAt = fromTS(updated)
	d.FinishedAt = fromTSPtr(finished)
	return &d, nil
}

// InsertDeliveries inserts pending deliveries, skipping any (endpoint, event)
// pair that already has one: fanout run twice enqueues once. It returns the
// ones it inserted.
func (q *Q) InsertDeliveries(ctx context.Context, ds []*endpoint.Delivery) ([]*endpoint.Delivery, error) {
	var out []*endpoint.Delivery
	const perStmt = 200 // 11 params each; well under both engines' limits
	for len(ds) > 0 {
		chunk := ds[:min(perStmt, len(ds))]
		ds = ds[len(chunk):]
		var sb strings.Builder
		sb.WriteString(`INSERT INTO hookd_deliveries (id, owner_id, endpoint_id, event_id, event_type, job_id, state, attempts, next_attempt_at, created_at, updated_at) VALUES `)
		args := make([]any, 0, len(chunk)*11)
		byID := make(map[string]*endpoint.Delivery, len(chunk))
		for i, d := range chunk {
			if i > 0 {
				sb.WriteByte(',')
			}
			n := len(args)
			fmt.Fprintf(&sb, "($%d,$%d,$%d,$%d,$%d,$%d,$%d,$%d,$%d,$%d,$%d)", n+1, n+2, n+3, n+4, n+5, n+6, n+7, n+8, n+9, n+10, n+11)
			args = append(args, d.ID, d.OwnerID, d.EndpointID, d.EventID, d.EventType, d.JobID, string(d.State), d.Attempts, tsPtr(d.NextAttemptAt), ts(d.CreatedAt), ts(d.UpdatedAt))
			byID[d.ID] = d
		}
		sb.WriteString(` ON CONFLICT (endpoint_id, event_id) DO NOTHING RETURNING id`)
		rs, err := q.query(ctx, sb.String(), args...)
		if err != nil {
			return nil, fmt.Errorf("insert deliveries: %w", err)
		}
		for rs.Next() {
			var id string
			if err := rs.Scan(&id); err != nil {
				rs.Close()
				return nil, err
			}
			out = append(out, byID[id])
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return nil, fmt.Errorf("insert deliveries: %w", err)
		}
	}
	return out, nil
}

// FindDelivery returns the delivery of one event to one endpoint.
func (q *Q) FindDelivery(ctx context.Context, endpointID, eventID string) (*endpoint.Delivery, error) {
	d, err := scanDelivery(q.queryRow(ctx, `SELECT `+deliveryCols+` FROM hookd_deliveries WHERE endpoint_id = $1 AND event_id = $2`, endpointID, eventID))
	if NotFound(err) {
		return nil, apperr.New(apperr.NotFound, "no delivery of event %q to endpoint %q", eventID, endpointID)
	}
	return d, err
}

// DeliveryPending reports whether the delivery of an event to an endpoint
// is still pending for job jobID (not settled, not another job's): the
// short read a job makes when it finds the endpoint busy. NotFound when the
// delivery is gone.
func (q *Q) DeliveryPending(ctx context.Context, endpointID, eventID string, jobID int64) (bool, error) {
	var state string
	var job int64
	err := q.queryRow(ctx, `SELECT state, job_id FROM hookd_deliveries WHERE endpoint_id = $1 AND event_id = $2`, endpointID, eventID).Scan(&state, &job)
	if NotFound(err) {
		return false, apperr.New(apperr.NotFound, "no delivery of event %q to endpoint %q", eventID, endpointID)
	}
	if err != nil {
		return false, fmt.Errorf("delivery pending: %w", err)
	}
	return state == string(endpoint.Pending) && (job == 0 || job == jobID), nil
}

// Attempt is the outcome of one delivery attempt, as recorded.
type Attempt struct {
	DeliveryID string
	// Sent is true when a request was made (an attempt was spent).
	Sent          bool
	Status        int
	Error         string
	State         endpoint.DeliveryState
	NextAttemptAt *int64
	JobID         int64
	Now           int64
}

// RecordAttempt updates a delivery after an attempt or a snooze.
func (q *Q) RecordAttempt(ctx context.Context, a Attempt) error {
	var finished *int64
	if a.State != endpoint.Pending {
		finished = &a.Now
	}
	sent := 0
	if a.Sent {
		sent = 1
	}
	_, err := q.exec(ctx, `UPDATE hookd_deliveries SET claimed_until = NULL, attempts = attempts + $2, last_status = $3, last_error = $4, state = $5,
		next_attempt_at = $6, finished_at = $7, updated_at = $8, job_id = CASE WHEN CAST($9 AS BIGINT) = 0 THEN job_id ELSE CAST($9 AS BIGINT) END WHERE id = $1`,
		a.DeliveryID, sent, a.Status, a.Error, string(a.State), a.NextAttemptAt, finished, a.Now, a.JobID)
	if err != nil {
		return fmt.Errorf("record attempt: %w", err)
	}
	return nil
}

// stillPending is "state = 'pending'" for statements that pick rows by id:
// written so PostgreSQL cannot use the partial index of pending rows for
// it. With statistics lagging a burst of fanout it did, scanning every
// pending row of the table (~12–20 ms) to update 32 of them by id.
const stillPending = `state NOT IN ('delivered', 'failed')`

// Delivered is one successful send of a batch.
type Delivered struct {
	DeliveryID string
	Status     int
	// SentBy is the River job that made the attempt: the lease holder
	// whose drain sent it. It becomes the delivery's job_id, so the log
	// links every attempted delivery to a task.
	SentBy int64
}

// (Successes are marked with one statement per distinct status, not
// UPDATE … FROM (VALUES …): PostgreSQL planned that as a scan of the whole
// table, ~80 ms a batch at 100,000 rows.)
type stmt struct {
	sql  string
	args []any
}

func deliveredStmts(ds []Delivered, now int64) []stmt {
	type group struct {
		status int
		sentBy int64
	}
	groups := map[group][]any{}
	for _, d := range ds {
		g := group{d.Status, d.SentBy}
		groups[g] = append(groups[g], d.DeliveryID)
	}
	out := make([]stmt, 0, len(groups))
	for g, ids := range groups {
		out = append(out, stmt{`UPDATE hookd_deliveries SET claimed_until = NULL, attempts = attempts + 1, last_status = $1, last_error = '', state = 'delivered',
			next_attempt_at = NULL, finished_at = $2, updated_at = $2, job_id = $3
			WHERE ` + stillPending + ` AND id IN (` + placeholders(4, len(ids)) + `)`, append([]any{g.status, now, g.sentBy}, ids...)})
	}
	return out
}

// deleteJobsStmt deletes River jobs that are not running: River's
// JobDeleteMany in one plain statement (it also selects and returns every
// deleted row, which a drain's recorder has no use for).
func deleteJobsStmt(ids []int64) stmt {
	return stmt{`DELETE FROM river_job WHERE state <> 'running' AND id IN (` + placeholders(1, len(ids)) + `)`, anys(ids)}
}

// RecordDrained records a lease drain's first-attempt successes as
// delivered and deletes their River jobs (unrun: the drain sent them) in
// one relaxed transaction; rows no longer pending are left alone. job_id
// becomes the job that sent each one (Delivered.SentBy), which River keeps
// like any finished job, so the delivery still links to a task. On
// PostgreSQL one round trip (the statements go out as one pipelined batch,
// an implicit transaction), on SQLite one transaction.
func (db *DB) RecordDrained(ctx context.Context, ds []Delivered, jobIDs []int64, now int64) error {
	stmts := deliveredStmts(ds, now)
	if len(jobIDs) > 0 {
		stmts = append(stmts, deleteJobsStmt(jobIDs))
	}
	if len(stmts) == 0 {
		return nil
	}
	if db.pool == nil {
		return db.InTx(ctx, func(q *Q) error {
			for _, st := range stmts {
				if _, err := q.exec(ctx, st.sql, st.args...); err != nil {
					return fmt.Errorf("record drained: %w", err)
				}
			}
			return nil
		})
	}
	var b pgx.Batch
	b.Queue(relaxCommit)
	for _, st := range stmts {
		b.Queue(st.sql, st.args...)
	}
	if err := db.pool.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("record drained: %w", err)
	}
	return nil
}

// ListDeliveries returns an endpoint's latest deliveries, newest first;
// before (a delivery id, optional) pages backwards.
func (q *Q) ListDeliveries(ctx context.Context, ownerID, endpointID string, limit int, before string) ([]*endpoint.Delivery, error) {
	return q.ListDeliveriesWhere(ctx, DeliveryFilter{OwnerID: ownerID, EndpointID: endpointID, Limit: limit, Before: before})
}

// FailedDeliveries returns up to limit failed deliveries of an endpoint,
// oldest first (what redeliver re-enqueues).
func (q *Q) FailedDeliveries(ctx context.Context, endpointID string, limit int) ([]*endpoint.Delivery, error) {
	rs, err := q.query(ctx, `SELECT `+deliveryCols+` FROM hookd_deliveries WHERE endpoint_id = $1 AND state = 'failed' ORDER BY id LIMIT $2`, endpointID, limit)
	if err != nil {
		return nil, fmt.Errorf("failed deliveries: %w", err)
	}
	defer rs.Close()
	var out []*endpoint.Delivery
	for rs.Next() {
		d, err := scanDelivery(rs)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rs.Err()
}

// ResetDelivery puts a failed delivery back to pending under a new job,
// with a fresh attempt budget (attempts counts the current job's attempts).
func (q *Q) ResetDelivery(ctx context.Context, id string, jobID, now int64) error {
	_, err := q.exec(ctx, `UPDATE hookd_deliveries SET state = 'pending', job_id = $2, attempts = 0, finished_at = NULL, next_attempt_at = $3, updated_at = $3 WHERE id = $1 AND state = 'failed'`, id, jobID, now)
	if err != nil {
		return fmt.Errorf("reset delivery: %w", err)
	}
	return nil
}

// PruneDeliveries deletes up to limit deliveries that finished before cutoff.
func (q *Q) PruneDeliveries(ctx context.Context, cutoff int64, limit int) (int64, error) {
	n, err := q.exec(ctx, `DELETE FROM hookd_deliveries WHERE id IN (SELECT id FROM hookd_deliveries WHERE finished_at < $1 ORDER BY finished_at LIMIT $2)`, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("prune deliveries: %w", err)
	}
	return n, nil
}

// OwnsJob reports whether River job jobID, whose arguments name
// (endpointID, eventID), is the current job of a delivery of ownerID's.
// The pair makes it one lookup by the deliveries' unique key: job_id has no
// index (it would cost every delivery write), and scanning for it grew with
// the table.
func (q *Q) OwnsJob(ctx context.Context, ownerID string, jobID int64, endpointID, eventID string) (bool, error) {
	var one int
	err := q.queryRow(ctx, `SELECT 1 FROM hookd_deliveries WHERE endpoint_id = $1 AND event_id = $2 AND owner_id = $3 AND job_id = $4`,
		endpointID, eventID, ownerID, jobID).Scan(&one)
	if NotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("owns job: %w", err)
	}
	return true, nil
}

// EndpointsWithDelivery returns the endpoints that already have a delivery
// of eventID (what a repeated fanout must skip).
func (q *Q) EndpointsWithDelivery(ctx context.Context, eventID string) (map[string]bool, error) {
	rs, err := q.query(ctx, `SELECT endpoint_id FROM hookd_deliveries WHERE event_id = $1`, eventID)
	if err != nil {
		return nil, fmt.Errorf("endpoints with delivery: %w", err)
	}
	defer rs.Close()
	out := map[string]bool{}
	for rs.Next() {
		var id string
		if err := rs.Scan(&id); err != nil {
			return nil, err
		}
		out[id] = true
	}
	return out, rs.Err()
}
