package store

import (
	"fmt"
	"time"
)

// Retention, as reads see it. Retention deletes a finished delivery, and
// an event, once it is older than the window: row by row (PruneDeliveries,
// PruneEvents, every pass) or, on time-partitioned tables, with its whole
// partition (DropExpiredPartitions), up to one partition interval later.
// So that a record leaves every answer the moment it expires however its
// row goes, the reads an owner sees hide what the window has passed
// (keptSince): the delivery log, a delivery, an event's deliveries, an
// event, events.list, a recovery's and a redeliver's selection.
//
// The delivery path's own reads are not filtered: a pending delivery is
// never hidden (only a finished one ages), and its event is sent while
// its row is there (the row loop deletes it, and then the job discards
// the delivery, only for a delivery pending a whole window).

// KeepFor tells the reads how long retention keeps finished deliveries
// and events, by the clock now (nil: time.Now); 0 keeps everything.
// Call it before the database is used (app.build does).
func (db *DB) KeepFor(retention time.Duration, now func() time.Time) {
	if now == nil {
		now = time.Now
	}
	db.retention, db.clock = retention, now
}

// keptSince is the oldest time retention keeps (unix µs): a delivery
// finished before it, or an event created before it, is expired. 0:
// nothing is.
func (db *DB) keptSince() int64 {
	if db.retention <= 0 {
		return 0
	}
	return ts(db.clock().Add(-db.retention))
}

// unexpiredDelivery is the condition that a delivery row (its columns
// prefixed by p: "" or "d.") is not expired, with the cutoff as
// parameter $n.
func unexpiredDelivery(p string, n int) string {
	return fmt.Sprintf("(%[1]sfinished_at IS NULL OR %[1]sfinished_at >= $%[2]d)", p, n)
}

// IDRange is the event ids of the events created in [From, To): the rows
// of the partitions that cover it.
type IDRange struct{ From, To time.Time }

// IsZero reports whether r names no range.
func (r IDRange) IsZero() bool { return r.From.IsZero() && r.To.IsZero() }

// outside is the condition that column col's event id is outside r, with
// r's bounds as parameters $n and $n+1, and those bounds; "" when r is
// zero. On partitioned tables PostgreSQL prunes by it: a statement with
// it reads none of r's partitions.
func (r IDRange) outside(col string, n int) (string, []any) {
	if r.IsZero() {
		return "", nil
	}
	return fmt.Sprintf(" AND (%[1]s < $%[2]d OR %[1]s >= $%[3]d)", col, n, n+1), []any{idBound(r.From), idBound(r.To)}
}
