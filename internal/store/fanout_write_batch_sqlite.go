package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hookd/hookd/internal/endpoint"
)

// WriteFanoutAndCommit on SQLite: plain statements that write the deliver
// jobs' River rows themselves, in the caller's transaction
// (fanout_write_batch.go says what it speeds up and what the plain path
// is).

// writeFanout writes w in q's transaction (writeFanoutSQLite); done false,
// nothing written, outside one.
func (sqliteDialect) writeFanout(ctx context.Context, q *Q, w FanoutWrite) (done bool, err error) {
	tx, ok := q.tx.(*sql.Tx)
	if !ok {
		return false, nil
	}
	return true, q.writeFanoutSQLite(ctx, tx, w)
}

// writeFanoutSQLite is WriteFanoutAndCommit on SQLite, in tx: the deliver
// jobs' rows (sqliteJobRows), the deliveries with their jobs' ids, the
// jobs of pairs a concurrent fanout won deleted again (so, as on
// PostgreSQL, such a pair gets no job of this fanout), the events marked,
// the taken-along fanout jobs deleted, and River's insert notification
// for the queues of jobs available now, through River's own executor (on
// SQLite an outbox row its listener polls for), as River's insert sends it.
//
// SQLite's statements run in process, so there are no round trips to save;
// what River's own SQLite insert costs is its form: every row passed as
// one JSON document, thirteen fields extracted from it per row, and the
// whole rows returned and parsed again for a nonce. Under single
// publishes to 10 endpoints that insert was 19 % of hookd's CPU, five
// times the deliveries' own insert.
func (q *Q) writeFanoutSQLite(ctx context.Context, tx *sql.Tx, w FanoutWrite) error {
	ids, err := q.sqliteJobRows(ctx, w.Jobs)
	if err != nil {
		return fmt.Errorf("write fanout: %w", err)
	}
	var notify []string // the queues of jobs available now
	for i, d := range w.Deliveries {
		d.JobID = ids[i]
		if j := w.Jobs[i]; j.ScheduledAt.IsZero() && !slices.Contains(notify, j.Queue) {
			notify = append(notify, j.Queue)
		}
	}
	wrote, err := q.InsertDeliveries(ctx, w.Deliveries)
	if err != nil {
		return fmt.Errorf("write fanout: %w", err)
	}
	gone := w.Gone
	if len(wrote) < len(w.Deliveries) {
		in := make(map[*endpoint.Delivery]bool, len(wrote))
		for _, d := range wrote {
			in[d] = true
		}
		gone = slices.Clone(gone)
		for _, d := range w.Deliveries {
			if !in[d] {
				gone, d.JobID = append(gone, d.JobID), 0
			}
		}
	}
	if err := q.MarkFannedOut(ctx, w.FannedOut, w.OwnerAttributes); err != nil {
		return err
	}
	if err := q.DeleteJobs(ctx, gone); err != nil {
		return err
	}
	if len(notify) > 0 && len(wrote) > 0 && q.db.notifyTx != nil {
		if err := q.db.notifyTx(ctx, tx, notify); err != nil {
			return fmt.Errorf("write fanout: notify: %w", err)
		}
	}
	return nil
}

// sqliteJobsPerStmt bounds the rows of one sqliteJobRows statement (8
// parameters each).
const sqliteJobsPerStmt = 200

// sqliteJobRows inserts jobs' River rows on SQLite and returns their ids
// (ids[i] is jobs[i]'s).
//
// The row is what River's InsertManyTx writes there for a job without
// unique options at the job's priority (Job.Priority): checked against River
// v0.51.2 (riversqlite's JobInsertFastMany and the client's insert
// params): args and metadata as JSONB, metadata '{}' when none, tags an
// empty JSONB array, created_at now and scheduled_at now or the job's
// time, in SQLite's time format ("2006-01-02 15:04:05.000", UTC, to the
// millisecond, which River's fetch compares as text), state 'available',
// or 'scheduled' for a later job. River's SQLite schema gives river_job an
// AUTOINCREMENT id (its migration 008), so the rows of one INSERT, which
// SQLite inserts in the order of its VALUES, get increasing ids: the
// returned ids, sorted, are the jobs' in order. Guarded by
// TestWriteFanout (fanout_write_batch_test.go), which checks each job's args
// against its delivery and has River's own client run the jobs.
func (q *Q) sqliteJobRows(ctx context.Context, jobs []*Job) ([]int64, error) {
	out := make([]int64, 0, len(jobs))
	for len(jobs) > 0 {
		chunk := jobs[:min(sqliteJobsPerStmt, len(jobs))]
		jobs = jobs[len(chunk):]
		var sb strings.Builder
		sb.WriteString(`INSERT INTO river_job (args, created_at, kind, max_attempts, metadata, priority, queue, scheduled_at, state, tags) VALUES `)
		args := make([]any, 0, 8*len(chunk))
		for i, j := range chunk {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(`(jsonb(?), datetime('now', 'subsec'), ?, ?, jsonb(?), ?, ?, coalesce(?, datetime('now', 'subsec')), ?, jsonb('[]'))`)
			meta := j.Metadata
			if len(meta) == 0 {
				meta = []byte("{}")
			}
			var at any
			state := "available"
			if !j.ScheduledAt.IsZero() {
				at, state = j.ScheduledAt.UTC().Round(time.Millisecond).Format(sqliteTime), "scheduled"
			}
			args = append(args, string(j.Args), j.Kind, j.MaxAttempts, string(meta), j.priority(), j.Queue, at, state)
		}
		sb.WriteString(` RETURNING id`)
		ids, err := collect(ctx, q, scanOne[int64], sb.String(), args...)
		if err != nil {
			return nil, fmt.Errorf("insert jobs: %w", err)
		}
		if len(ids) != len(chunk) {
			return nil, fmt.Errorf("insert jobs: %d ids for %d jobs", len(ids), len(chunk))
		}
		slices.Sort(ids)
		out = append(out, ids...)
	}
	return out, nil
}

// sqliteTime is the format of times in River's SQLite rows.
const sqliteTime = "2006-01-02 15:04:05.000"
