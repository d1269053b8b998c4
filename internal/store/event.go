package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/event"
)

const eventCols = `id, owner_id, type, subject, occurred_at, data, tenant, endpoint_id, COALESCE(idempotency_key, ''), created_at`

// scanEvent reads eventCols, then any columns after them into extra.
func scanEvent(r row, extra ...any) (*event.Event, error) {
	var e event.Event
	var occurred, created int64
	var data []byte
	dest := []any{&e.ID, &e.OwnerID, &e.Type, &e.Subject, &occurred, &data, &e.Tenant, &e.EndpointID, &e.IdempotencyKey, &created}
	if err := r.Scan(append(dest, extra...)...); err != nil {
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
	res, err := q.InsertEvents(ctx, []*event.Event{e})
	if err != nil {
		return "", false, err
	}
	return res[0].ID, res[0].Inserted, nil
}

// Inserted is what InsertEvents did with one event.
type Inserted struct {
	ID       string // the event's id, or the earlier event's with its idempotency key
	Inserted bool
}

// InsertEvents inserts events, a few hundred per statement, each with its
// fanout job's id (FanoutJob, 0 for none: it then awaits no fanout). An event whose
// idempotency key the owner already used (earlier, or earlier in evs) is not
// written: its result carries the earlier event's id.
func (q *Q) InsertEvents(ctx context.Context, evs []*event.Event) ([]Inserted, error) {
	out := make([]Inserted, 0, len(evs))
	for len(evs) > 0 {
		chunk := evs[:min(eventsPerStmt, len(evs))]
		evs = evs[len(chunk):]
		st := q.insertEventsStmt(chunk, q.anonParams())
		ids, err := collect(ctx, q, scanOne[string], st.sql, st.args...)
		if err != nil {
			return nil, fmt.Errorf("insert events: %w", err)
		}
		if out, err = q.inserted(ctx, out, chunk, setOf(ids)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// eventsPerStmt is the most events one INSERT writes (11 parameters each).
const eventsPerStmt = 200

// insertEventsStmt inserts evs, returning the ids of those written, its
// parameters numbered or anonymous (SQLite: see paramStyle). An event
// whose owner used its idempotency key before is not written: on SQLite
// the events' unique key says so; on PostgreSQL the key's row in
// hookd_event_keys, inserted first in the same statement (keyedEvents).
func (q *Q) insertEventsStmt(evs []*event.Event, style paramStyle) stmt {
	if q.db.d.eventKeys() {
		if !anyKeyed(evs) {
			var sb strings.Builder
			sb.WriteString(insertEventsInto + `VALUES `)
			args := eventRows(&sb, make([]any, 0, 11*len(evs)), evs, style)
			sb.WriteString(` RETURNING id`)
			return stmt{sb.String(), args}
		}
		var sb strings.Builder
		sb.WriteString(`WITH `)
		args := keyedEvents(&sb, make([]any, 0, 11*len(evs)), evs, "")
		sb.WriteString(` ` + insertEventsInto + `SELECT ` + eventValueCols + ` FROM v WHERE ` + keyWritten + ` RETURNING id`)
		return stmt{sb.String(), args}
	}
	var sb strings.Builder
	sb.WriteString(insertEventsInto + `VALUES `)
	args := eventRows(&sb, make([]any, 0, 11*len(evs)), evs, style)
	sb.WriteString(` ON CONFLICT (owner_id, idempotency_key) DO NOTHING RETURNING id`)
	return stmt{sb.String(), args}
}

// eventValueCols are v's columns in insertEventsInto's order.
const eventValueCols = `v.i, v.o, v.t, v.s, v.at, v.d, v.tn, v.ep, v.k, v.c, v.j`

// keyWritten is true of v's events to write: those without a key, and
// those whose key keyedEvents inserted.
const keyWritten = `(v.k IS NULL OR v.i IN (SELECT event_id FROM kk))`

// keyedEvents writes the CTEs v, evs as rows, and kk, the insert of their
// keys into hookd_event_keys (only if cond, when not empty), returning the
// ids of the events whose key it inserted: a key the owner used before
// inserts nothing (PostgreSQL).
func keyedEvents(sb *strings.Builder, args []any, evs []*event.Event, cond string) []any {
	sb.WriteString(`v(i, o, t, s, at, d, tn, ep, k, c, j) AS (VALUES `)
	args = eventRows(sb, args, evs, cast)
	sb.WriteString(`), kk AS (INSERT INTO hookd_event_keys (owner_id, idempotency_key, event_id, created_at) SELECT v.o, v.k, v.i, v.c FROM v WHERE v.k IS NOT NULL`)
	if cond != "" {
		sb.WriteString(` AND ` + cond)
	}
	sb.WriteString(` ON CONFLICT DO NOTHING RETURNING event_id)`)
	return args
}

// anyKeyed says whether one of evs has an idempotency key.
func anyKeyed(evs []*event.Event) bool {
	for _, e := range evs {
		if e.IdempotencyKey != "" {
			return true
		}
	}
	return false
}

const insertEventsInto = `INSERT INTO hookd_events (id, owner_id, type, subject, occurred_at, data, tenant, endpoint_id, idempotency_key, created_at, fanout_job) `

// eventColTypes are the types of insertEventsInto's columns.
var eventColTypes = []string{"text", "text", "text", "text", "bigint", "bytea", "text", "text", "text", "bigint", "bigint"}

// eventRows writes evs as VALUES rows for insertEventsInto to sb, its
// parameters in style (cast: cast to their columns' types, for a VALUES
// list that is not the INSERT's own, which gives its parameters no type),
// and returns args with their parameters appended.
func eventRows(sb *strings.Builder, args []any, evs []*event.Event, style paramStyle) []any {
	for i, e := range evs {
		if i > 0 {
			sb.WriteByte(',')
		}
		var key any
		if e.IdempotencyKey != "" {
			key = e.IdempotencyKey
		}
		sb.WriteByte('(')
		switch style {
		case cast:
			writeTyped(sb, len(args)+1, eventColTypes...)
		case anonymous:
			writeAnonymous(sb, len(eventColTypes))
		default:
			writePlaceholders(sb, len(args)+1, len(eventColTypes))
		}
		sb.WriteByte(')')
		args = append(args, e.ID, e.OwnerID, e.Type, e.Subject, ts(e.OccurredAt), []byte(e.Data), e.Tenant, e.EndpointID, key, ts(e.CreatedAt), e.FanoutJob)
	}
	return args
}

// inserted appends to out what the insert of evs did, written being the
// ids it wrote: an event not written repeated an idempotency key, and its
// result is the earlier event's id.
func (q *Q) inserted(ctx context.Context, out []Inserted, evs []*event.Event, written map[string]bool) ([]Inserted, error) {
	for _, e := range evs {
		if written[e.ID] {
			out = append(out, Inserted{e.ID, true})
			continue
		}
		var id string
		err := q.queryRow(ctx, q.keyLookup(), e.OwnerID, e.IdempotencyKey).Scan(&id)
		if err != nil {
			return nil, fmt.Errorf("insert events: idempotency lookup: %w", err)
		}
		out = append(out, Inserted{id, false})
	}
	return out, nil
}

// keyLookup is the statement that reads the event an owner ($1) published
// with an idempotency key ($2).
func (q *Q) keyLookup() string {
	if q.db.d.eventKeys() {
		return `SELECT event_id FROM hookd_event_keys WHERE owner_id = $1 AND idempotency_key = $2`
	}
	return `SELECT id FROM hookd_events WHERE owner_id = $1 AND idempotency_key = $2`
}

// GetEvent returns one event of an owner ("" for any owner), unless
// retention expired it.
func (q *Q) GetEvent(ctx context.Context, ownerID, id string) (*event.Event, error) {
	e, err := scanEvent(q.queryRow(ctx, q.routed(`SELECT `+eventCols+` FROM hookd_events WHERE id = $1 AND ($2 = '' OR owner_id = $2) AND created_at >= $3`, id),
		id, ownerID, q.db.keptSince()))
	if NotFound(err) {
		return nil, apperr.New(apperr.NotFound, "event %q not found", id)
	}
	return e, err
}

// PruneEvents deletes up to limit events created before cutoff, except
// those in spare (as PruneDeliveries); it returns how many it deleted.
func (q *Q) PruneEvents(ctx context.Context, cutoff int64, spare IDRange, limit int) (int64, error) {
	cond, bounds := spare.outside("id", 3)
	n, err := q.exec(ctx, `DELETE FROM hookd_events WHERE id IN (SELECT id FROM hookd_events WHERE created_at < $1`+cond+` ORDER BY created_at LIMIT $2)`,
		append([]any{cutoff, limit}, bounds...)...)
	if err != nil {
		return 0, fmt.Errorf("prune events: %w", err)
	}
	return n, nil
}

// PruneEventKeys deletes up to limit idempotency keys used before cutoff
// (PostgreSQL's hookd_event_keys; 0 on SQLite, whose keys go with their
// events): a key is honoured as long as its event is kept.
func (q *Q) PruneEventKeys(ctx context.Context, cutoff int64, limit int) (int64, error) {
	if !q.db.d.eventKeys() {
		return 0, nil
	}
	n, err := q.exec(ctx, `DELETE FROM hookd_event_keys WHERE (owner_id, idempotency_key) IN
		(SELECT owner_id, idempotency_key FROM hookd_event_keys WHERE created_at < $1 ORDER BY created_at LIMIT $2)`, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("prune event keys: %w", err)
	}
	return n, nil
}
