package store

import (
	"context"

	"github.com/hookd/hookd/internal/endpoint"
)

// Speeds up: the fanout's write (fanout.go). The plain path: River's
// InsertManyTx for the deliver jobs, InsertDeliveries, MarkFannedOut and
// DeleteJobs, each a round trip on PostgreSQL. Here: one statement sent
// with the COMMIT (fanout_write_batch_postgres.go), or on SQLite plain
// statements that write River's rows in a cheaper form
// (fanout_write_batch_sqlite.go).

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
// relaxed transaction on PostgreSQL (InTx with TxOptions.Relaxed) whose River client
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
//
// The dialect writes it: pgDialect.writeFanout
// (fanout_write_batch_postgres.go), sqliteDialect.writeFanout
// (fanout_write_batch_sqlite.go).
func (q *Q) WriteFanoutAndCommit(ctx context.Context, w FanoutWrite) (done bool, err error) {
	if !q.CanInsertJobs() || len(w.Deliveries) == 0 || len(w.Jobs) != len(w.Deliveries) {
		return false, nil
	}
	return q.db.d.writeFanout(ctx, q, w)
}
