package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/hookd/hookd/internal/event"
)

// A group commit of single publishes to owners without endpoints (a
// producer that stores its events before anyone subscribes, or whose
// types are internal) writes only their events: no fanout job. Its usual
// transaction is two round trips, the rules' read with BEGIN and the
// insert with COMMIT (pipeline.go), and the read's answer is, almost
// always, what the last publish of the same types read. So when the
// publishes' caller expects that answer again, InsertQuietEventsAndCommit
// sends BEGIN, one statement and COMMIT in one round trip: the statement
// reads the rules, locks the owners as ReadPublishRules does, and inserts
// the events only if it read what was expected. If it did not, it wrote
// nothing, the empty transaction commits, and the caller goes on in a new
// transaction the usual way; the miss costs one round trip.

// Expected is what a caller of InsertQuietEventsAndCommit expects of one
// (owner, type) of its events: the type's Rule, and the owner existing
// without an enabled endpoint.
type Expected struct {
	OwnerType
	Rule Rule
}

// InsertQuietEventsAndCommit inserts evs (none with a fanout job) and
// commits, in one round trip, if the rules read in that statement are
// expect (every (owner, type) of evs; Rule.Registered is compared too) and
// apiKeys (ids) all exist unrevoked; held says they were. When they were
// not, nothing was written and q's next statement begins a new
// transaction. It sends nothing (held false, no error) unless
// CanInsertQuiet and evs fit one statement. Errors are InsertEventsAndCommit's:
// a *CommitError means the events may have committed.
func (q *Q) InsertQuietEventsAndCommit(ctx context.Context, evs []*event.Event, expect []Expected, apiKeys []string) (res []Inserted, held bool, err error) {
	if !q.CanInsertQuiet() || len(evs) == 0 || len(evs) > eventsPerStmt || len(expect) == 0 {
		return nil, false, nil
	}
	tx := q.tx.(*pipeTx)
	for _, e := range evs {
		if e.FanoutJob != 0 {
			return nil, false, nil
		}
	}
	st := q.quietInsertStmt(evs, expect, apiKeys)
	written := make(map[string]bool, len(evs))
	stmtErr, commitErr := tx.queryThenCommit(ctx, st.sql, st.args, func(r row) error {
		id, err := scanOne[string](r)
		if id == "" {
			held = true
		} else {
			written[id] = true
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
	if res, err = q.inserted(ctx, nil, evs, written); err != nil {
		return nil, false, &CommitError{err}
	}
	return res, true, nil
}

// CanInsertQuiet says whether InsertQuietEventsAndCommit can send its
// round trip in q: a foreground transaction on PostgreSQL that has run no
// statement yet.
func (q *Q) CanInsertQuiet() bool {
	tx, ok := q.tx.(*pipeTx)
	return ok && !tx.begun
}

// quietInsertStmt is InsertQuietEventsAndCommit's statement: its rows are
// an empty id if what was expected held, then the ids of the events it
// wrote.
func (q *Q) quietInsertStmt(evs []*event.Event, expect []Expected, apiKeys []string) stmt {
	var sb strings.Builder
	args := make([]any, 0, 4*len(expect)+len(apiKeys)+11*len(evs))
	sb.WriteString(`WITH k(o, n, x, h) AS (VALUES `)
	for i, e := range expect {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString("(" + typed(len(args)+1, "text", "text", "text", "text") + ")")
		exposure := "" // not registered
		if e.Rule.Registered {
			exposure = string(e.Rule.Exposure)
		}
		args = append(args, e.Owner, e.Type, exposure, e.Rule.SchemaHash)
	}
	sb.WriteString(`), ` + q.liveOwners())
	sb.WriteString(`, held AS (SELECT bool_and(live.id IS NOT NULL AND NOT ` + subscribed +
		` AND COALESCE(` + ruleOf("exposure") + `, '') = k.x AND COALESCE(` + ruleOf("schema_hash") + `, '') = k.h)`)
	if len(apiKeys) > 0 {
		sb.WriteString(` AND (SELECT count(*) FROM hookd_api_keys a WHERE a.revoked_at IS NULL AND a.id IN (` + placeholders(len(args)+1, len(apiKeys)) + `)) = ` + strconv.Itoa(len(apiKeys)))
		args = append(args, anys(apiKeys)...)
	}
	sb.WriteString(` AS ok FROM k LEFT JOIN live ON live.id = k.o)`)
	sb.WriteString(`, ins AS (` + insertEventsInto + `SELECT * FROM (VALUES `)
	args = eventRows(&sb, args, evs, true)
	sb.WriteString(`) v WHERE (SELECT ok FROM held) ON CONFLICT (owner_id, idempotency_key) DO NOTHING RETURNING id)`)
	sb.WriteString(` SELECT '' FROM held WHERE ok UNION ALL SELECT id FROM ins`)
	return stmt{sb.String(), args}
}

// typed is placeholders from $from, one per type, each cast to its type
// ("$1::text,$2::bigint").
func typed(from int, types ...string) string {
	var sb strings.Builder
	for i, t := range types {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteByte('$')
		sb.WriteString(strconv.Itoa(from + i))
		sb.WriteString("::" + t)
	}
	return sb.String()
}
