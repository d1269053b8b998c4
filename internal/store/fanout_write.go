package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hookd/hookd/internal/endpoint"
)

// A fanout's transaction, after its reads (TakeForFanout), inserts the
// deliver jobs through River's client, then the deliveries with those
// jobs' ids, marks the events fanned out and deletes the fanout jobs of
// those taken along: on PostgreSQL five round trips (River's insert
// notifies in one of its own), then COMMIT. WriteFanoutAndCommit writes
// all of it in one statement, sent with the COMMIT: the fourth place hookd
// writes River's rows itself (see fanoutJobsCTE), allowed only where
// nothing of River's client would have run on the insert (CanInsertJobs).
// It also inserts only the jobs of the deliveries it wrote: a pair a
// concurrent fanout won gets no job of this one.

// FanoutWrite is what WriteFanoutAndCommit writes: Deliveries, each with
// its deliver job (Jobs[i] is Deliveries[i]'s, its JobID set by the
// write); the events fanned out; and the fanout jobs to delete (of the
// events taken along; not running ones).
type FanoutWrite struct {
	Deliveries []*endpoint.Delivery
	Jobs       []*Job
	FannedOut  []string
	Gone       []int64
}

// fanoutRowsPerStmt bounds the deliveries of one WriteFanoutAndCommit
// (14 parameters each, under PostgreSQL's 65,535).
const fanoutRowsPerStmt = 4000

// WriteFanoutAndCommit writes w and commits, in one round trip, in a
// relaxed transaction on PostgreSQL (DB.InTxRelaxed) whose River client
// lets the store write jobs (CanInsertJobs); done false, nothing sent,
// anywhere else, or for no deliveries or more than 4,000: the caller
// writes them the usual way. After it, the deliveries written have their JobID;
// one a concurrent fanout had written keeps JobID 0. A *CommitError means
// the transaction may have committed (running the fanout again writes
// nothing twice).
func (q *Q) WriteFanoutAndCommit(ctx context.Context, w FanoutWrite) (done bool, err error) {
	tx, ok := q.tx.(*pipeTx)
	if !ok || !tx.relaxed || !q.CanInsertJobs() || len(w.Deliveries) == 0 || len(w.Deliveries) > fanoutRowsPerStmt || len(w.Jobs) != len(w.Deliveries) {
		return false, nil
	}
	st := q.fanoutWriteStmt(w)
	byID := make(map[string]*endpoint.Delivery, len(w.Deliveries))
	for _, d := range w.Deliveries {
		byID[d.ID], d.JobID = d, 0
	}
	stmtErr, commitErr := tx.queryThenCommit(ctx, st.sql, st.args, func(r row) error {
		var id string
		var job int64
		err := r.Scan(&id, &job)
		if d := byID[id]; d != nil {
			d.JobID = job
		}
		return err
	})
	switch {
	case stmtErr != nil:
		return true, fmt.Errorf("write fanout: %w", classify(stmtErr))
	case commitErr != nil:
		return true, &CommitError{classify(commitErr)}
	}
	return true, nil
}

// fanoutWriteStmt is WriteFanoutAndCommit's statement. Its rows are the
// deliveries written, each with its job's id, and, if any job it wrote is
// available now, one row (”, 0) that sent River's insert notification for
// its queues, as River's insert does (notifyInsert).
//
// The job rows are what River's InsertManyTx writes for jobs without
// unique options at priority 1 (River's default), as for fanoutJobsCTE,
// with the job's metadata and, for one scheduled later, that time and
// state 'scheduled' (River's insert: any ScheduledAt given makes a job
// scheduled; its scheduler makes it available when due). Guarded by
// TestWriteFanout (fanout_write_test.go), which has River's own client
// run the jobs, and by the delivery tests, which fan out through it.
func (q *Q) fanoutWriteStmt(w FanoutWrite) stmt {
	var sb strings.Builder
	args := make([]any, 0, 14*len(w.Deliveries)+len(w.FannedOut)+len(w.Gone)+4)
	var queues []string
	sb.WriteString(`WITH v(id, o, ep, ev, et, st, nx, c, a, kd, m, q, md, sch) AS (VALUES `)
	for i, d := range w.Deliveries {
		if i > 0 {
			sb.WriteByte(',')
		}
		j := w.Jobs[i]
		sb.WriteString("(" + typed(len(args)+1, "text", "text", "text", "text", "text", "text", "bigint", "bigint", "jsonb", "text", "smallint", "text", "jsonb", "timestamptz") + ")")
		md := j.Metadata
		if len(md) == 0 {
			md = []byte("{}")
		}
		var sch *time.Time
		if !j.ScheduledAt.IsZero() {
			sch = &j.ScheduledAt
		} else if !slices.Contains(queues, j.Queue) {
			queues = append(queues, j.Queue)
		}
		args = append(args, d.ID, d.OwnerID, d.EndpointID, d.EventID, d.EventType, string(d.State), tsPtr(d.NextAttemptAt), ts(d.CreatedAt),
			j.Args, j.Kind, j.MaxAttempts, j.Queue, md, sch)
	}
	sb.WriteString(`), jid AS MATERIALIZED (SELECT v.*, nextval('river_job_id_seq') AS j FROM v)`)
	sb.WriteString(`, d AS (INSERT INTO hookd_deliveries (id, owner_id, endpoint_id, event_id, event_type, job_id, state, attempts, next_attempt_at, created_at, updated_at)` +
		` SELECT id, o, ep, ev, et, j, st, 0, nx, c, c FROM jid ON CONFLICT (endpoint_id, event_id) DO NOTHING RETURNING id, job_id)`)
	sb.WriteString(`, jobs AS (INSERT INTO river_job (id, args, created_at, kind, max_attempts, metadata, priority, queue, scheduled_at, state, tags)` +
		` SELECT jid.j, jid.a, now(), jid.kd, jid.m, jid.md, 1, jid.q, COALESCE(jid.sch, now()), CASE WHEN jid.sch IS NULL THEN 'available' ELSE 'scheduled' END::river_job_state, '{}'` +
		` FROM jid JOIN d ON d.id = jid.id RETURNING state)`)
	if len(w.FannedOut) > 0 {
		sb.WriteString(`, fanned AS (UPDATE hookd_events SET fanout_job = 0 WHERE id IN (` + placeholders(len(args)+1, len(w.FannedOut)) + `))`)
		args = append(args, anys(w.FannedOut)...)
	}
	if len(w.Gone) > 0 {
		sb.WriteString(`, gone AS (DELETE FROM river_job WHERE state <> 'running' AND id IN (` + placeholders(len(args)+1, len(w.Gone)) + `))`)
		args = append(args, anys(w.Gone)...)
	}
	sb.WriteString(` SELECT id, job_id FROM d`)
	if len(queues) > 0 {
		notify := `''`
		for _, queue := range queues {
			notify += ` || pg_notify(concat(coalesce(nullif(` + typed(len(args)+1, "text") + `, ''), current_schema()), '.river_insert'), ` + typed(len(args)+2, "text") + `)::text`
			args = append(args, q.db.schema, fmt.Sprintf(`{"queue": %q}`, queue))
		}
		sb.WriteString(` UNION ALL SELECT ` + notify + `, 0::bigint WHERE EXISTS (SELECT 1 FROM jobs WHERE state = 'available')`)
	}
	return stmt{sb.String(), args}
}
