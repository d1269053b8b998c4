package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookd/hookd/internal/event"
)

// Speeds up: publish (event.go). The plain path: InsertEvents and
// ReadPublishRules in an ordinary transaction, its BEGIN, each statement
// and its COMMIT a round trip each. Here: on PostgreSQL the last insert
// goes out with COMMIT (InsertEventsAndCommit), and when the rules are as
// the caller expects, rules, jobs and events in one statement with BEGIN
// and COMMIT (InsertExpectedAndCommit). Elsewhere both fall back to the
// plain path.

// A group commit of single publishes reads its types' rules and which of
// its owners have endpoints (ReadPublishRules), inserts the fanout jobs of
// the subscribed owners' events through River, then inserts the events:
// on PostgreSQL three round trips (postgres_pipeline.go), each of which, on a
// machine that is also delivering, waits for a PostgreSQL backend to be
// scheduled. The read's answer is, almost always, what the last publish of
// the same types read. So when the publishes' caller expects that answer
// again, InsertExpectedAndCommit sends BEGIN, one statement and COMMIT in
// one round trip: the statement reads the rules, locks the owners as
// ReadPublishRules does, and, only if it read what was expected, inserts
// the fanout jobs and the events. If it did not, it wrote nothing, the
// empty transaction commits, and the caller goes on in a new transaction
// the usual way; the miss costs one round trip.
//
// The fanout jobs are River's rows written by this statement, not by
// River's client (fanoutJobsCTE): one of the places hookd reaches past
// River's client (listed above notifyInsert, river.go), allowed only where nothing
// of River's client would have run on the insert (CanInsertJobs).

// InsertEventsAndCommit is InsertEvents as the transaction's last write:
// in a foreground transaction (InTx with TxOptions.Foreground on PostgreSQL) the last
// statement and COMMIT go out in one round trip, and the earlier events of
// repeated idempotency keys are read after the commit; elsewhere the
// transaction commits when its function returns, as always. After it, q
// runs each statement in a transaction of its own. A *CommitError means
// the events may have committed: the caller must not publish them again.
func (q *Q) InsertEventsAndCommit(ctx context.Context, evs []*event.Event) ([]Inserted, error) {
	tx, ok := q.tx.(*pipeTx)
	if !ok || tx.relaxed || len(evs) == 0 { // events are never committed relaxed
		return q.InsertEvents(ctx, evs)
	}
	cut := len(evs) - (len(evs)-1)%eventsPerStmt - 1 // the last statement's first event
	out, err := q.InsertEvents(ctx, evs[:cut])
	if err != nil {
		return nil, err
	}
	last := evs[cut:]
	st := q.insertEventsStmt(last, numbered) // a pipeTx: PostgreSQL
	written := make(map[string]bool, len(last))
	stmtErr, commitErr := tx.queryThenCommit(ctx, st.sql, st.args, func(r row) error {
		id, err := scanOne[string](r)
		written[id] = true
		return err
	})
	if stmtErr != nil {
		return nil, fmt.Errorf("insert events: %w", classify(stmtErr))
	}
	if commitErr != nil {
		return nil, &CommitError{classify(commitErr)}
	}
	if out, err = q.inserted(ctx, out, last, written); err != nil {
		return nil, &CommitError{err}
	}
	return out, nil
}

// Expected is what a caller of InsertExpectedAndCommit expects of one
// (owner, type) of its events: the type's Rule, and the owner existing,
// with an enabled endpoint if Subscribed.
type Expected struct {
	OwnerType
	Rule       Rule
	Subscribed bool
}

// Job is a River job the store writes itself (InsertExpectedAndCommit,
// WriteFanoutAndCommit): its kind, queue, attempts and its args, encoded
// as River encodes them (encoding/json), so River's worker decodes them
// as its own.
type Job struct {
	Kind, Queue string
	MaxAttempts int
	Args        []byte
	// Metadata is the job's (nil: none); ScheduledAt, if set, when it
	// comes due (zero: now). WriteFanoutAndCommit writes both; a fanout
	// job (InsertExpectedAndCommit) has neither.
	Metadata    []byte
	ScheduledAt time.Time
	// Priority is River's (1 first, to 4); 0 is River's default, 1.
	// WriteFanoutAndCommit writes it; a fanout job has the default.
	Priority int
}

// priority is j's River priority, 0 read as River's default (1).
func (j *Job) priority() int {
	return max(1, j.Priority)
}

// InsertExpectedAndCommit inserts evs and their fanout jobs (jobs[i] is
// evs[i]'s, nil for none; jobs may be nil) and commits, in one round trip,
// if the rules read in that statement are expect (every (owner, type) of
// evs; Rule.Registered is compared too) and apiKeys (ids) all exist
// unrevoked; held says they were. Each event written gets its job; an
// event that repeats an idempotency key already stored gets none (one
// repeating a key written by a transaction still in flight may leave its
// job behind, which finds no event and ends). When what was expected did
// not hold, nothing was written and q's next statement begins a new
// transaction. It sends nothing (held false, no error) unless
// CanInsertExpected, evs fit one statement and, with any job, CanInsertJobs.
// Errors are InsertEventsAndCommit's: a *CommitError means the events may
// have committed.
func (q *Q) InsertExpectedAndCommit(ctx context.Context, evs []*event.Event, jobs []*Job, expect []Expected, apiKeys []string) (res []Inserted, held bool, err error) {
	if !q.CanInsertExpected() || len(evs) == 0 || len(evs) > eventsPerStmt || len(expect) == 0 {
		return nil, false, nil
	}
	withJobs := false
	for i, e := range evs {
		if e.FanoutJob != 0 {
			return nil, false, nil
		}
		withJobs = withJobs || i < len(jobs) && jobs[i] != nil
	}
	if withJobs && (!q.CanInsertJobs() || repeatsKey(evs, jobs)) {
		return nil, false, nil
	}
	tx := q.tx.(*pipeTx)
	st := q.expectedInsertStmt(evs, jobs, expect, apiKeys)
	written := make(map[string]int64, len(evs)) // event id → its job
	stmtErr, commitErr := tx.queryThenCommit(ctx, st.sql, st.args, func(r row) error {
		var id string
		var job int64
		err := r.Scan(&id, &job)
		if id == "" {
			held = true
		} else {
			written[id] = job
		}
		return err
	})
	switch {
	case stmtErr != nil:
		return nil, false, fmt.Errorf("insert events: %w", classify(stmtErr))
	case commitErr != nil:
		return nil, false, &CommitError{classify(commitErr)}
	case !held:
		tx.reopen()
		return nil, false, nil
	}
	ids := make(map[string]bool, len(written))
	for _, e := range evs {
		if job, ok := written[e.ID]; ok {
			ids[e.ID], e.FanoutJob = true, job
		}
	}
	if res, err = q.inserted(ctx, nil, evs, ids); err != nil {
		return nil, false, &CommitError{err}
	}
	return res, true, nil
}

// repeatsKey says whether two of evs share an owner and idempotency key
// and one of them has a job: which of the two one INSERT writes is not
// known, so which would keep its job is not either.
func repeatsKey(evs []*event.Event, jobs []*Job) bool {
	type ownerKey struct{ owner, key string }
	seen := make(map[ownerKey]bool, len(evs))
	for i, e := range evs {
		if e.IdempotencyKey == "" {
			continue
		}
		k := ownerKey{e.OwnerID, e.IdempotencyKey}
		job := i < len(jobs) && jobs[i] != nil
		if had, ok := seen[k]; ok && (had || job) {
			return true
		}
		seen[k] = seen[k] || job
	}
	return false
}

// CanInsertExpected says whether InsertExpectedAndCommit can send its
// round trip in q: a foreground transaction on PostgreSQL that has run no
// statement yet (not a relaxed one: events are never committed relaxed).
func (q *Q) CanInsertExpected() bool {
	tx, ok := q.tx.(*pipeTx)
	return ok && !tx.begun && !tx.relaxed
}

// CanInsertJobs says whether the store may write River's job rows itself
// (InsertExpectedAndCommit, on PostgreSQL; WriteFanoutAndCommit): with
// hookd's own River client and no middleware or hooks on it (NewRiver),
// whose InsertManyTx would write exactly those rows and send the insert
// notification. An application's client (UseRiver) may have either, and
// its jobs go through it.
func (q *Q) CanInsertJobs() bool { return q.db.jobsDirect }

// expectedInsertStmt is InsertExpectedAndCommit's statement: its rows are
// an empty id if what was expected held, then the ids of the events it
// wrote, each with its job's id (0 for none).
func (q *Q) expectedInsertStmt(evs []*event.Event, jobs []*Job, expect []Expected, apiKeys []string) stmt {
	var sb strings.Builder
	args := make([]any, 0, 5*len(expect)+len(apiKeys)+16*len(evs)+1)
	sb.WriteString(`WITH k(o, n, x, h, s) AS (VALUES `)
	for i, e := range expect {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteByte('(')
		writeTyped(&sb, len(args)+1, "text", "text", "text", "text", "boolean")
		sb.WriteByte(')')
		exposure := "" // not registered
		if e.Rule.Registered {
			exposure = string(e.Rule.Exposure)
		}
		args = append(args, e.Owner, e.Type, exposure, e.Rule.SchemaHash, e.Subscribed)
	}
	sb.WriteString(`), ` + q.liveOwners())
	sb.WriteString(`, held AS (SELECT bool_and(live.id IS NOT NULL AND (` + subscribed + `) = k.s` +
		` AND COALESCE(` + ruleOf("exposure") + `, '') = k.x AND COALESCE(` + ruleOf("schema_hash") + `, '') = k.h)`)
	if len(apiKeys) > 0 {
		sb.WriteString(` AND (SELECT count(*) FROM hookd_api_keys a WHERE a.revoked_at IS NULL AND a.id IN (` + placeholders(len(args)+1, len(apiKeys)) + `)) = ` + strconv.Itoa(len(apiKeys)))
		args = append(args, anys(apiKeys)...)
	}
	sb.WriteString(` AS ok FROM k LEFT JOIN live ON live.id = k.o)`)
	var queues []string
	args, queues = fanoutJobsCTE(&sb, args, evs, jobs)
	ok := `(SELECT ok FROM held)`
	if anyKeyed(evs) {
		sb.WriteString(`, `)
		args = keyedEvents(&sb, args, evs, ok)
		ok += ` AND ` + keyWritten
	} else {
		sb.WriteString(`, v(i, o, t, s, at, d, tn, ep, k, c, j) AS (VALUES `)
		args = eventRows(&sb, args, evs, cast)
		sb.WriteString(`)`)
	}
	sb.WriteString(`, ins AS (` + insertEventsInto + `SELECT v.i, v.o, v.t, v.s, v.at, v.d, v.tn, v.ep, v.k, v.c, `)
	if queues != nil {
		sb.WriteString(`COALESCE((SELECT jid.id FROM jid WHERE jid.e = v.i), 0)`)
	} else {
		sb.WriteString(`v.j`)
	}
	sb.WriteString(` FROM v WHERE ` + ok + ` RETURNING id, fanout_job)`)
	// The held row notifies River's producers of the queues' new jobs, as
	// River's insert does (notifyInsert): on commit, and only if held.
	held := `''`
	for _, queue := range queues {
		held += ` || pg_notify(concat(coalesce(nullif(` + typed(len(args)+1, "text") + `, ''), current_schema()), '.river_insert'), ` + typed(len(args)+2, "text") + `)::text`
		args = append(args, q.db.schema, fmt.Sprintf(`{"queue": %q}`, queue))
	}
	sb.WriteString(` SELECT ` + held + `, 0::bigint FROM held WHERE ok UNION ALL SELECT id, fanout_job FROM ins`)
	return stmt{sb.String(), args}
}

// fanoutJobsCTE writes the CTEs jid, the new jobs (e the event's id, id
// the job's), and the insert of their River rows, for those of evs with a
// job and an idempotency key not already stored, if held; queues are the
// jobs' queues (nil: no job, and nothing written).
//
// The row is what River's InsertManyTx writes for a job without unique
// options, scheduled now, its priority River's default (1): checked
// against River v0.51.2 (riverpgxv5's JobInsertFastMany: an id from
// river_job_id_seq, created_at and scheduled_at now(), metadata '{}',
// tags '{}', state 'available'). Guarded by TestInsertExpectedJobs
// (publish_onetrip_test.go), which has River's own client run the job, and
// TestExpectedGroupFansOut (delivery).
func fanoutJobsCTE(sb *strings.Builder, args []any, evs []*event.Event, jobs []*Job) ([]any, []string) {
	var queues []string
	n := 0
	for i, e := range evs {
		if i >= len(jobs) || jobs[i] == nil {
			continue
		}
		j := jobs[i]
		if n == 0 {
			sb.WriteString(`, jid AS MATERIALIZED (SELECT j.e, j.a, j.kd, j.m, j.q, nextval('river_job_id_seq') AS id FROM (VALUES `)
		} else {
			sb.WriteByte(',')
		}
		n++
		var key any
		if e.IdempotencyKey != "" {
			key = e.IdempotencyKey
		}
		sb.WriteByte('(')
		writeTyped(sb, len(args)+1, "text", "text", "text", "jsonb", "text", "smallint", "text")
		sb.WriteByte(')')
		args = append(args, e.ID, e.OwnerID, key, j.Args, j.Kind, j.MaxAttempts, j.Queue)
		if !slices.Contains(queues, j.Queue) {
			queues = append(queues, j.Queue)
		}
	}
	if n == 0 {
		return args, nil
	}
	sb.WriteString(`) j(e, o, ik, a, kd, m, q) WHERE (SELECT ok FROM held)` +
		` AND NOT EXISTS (SELECT 1 FROM hookd_event_keys x WHERE x.owner_id = j.o AND x.idempotency_key = j.ik))`)
	sb.WriteString(`, jobs AS (INSERT INTO river_job (id, args, created_at, kind, max_attempts, metadata, priority, queue, scheduled_at, state, tags)` +
		` SELECT id, a, now(), kd, m, '{}', 1, q, now(), 'available', '{}' FROM jid)`)
	return args, queues
}

// typed is placeholders from $from, one per type, each cast to its type
// ("$1::text,$2::bigint").
func typed(from int, types ...string) string {
	var sb strings.Builder
	writeTyped(&sb, from, types...)
	return sb.String()
}

// writeTyped writes typed(from, types...) to sb.
func writeTyped(sb *strings.Builder, from int, types ...string) {
	var n [20]byte
	for i, t := range types {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteByte('$')
		sb.Write(strconv.AppendInt(n[:0], int64(from+i), 10))
		sb.WriteString("::")
		sb.WriteString(t)
	}
}
