package store

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
)

// EventFilter selects one owner's events for events.list: published
// (created_at, unix µs) in [Since, Until), of a type matching TypeGlob
// (event.Match's globs; "" any), about a subject starting with
// SubjectPrefix, before the cursor (BeforeAt, BeforeID) when BeforeID is
// set; newest first, at most Limit.
type EventFilter struct {
	OwnerID       string
	Since, Until  int64
	TypeGlob      string
	SubjectPrefix string
	BeforeAt      int64
	BeforeID      string
	Limit         int
}

// ListEventsSQL is ListEvents' statement with every filter given (for
// the plan tests): owner, since, until, cursor time, cursor id, type
// LIKE pattern, the subject prefix's length in characters and the prefix,
// limit.
const ListEventsSQL = `SELECT ` + eventCols + ` FROM hookd_events
	WHERE owner_id = $1 AND created_at >= $2 AND created_at < $3 AND (created_at, id) < ($4, $5)
	AND type LIKE $6 ESCAPE '\' AND substr(subject, 1, $7) = $8
	ORDER BY created_at DESC, id DESC LIMIT $9`

// ListEventsPartitionedSQL is ListEventsSQL where the tables are
// partitioned by time: the window's start again as an id ($10), by which
// PostgreSQL prunes the partitions before the window.
const ListEventsPartitionedSQL = `SELECT ` + eventCols + ` FROM hookd_events
	WHERE owner_id = $1 AND created_at >= $2 AND created_at < $3 AND (created_at, id) < ($4, $5)
	AND type LIKE $6 ESCAPE '\' AND substr(subject, 1, $7) = $8 AND id >= $10
	ORDER BY created_at DESC, id DESC LIMIT $9`

// ListEvents reads f's page. The type glob becomes a LIKE pattern ('*' is
// '%'; types are lowercase, so SQLite's case-blind LIKE and PostgreSQL's
// agree), the prefix a comparison of the subject's first characters; both
// filter the rows hookd_events_owner_created reads.
func (q *Q) ListEvents(ctx context.Context, f EventFilter) ([]*event.Event, error) {
	f.Since = max(f.Since, q.db.keptSince()) // none retention expired
	cond, args := `owner_id = $1 AND created_at >= $2 AND created_at < $3`, []any{f.OwnerID, f.Since, f.Until}
	add := func(sql string, vs ...any) {
		args = append(args, vs...)
		n := len(args)
		cond += " AND " + strings.NewReplacer("$A", fmt.Sprintf("$%d", n-len(vs)+1), "$B", fmt.Sprintf("$%d", n)).Replace(sql)
	}
	if f.BeforeID != "" {
		add(`(created_at, id) < ($A, $B)`, f.BeforeAt, f.BeforeID)
	}
	if f.TypeGlob != "" && f.TypeGlob != "*" {
		add(`type LIKE $A ESCAPE '\'`, globLike(f.TypeGlob))
	}
	if f.SubjectPrefix != "" {
		add(`substr(subject, 1, $A) = $B`, utf8.RuneCountInString(f.SubjectPrefix), f.SubjectPrefix)
	}
	if since := time.UnixMicro(f.Since); q.db.partitioned && f.Since > 0 && since.Year() <= 9999 {
		// Partitioned: the window's start as an id too, so the partitions
		// before it are not read. An event's id is of its created_at's
		// millisecond or after, never before; how far after is not
		// bounded (event.NewID never goes back in time in a process,
		// whose clock may have), so the window's end is not an id bound.
		add(`id >= $A`, idBound(since))
	}
	args = append(args, f.Limit)
	out, err := collect(ctx, q, func(r row) (*event.Event, error) { return scanEvent(r) }, `SELECT `+eventCols+` FROM hookd_events WHERE `+cond+
		fmt.Sprintf(` ORDER BY created_at DESC, id DESC LIMIT $%d`, len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	return out, nil
}

// globLike is an event-type glob as a LIKE pattern: '*' any run, '_'
// (a type character) literal.
func globLike(g string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`, `*`, `%`).Replace(g)
}

// EventDeliveries reads the owner's deliveries of one event (one per
// endpoint it went to), through hookd_deliveries_event.
func (q *Q) EventDeliveries(ctx context.Context, ownerID, eventID string) ([]*endpoint.Delivery, error) {
	out, err := collect(ctx, q, scanDelivery, q.routed(`SELECT `+deliveryCols+` FROM hookd_deliveries WHERE event_id = $1 AND owner_id = $2 AND `+unexpiredDelivery("", 3)+` ORDER BY endpoint_id`, eventID),
		eventID, ownerID, q.db.keptSince())
	if err != nil {
		return nil, fmt.Errorf("event deliveries: %w", err)
	}
	return out, nil
}
