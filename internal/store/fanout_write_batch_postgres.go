package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hookd/hookd/internal/endpoint"
)

// WriteFanoutAndCommit on PostgreSQL: one statement sent with the COMMIT
// of a relaxed pipelined transaction (fanout_write_batch.go says what it
// speeds up and what the plain path is).

// writeFanout writes w in one round trip, the transaction's last, if q is
// a relaxed pipelined transaction (InTx with TxOptions.Relaxed) and w fits
// one statement; done false, nothing sent, otherwise.
func (pgDialect) writeFanout(ctx context.Context, q *Q, w FanoutWrite) (done bool, err error) {
	tx, ok := q.tx.(*pipeTx)
	if !ok || !tx.relaxed || len(w.Deliveries) > fanoutRowsPerStmt {
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
// its queues, as River's insert does (notifyInsert). Its rows come in as
// arrays (unnest), as River's own insert's do, so its text changes with
// the number of events it marks fanned out (one, at a calm rate), not with
// its deliveries, and PostgreSQL plans each text once per connection.
//
// The job rows are what River's InsertManyTx writes for jobs without
// unique options, as for fanoutJobsCTE, with the job's priority (1,
// River's default, unless Job.Priority says otherwise), its metadata and,
// for one scheduled later, that time and
// state 'scheduled' (River's insert: any ScheduledAt given makes a job
// scheduled; its scheduler makes it available when due). Guarded by
// TestWriteFanout (fanout_write_batch_test.go), which has River's own client
// run the jobs, and by the delivery tests, which fan out through it.
func (q *Q) fanoutWriteStmt(w FanoutWrite) stmt {
	n := len(w.Deliveries)
	var (
		ids, owners, eps, evs, types, states = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		next                                 = make([]*int64, n)
		created, sched                       = make([]int64, n), make([]int64, n) // sched 0: now
		args, kinds, queues, metas           = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		attempts, prios                      = make([]int32, n), make([]int32, n)
		notify                               []string // the queues of jobs available now
	)
	for i, d := range w.Deliveries {
		j := w.Jobs[i]
		ids[i], owners[i], eps[i], evs[i], types[i], states[i] = d.ID, d.OwnerID, d.EndpointID, d.EventID, d.EventType, string(d.State)
		next[i], created[i] = tsPtr(d.NextAttemptAt), ts(d.CreatedAt)
		args[i], kinds[i], queues[i], attempts[i], metas[i] = string(j.Args), j.Kind, j.Queue, int32(j.MaxAttempts), string(j.Metadata)
		prios[i] = int32(j.priority())
		if metas[i] == "" {
			metas[i] = "{}"
		}
		if !j.ScheduledAt.IsZero() {
			sched[i] = ts(j.ScheduledAt)
		} else if !slices.Contains(notify, j.Queue) {
			notify = append(notify, j.Queue)
		}
	}
	var sb strings.Builder
	sb.WriteString(`WITH jid AS MATERIALIZED (SELECT v.*, nextval('river_job_id_seq') AS j FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],` +
		` $7::bigint[], $8::bigint[], $9::jsonb[], $10::text[], $11::int[], $12::text[], $13::jsonb[], $14::bigint[], $15::int[]) AS v(id, o, ep, ev, et, st, nx, c, a, kd, m, q, md, sch, pr))`)
	sb.WriteString(`, d AS (INSERT INTO hookd_deliveries (id, owner_id, endpoint_id, event_id, event_type, job_id, state, attempts, next_attempt_at, created_at, updated_at)` +
		` SELECT id, o, ep, ev, et, j, st, 0, nx, c, c FROM jid ON CONFLICT (endpoint_id, event_id) DO NOTHING RETURNING id, job_id)`)
	// scheduled_at: the job's time, exactly (microseconds since the epoch), or now.
	sb.WriteString(`, jobs AS (INSERT INTO river_job (id, args, created_at, kind, max_attempts, metadata, priority, queue, scheduled_at, state, tags)` +
		` SELECT jid.j, jid.a, now(), jid.kd, jid.m::smallint, jid.md, jid.pr::smallint, jid.q,` +
		` CASE WHEN jid.sch = 0 THEN now() ELSE timestamptz 'epoch' + jid.sch * interval '1 microsecond' END,` +
		` CASE WHEN jid.sch = 0 THEN 'available' ELSE 'scheduled' END::river_job_state, '{}'` +
		` FROM jid JOIN d ON d.id = jid.id RETURNING state)`)
	params := []any{ids, owners, eps, evs, types, states, next, created, args, kinds, attempts, queues, metas, sched, prios}
	// The events and the jobs are named one parameter each, as
	// MarkFannedOut and DeleteJobs name them: given as an array
	// (id = ANY($n)), the generic plan PostgreSQL caches for the
	// statement was made while the tables were small, a sequential scan
	// of the events and of river_job, which every fanout then ran as
	// they grew (until an autoanalyze replanned it). An equality list of
	// one is planned as an index lookup whatever the tables hold; a
	// longer one planned on a tiny table can still be a sequential scan
	// (seen at a calm rate for fanouts that took one event along, until
	// autovacuum's first ANALYZE), but those are the rarer texts.
	if len(w.FannedOut) > 0 {
		sb.WriteString(`, fanned AS (UPDATE hookd_events SET fanout_job = 0, owner_attributes = NULLIF($` + strconv.Itoa(len(params)+1) + `::text, '') WHERE id IN (` + placeholders(len(params)+2, len(w.FannedOut)) + `))`)
		params = append(append(params, w.OwnerAttributes), anys(w.FannedOut)...)
	}
	if len(w.Gone) > 0 {
		sb.WriteString(`, gone AS (DELETE FROM river_job WHERE state <> 'running' AND id IN (` + placeholders(len(params)+1, len(w.Gone)) + `))`)
		params = append(params, anys(w.Gone)...)
	}
	sb.WriteString(` SELECT id, job_id FROM d`)
	if len(notify) > 0 {
		// River's payload names one queue; a fanout's jobs are all in one.
		n := len(params)
		sb.WriteString(` UNION ALL SELECT '' || pg_notify(concat(coalesce(nullif($` + strconv.Itoa(n+1) + `::text, ''), current_schema()), '.river_insert'), p)::text, 0::bigint` +
			` FROM unnest($` + strconv.Itoa(n+2) + `::text[]) AS p WHERE EXISTS (SELECT 1 FROM jobs WHERE state = 'available')`)
		payloads := make([]string, len(notify))
		for i, queue := range notify {
			payloads[i] = fmt.Sprintf(`{"queue": %q}`, queue)
		}
		params = append(params, q.db.schema, payloads)
	}
	// One partition's tables, if its events are all in one (a fanout's
	// own event and those it took along are mostly of one day).
	q.db.freshMade(evs...)
	return stmt{q.routed(sb.String(), append(slices.Clone(w.FannedOut), evs...)...), params}
}
