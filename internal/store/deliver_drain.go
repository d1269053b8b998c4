package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// Speeds up: deliver and settle (attempt.go, lease.go, settle.go). The
// plain path: one River job per delivery, each reading its attempt
// (LoadAttempt), taking a lease slot and settling alone. Here: a lease
// holder claims a batch of fresh deliveries (ClaimFresh), loads them in one
// read (LoadAttempts), records their successes in one write
// (RecordDrained: one round trip on PostgreSQL, the dialect's
// execRelaxed), releases the claims, and wakes the next delivery's job.

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
	err := q.queryRow(ctx, q.routedFresh(q.db.freshDueSQL()), endpointID, now).Scan(&one)
	if NotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("fresh due: %w", err)
	}
	return true, nil
}

// freshDueSQL is FreshDue's read ($1 the endpoint, $2 now), through
// hookd_deliveries_pending as FreshAttempts' is.
func (db *DB) freshDueSQL() string {
	return `SELECT 1 FROM hookd_deliveries` + db.d.pendingIndex() + ` WHERE endpoint_id = $1 AND ` + freshAt2 + ` LIMIT 1`
}

// FreshAttempts reads up to limit of the endpoint's oldest fresh
// deliveries (pending, never attempted, due, unclaimed) with everything an
// attempt needs, in one query and without claiming them: for the holder
// of an exclusive lease, whom nobody else can send beside. after is as for
// ClaimFresh.
func (q *Q) FreshAttempts(ctx context.Context, endpointID, after string, limit int, now int64) ([]*AttemptInput, error) {
	return q.attempts(ctx, "fresh attempts", q.routedFresh(q.db.freshAttemptsSQL()), endpointID, now, limit, after)
}

// freshAttemptsSQL is FreshAttempts' read ($1 the endpoint, $2 now, $3 the
// limit, $4 after), through hookd_deliveries_pending (pendingIndex): with
// the attempt's columns to read, SQLite took the (endpoint_id, id) index
// of every delivery instead, and a drain's first read (after "") walked
// the endpoint's whole history, 1.6 s at 250,000 deliveries an endpoint.
func (db *DB) freshAttemptsSQL() string {
	return attemptSelectIndexed(db.d.pendingIndex()) + `d.endpoint_id = $1 AND d.id > $4 AND ` + freshAt2D + `
		ORDER BY d.id LIMIT $3`
}

// ClaimFresh claims up to limit of the endpoint's oldest fresh deliveries
// (pending, never attempted, due, unclaimed) until `until` and returns
// their ids: what a lease holder drains next. Concurrent claimers (the
// holders of a kwork subscription's slots) get disjoint sets.
//
// after ("" for none) skips ids up to and including it: a drain passes the
// last id it read, so its next read starts past the deliveries it already
// sent, whose index entries stay behind, dead, until vacuum (under a long
// backlog, re-reading them from the head made each read slower).
func (q *Q) ClaimFresh(ctx context.Context, endpointID, after string, limit int, now, until int64) ([]string, error) {
	// The candidates are picked once, in a materialized CTE: PostgreSQL may
	// re-run an IN (… LIMIT … SKIP LOCKED) subquery per row and so claim
	// more than limit.
	ids, err := collect(ctx, q, scanOne[string], q.routedFresh(q.db.claimFreshSQL()), endpointID, now, until, limit, after)
	if err != nil {
		return nil, fmt.Errorf("claim fresh deliveries: %w", err)
	}
	return ids, nil
}

// claimFreshSQL is ClaimFresh's statement ($1 the endpoint, $2 now, $3
// until, $4 the limit, $5 after); its read names the pending index as
// FreshAttempts' does.
func (db *DB) claimFreshSQL() string {
	return `WITH c AS MATERIALIZED (SELECT id FROM hookd_deliveries` + db.d.pendingIndex() + ` WHERE endpoint_id = $1 AND id > $5 AND ` + freshAt2 + `
		            ORDER BY id LIMIT $4` + db.d.skipLocked() + `)
		UPDATE hookd_deliveries SET claimed_until = $3
		WHERE id IN (SELECT id FROM c) AND (claimed_until IS NULL OR claimed_until <= $2) AND ` + stillPending + ` AND attempts = 0
		RETURNING id`
}

// LoadAttempts reads the deliveries with these ids (those that still
// exist), oldest first, in one round trip: what a lease drain sends next.
func (q *Q) LoadAttempts(ctx context.Context, deliveryIDs []string) ([]*AttemptInput, error) {
	if len(deliveryIDs) == 0 {
		return nil, nil
	}
	return q.attempts(ctx, "load attempts", attemptSelect+`d.id IN (`+placeholders(1, len(deliveryIDs))+`) ORDER BY d.id`, anys(deliveryIDs)...)
}

// ReleaseClaims gives up claims on deliveries that were not sent, so their
// own jobs (or another drain) can send them at once.
func (q *Q) ReleaseClaims(ctx context.Context, deliveryIDs []string) error {
	if len(deliveryIDs) == 0 {
		return nil
	}
	_, err := q.exec(ctx, `UPDATE hookd_deliveries SET claimed_until = NULL WHERE `+stillPending+` AND id IN (`+placeholders(1, len(deliveryIDs))+`)`, anys(deliveryIDs)...)
	if err != nil {
		return fmt.Errorf("release claims: %w", err)
	}
	return nil
}

// Delivered is one successful send of a batch.
type Delivered struct {
	DeliveryID string
	EventID    string // the delivery's event ("": not known; see ofEvent)
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

// deliveredStmts are RecordDrained's updates of ds.
func (q *Q) deliveredStmts(ds []Delivered, now int64) []stmt {
	type group struct {
		status int
		sentBy int64
	}
	groups := map[group][]any{}
	events := map[group][]string{} // the deliveries' events, when all are known (ofEvent)
	for _, d := range ds {
		g := group{d.Status, d.SentBy}
		groups[g] = append(groups[g], d.DeliveryID)
		events[g] = append(events[g], d.EventID)
	}
	out := make([]stmt, 0, len(groups))
	for g, ids := range groups {
		args := append([]any{g.status, now, g.sentBy}, ids...)
		sql := `UPDATE hookd_deliveries SET claimed_until = NULL, attempts = attempts + 1, last_status = $1, last_error = '', state = 'delivered',
			next_attempt_at = NULL, finished_at = $2, updated_at = $2, job_id = $3
			WHERE ` + stillPending + ` AND id IN (` + placeholders(4, len(ids)) + `)`
		if evs := events[g]; !slices.Contains(evs, "") {
			sql += ` AND event_id IN (` + placeholders(len(args)+1, len(evs)) + `)`
			args = append(args, anys(evs)...)
			sql = q.routed(sql, evs...) // one partition's, if all its events are in one
		}
		out = append(out, stmt{sql, args})
	}
	return out
}

// RecordDrained records a lease drain's first-attempt successes as
// delivered and deletes their River jobs (unrun: the drain sent them) in
// one relaxed transaction; rows no longer pending are left alone. job_id
// becomes the job that sent each one (Delivered.SentBy), which River keeps
// like any finished job, so the delivery still links to a task. On
// PostgreSQL one round trip (the statements go out as one pipelined batch,
// an implicit transaction), on SQLite one transaction.
func (db *DB) RecordDrained(ctx context.Context, ds []Delivered, jobIDs []int64, now int64) error {
	stmts := db.Q().deliveredStmts(ds, now)
	if len(jobIDs) > 0 {
		stmts = append(stmts, deleteJobsStmt(jobIDs))
	}
	if len(stmts) == 0 {
		return nil
	}
	if err := db.d.execRelaxed(ctx, stmts); err != nil {
		return fmt.Errorf("record drained: %w", db.routeMissed(err))
	}
	return nil
}

// WakeNextFresh makes the River job of the endpoint's oldest fresh delivery
// due at now available at once, if it is scheduled for later (River's
// JobRetry; a running job is left alone). With notify, on PostgreSQL, it
// tells River's producers so, as an insert would; without, the job waits
// for their next fetch (at the latest the poll). No such delivery, or a job
// already gone, is not an error.
func (db *DB) WakeNextFresh(ctx context.Context, endpointID string, now int64, notify bool) error {
	return db.wake(ctx, db.Q().routedFresh(db.wakeNextFreshSQL()), endpointID, now, notify)
}

// WakeDeferred is WakeNextFresh for the oldest fresh delivery due whose job
// has never run and is scheduled for later: one a fanout deferred behind a
// held slot (delivery.deferBusy). A holder that lets go of its slot without
// draining wakes it; a job that has run (met the slot busy and snoozed, or
// waits behind an ordered endpoint's head) comes back by itself, and is
// never woken here, so two holders cannot wake each other's jobs in turn.
// While another holder has a slot it wakes nothing: that holder looks
// after its own release (under a hot endpoint's backlog, its drain sends
// the deferred deliveries, whose jobs a wake would only run to meet the
// slot busy).
func (db *DB) WakeDeferred(ctx context.Context, endpointID string, now int64) error {
	return db.wake(ctx, db.Q().routedFresh(db.wakeDeferredSQL()), endpointID, now, true)
}

// wake makes the job whose id the query (on $1 the endpoint, $2 now) reads
// wakeNextFreshSQL and wakeDeferredSQL are WakeNextFresh's and
// WakeDeferred's reads ($1 the endpoint, $2 now): the endpoint's oldest
// fresh delivery, through hookd_deliveries_pending (pendingIndex).
func (db *DB) wakeNextFreshSQL() string {
	return `SELECT job_id FROM hookd_deliveries` + db.d.pendingIndex() + ` WHERE endpoint_id = $1 AND ` + freshAt2 + ` AND job_id <> 0
		ORDER BY id LIMIT 1`
}

func (db *DB) wakeDeferredSQL() string {
	return `SELECT d.job_id FROM hookd_deliveries d` + db.d.pendingIndex() + ` JOIN river_job j ON j.id = d.job_id
		WHERE d.endpoint_id = $1 AND ` + freshAt2D + ` AND j.state = 'scheduled' AND j.attempted_at IS NULL
		  AND NOT EXISTS (SELECT 1 FROM hookd_endpoint_leases l WHERE l.endpoint_id = $1 AND l.busy_until > $2)
		ORDER BY d.id LIMIT 1`
}

// available at once; see WakeNextFresh.
func (db *DB) wake(ctx context.Context, query, endpointID string, now int64, notify bool) error {
	var jobID int64
	err := db.base.queryRow(ctx, query, endpointID, now).Scan(&jobID)
	if NotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("next fresh delivery: %w", err)
	}
	if db.jobs == nil {
		return nil
	}
	job, err := db.jobs.JobRetry(ctx, jobID)
	if errors.Is(err, river.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("wake job %d: %w", jobID, err)
	}
	if notify && db.notifyQueue != nil && job.State == rivertype.JobStateAvailable {
		if err := db.notifyQueue(ctx, job.Queue); err != nil {
			return fmt.Errorf("wake job %d: notify its queue: %w", jobID, err)
		}
	}
	return nil
}
