package store

import (
	"context"
	"time"
)

// Exec runs a statement in q (for tests that need a write of their own
// inside a store transaction).
func (q *Q) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	return q.exec(ctx, sql, args...)
}

// LoadAttemptSQL and DeliveryPendingSQL are the deliver job's reads of its
// delivery ($1 the endpoint, $2 the event).
const (
	LoadAttemptSQL     = loadAttemptSQL
	DeliveryPendingSQL = deliveryPendingSQL
)

// EndpointActivitySQL ($1 the owner, $2 since), HourlyOutcomesSQL ($1
// the endpoint, $2 and $3 the hour) and HourlyOutcomesHoursSQL ($1 the
// endpoint, $2 the first hour, $3 how many) are the console's reads of
// the endpoint_recent index.
const (
	EndpointActivitySQL    = endpointActivitySQL
	HourlyOutcomesSQL      = hourlyOutcomesSQL
	HourlyOutcomesHoursSQL = hourlyOutcomesHoursSQL
)

// FreshReadsSQL are the reads of an endpoint's fresh deliveries, as db's
// engine runs them: the drain's (FreshDue, FreshAttempts, ClaimFresh) and
// the wake-ups' ($1 the endpoint, $2 now; the others as their functions
// say).
func (db *DB) FreshReadsSQL() map[string]string {
	return map[string]string{"FreshDue": db.freshDueSQL(), "FreshAttempts": db.freshAttemptsSQL(), "ClaimFresh": db.claimFreshSQL(),
		"WakeNextFresh": db.wakeNextFreshSQL(), "WakeDeferred": db.wakeDeferredSQL()}
}

// WithDeliverySQL is EndpointsWithDelivery's statement for n endpoints ($1
// the event, then the endpoints).
func WithDeliverySQL(n int) string { return withDeliverySQL(n) }

// LockForRestore takes the lock hookd restore holds on the SQLite file at
// path.
func LockForRestore(path string) (interface{ Release() error }, error) { return lockExclusive(path) }

// DeliveryLogSQL is ListDeliveriesWhere's statement and arguments, with
// retention's cutoff (as a reading hookd has it).
func DeliveryLogSQL(f DeliveryFilter) (string, []any) { return deliveryLogSQL(f, 1) }

// Routed is a statement about the events ids' rows as the store sends it:
// naming their partitions where one holds them all (partition_route.go).
func (db *DB) Routed(sql string, ids ...string) string { return db.Q().routed(sql, ids...) }

// QueryRow reads one row in q (for tests that read inside a store
// transaction).
func (q *Q) QueryRow(ctx context.Context, sql string, args ...any) interface{ Scan(...any) error } {
	return q.queryRow(ctx, sql, args...)
}

// RoutedFresh is a read of fresh deliveries by endpoint as the store sends
// it (partition_route.go).
func (db *DB) RoutedFresh(sql string) string { return db.Q().routedFresh(sql) }

// ReadRoutesAt rereads the time partitions' routes, the fresh partition's
// window around now.
func (db *DB) ReadRoutesAt(ctx context.Context, now time.Time) error {
	return db.readRoutesAt(ctx, now)
}

// ReadRoutesMissedDuring is ReadRoutesAt with a resend of an old
// delivery (freshMissed) told while the reading runs, after it checked
// for the hold: the race a reread in the background can lose.
func (db *DB) ReadRoutesMissedDuring(ctx context.Context, now time.Time) error {
	db.route.raced = db.freshMissed
	defer func() { db.route.raced = nil }()
	return db.readRoutesAt(ctx, now)
}

// EndFreshHold ends the minute for which freshMissed keeps the drains off
// their one partition.
func (db *DB) EndFreshHold() { db.route.freshHeld.Store(0) }

// IDBound is the lowest event id of t's millisecond (a partition's bound).
func IDBound(t time.Time) string { return idBound(t) }

// ActivityPartitions is the partitions EndpointActivity's count reads
// for a window from since (ok false: the parent table).
func (q *Q) ActivityPartitions(ctx context.Context, since time.Time) ([]string, bool, error) {
	return q.activityPartitions(ctx, since)
}

// LiveSinceSQL is the statement that tells which of the named partitions
// hold a delivery pending or finished at or after $1.
func LiveSinceSQL(names []string) string { return liveSinceSQL(names) }
