package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookd/hookd/internal/endpoint"
)

// A fanout's transaction, after its reads (TakeForFanout), inserts the
// deliver jobs through River's client, then the deliveries with those
// jobs' ids, marks the events fanned out and deletes the fanout jobs of
// those taken along: on PostgreSQL five round trips (River's insert
// notifies in one of its own), then COMMIT. WriteFanoutAndCommit writes
// all of it in one statement, sent with the COMMIT, and on SQLite through
// plain statements that insert the deliver jobs' rows themselves: River's
// rows written by hookd (see the list above notifyInsert, river.go),
// allowed only where nothing of River's client would have run on the
// insert (CanInsertJobs). Either way a pair a concurrent fanout won gets
// no job of this one.

// FanoutWrite is what WriteFanoutAndCommit writes: Deliveries, each with
// its deliver job (Jobs[i] is Deliveries[i]'s, its JobID set by the
// write); the events fanned out; and the fanout jobs to delete (of the
// events taken along; not running ones).
type FanoutWrite struct {
	Deliveries []*endpoint.Delivery
	Jobs       []*Job
	FannedOut  []string
	// OwnerAttributes is the events' owner's attributes as the fanout read
	// them (JSON), kept with the events fanned out (MarkFannedOut).
	OwnerAttributes string
	Gone            []int64
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
//
// On SQLite (any transaction: its commits are relaxed already) it writes w
// through plain statements, the deliver jobs' rows among them
// (writeFanoutSQLite), and the caller's transaction commits it.
func (q *Q) WriteFanoutAndCommit(ctx context.Context, w FanoutWrite) (done bool, err error) {
	if !q.CanInsertJobs() || len(w.Deliveries) == 0 || len(w.Jobs) != len(w.Deliveries) {
		return false, nil
	}
	if stx, ok := q.tx.(*sql.Tx); ok {
		return true, q.writeFanoutSQLite(ctx, stx, w)
	}
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
	return stmt{sb.String(), params}
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
