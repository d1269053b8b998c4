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
		st := insertEventsStmt(chunk, q.anonParams())
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
// parameters numbered or anonymous (SQLite: see paramStyle).
func insertEventsStmt(evs []*event.Event, style paramStyle) stmt {
	var sb strings.Builder
	sb.WriteString(insertEventsInto + `VALUES `)
	args := eventRows(&sb, make([]any, 0, 11*len(evs)), evs, style)
	sb.WriteString(` ON CONFLICT (owner_id, idempotency_key) DO NOTHING RETURNING id`)
	return stmt{sb.String(), args}
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
		err := q.queryRow(ctx, `SELECT id FROM hookd_events WHERE owner_id = $1 AND idempotency_key = $2`, e.OwnerID, e.IdempotencyKey).Scan(&id)
		if err != nil {
			return nil, fmt.Errorf("insert events: idempotency lookup: %w", err)
		}
		out = append(out, Inserted{id, false})
	}
	return out, nil
}

// GetEvent returns one event of an owner ("" for any owner).
func (q *Q) GetEvent(ctx context.Context, ownerID, id string) (*event.Event, error) {
	e, err := scanEvent(q.queryRow(ctx, `SELECT `+eventCols+` FROM hookd_events WHERE id = $1 AND ($2 = '' OR owner_id = $2)`, id, ownerID))
	if NotFound(err) {
		return nil, apperr.New(apperr.NotFound, "event %q not found", id)
	}
	return e, err
}

// PruneEvents deletes up to limit events created before cutoff; it returns
// how many it deleted.
func (q *Q) PruneEvents(ctx context.Context, cutoff int64, limit int) (int64, error) {
	n, err := q.exec(ctx, `DELETE FROM hookd_events WHERE id IN (SELECT id FROM hookd_events WHERE created_at < $1 ORDER BY created_at LIMIT $2)`, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("prune events: %w", err)
	}
	return n, nil
}
