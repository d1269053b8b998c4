package store

import (
	"context"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivermigrate"
)

// dialect is everything that differs between the two engines, behind one
// seam: the plain query files write their SQL once and ask the dialect
// where an engine has a clause, a statement or a transaction the other
// lacks, instead of testing which engine they run on. pgDialect
// (postgres.go) and sqliteDialect (sqlite.go) are the two; a DB holds one.
type dialect interface {
	// inTx runs fn in one transaction of the kind opts asks for (DB.InTx).
	inTx(ctx context.Context, opts TxOptions, fn func(*Q) error) error
	// relaxed is the querier outside a transaction whose writes commit
	// without waiting for their WAL flush (DB.Relaxed).
	relaxed() querier
	// foreground is the querier of the API's own connections (the main
	// one where there are none).
	foreground() querier
	// withTx wraps a transaction a library user opened (DB.WithTx).
	withTx(tx any) (*Q, error)
	// close closes the database (DB.Close).
	close() error

	// keyShare is the lock a foreign key's check takes on the parent row:
	// it keeps the row from being deleted (or its key changed) until the
	// transaction ends, and lets others read and lock it too. Empty where
	// one writer runs at a time.
	keyShare() string
	// skipLocked makes concurrent takers pass over rows another taker is
	// updating (a lease slot, a fresh delivery) and take the next free one,
	// instead of queueing on the same row and finding it gone. Empty where
	// one writer runs at a time.
	skipLocked() string
	// eventKeys says whether idempotency keys live in hookd_event_keys
	// (PostgreSQL, whose partitioned hookd_events cannot hold a unique
	// key without its partition key: 025_event_keys.sql) rather than in
	// hookd_events' own unique key (SQLite).
	eventKeys() bool
	// pendingIndex follows hookd_deliveries (or its alias) in a read of an
	// endpoint's pending deliveries, to make the engine read
	// hookd_deliveries_pending. SQLite, with no statistics, weighs it
	// alike with the (endpoint_id, id) index of every delivery, and took
	// that one for such a read when it had no range on id (the wake-ups)
	// or had to fetch the table's row anyway (FreshAttempts), walking the
	// endpoint's whole history from its oldest row to the first pending
	// one: at 5 M deliveries a read went through 250,000 rows, and
	// delivering fell to 6–300/s.
	pendingIndex() string
	// bulkParams is the parameter style of a bulk statement that uses each
	// parameter once, in order (paramStyle).
	bulkParams() paramStyle
	// jsonText is the expression that reads River's JSON column col back
	// as JSON text.
	jsonText(col string) string
	// roundTrips reports whether a query is a network round trip (so
	// concurrent lookups gain by sharing one), not a call into an
	// embedded engine.
	roundTrips() bool
	// reclaim makes the space of rows a retention pass deleted reusable
	// (DB.Reclaim).
	reclaim(ctx context.Context) error

	// lockEvent locks an event's row for q's transaction; ok=false:
	// another transaction holds it (Q.LockEvent).
	lockEvent(ctx context.Context, q *Q, id string) (ok bool, err error)
	// notifyPollers tells every process's polls that the endpoints ids
	// have new messages, at q's commit (Q.WritePollMessages). A no-op
	// where one process serves the database.
	notifyPollers(ctx context.Context, q *Q, ids string) error
	// listenPoll is DB.ListenPoll's loop: a no-op where one process serves
	// the database.
	listenPoll(ctx context.Context, wake func(endpointIDs []string), lost func())
	// execRelaxed runs stmts as one write that may be lost in a database
	// crash (DB.RecordDrained), in as few round trips as the engine allows.
	execRelaxed(ctx context.Context, stmts []stmt) error

	// writeFanout is WriteFanoutAndCommit's write, once the caller may
	// write jobs itself (fanout_write_batch.go); done false: nothing
	// written, the caller writes the usual way.
	writeFanout(ctx context.Context, q *Q, w FanoutWrite) (done bool, err error)

	// migrate applies River's and hookd's migrations (DB.Migrate), as
	// several processes may at once.
	migrate(ctx context.Context) error
	// riverMigrator is River's migrator on the engine's driver.
	riverMigrator(cfg *rivermigrate.Config) (riverMigrations, error)
	// tableExists is a query that counts the tables named name (a
	// constant) in hookd's schema: 1 or 0.
	tableExists(name string) string

	// newRiver builds the River client on the engine's driver (DB.NewRiver).
	newRiver(cfg *river.Config) (JobClient, error)
	// useRiver wraps the application's own River client (DB.UseRiver).
	useRiver(client any) (JobClient, error)
}
