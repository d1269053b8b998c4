package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookd/hookd/internal/audit"
)

// The API's own connections. hookd's PostgreSQL pool is small on purpose
// (DefaultMaxConns: more connections made everything slower on 2 cores),
// and a hundred delivery workers keep it busy; a single publish then
// waited for a connection behind them, and 32 publishing clients got
// 30–120 publishes/s with a p99 of one to two seconds while hookd
// delivered. Single publishes share one transaction at a time (the group
// commit) and key lookups one query at a time, so two connections of
// their own, which the workers never take, keep the API answering
// whatever the workers do.

// foregroundConns is the size of the API's own pool.
const foregroundConns = 2

// openForeground opens the API's pool beside the main one (nothing is
// connected until first use).
func openForeground(ctx context.Context, pc *pgxpool.Config) (*pgxpool.Pool, error) {
	fc := pc.Copy()
	fc.MaxConns = foregroundConns
	fc.MinConns = 0
	return pgxpool.NewWithConfig(ctx, fc)
}

// InTxForeground is InTx on the API's own connections (PostgreSQL; on
// SQLite, and on a pool the library user passed in, it is InTx): for work
// a client is waiting for, which must not queue behind the workers. Its
// BEGIN goes out with its first statement, and Q.InsertEventsAndCommit's
// statement with its COMMIT (pipeTx, pipeline.go).
func (db *DB) InTxForeground(ctx context.Context, fn func(q *Q) error) error {
	if db.fgPool == nil {
		return db.InTx(ctx, fn)
	}
	return db.inPipeTx(ctx, db.fgPool, false, fn)
}

// inPipeTx runs fn in a pipeTx on a connection of pool (relaxed: see
// pipeTx), committed if fn returns nil, rolled back otherwise.
func (db *DB) inPipeTx(ctx context.Context, pool *pgxpool.Pool, relaxed bool, fn func(q *Q) error) error {
	c, err := pool.Acquire(ctx)
	if err != nil {
		return classify(err)
	}
	// The pool closes a connection released with a transaction still open
	// (a panic in fn): nothing half-done is reused.
	defer c.Release()
	tx := &pipeTx{conn: c.Conn(), relaxed: relaxed}
	q := &Q{db: db, querier: pgQuerier{tx}, tx: tx}
	err = fn(q)
	var pending *audit.Pending
	if err == nil {
		pending, err = q.writeAudit(ctx)
	}
	if err != nil {
		if rerr := tx.Rollback(ctx); rerr != nil {
			db.log.Warn("rollback after a failed transaction", "error", rerr, "cause", err)
		}
		return classify(err)
	}
	if err := tx.Commit(ctx); err != nil {
		pending.Untake()
		return classify(fmt.Errorf("commit: %w", err))
	}
	return nil
}

// foreground is the querier of the API's own connections (the main one
// where there are none).
func (db *DB) foreground() querier {
	if db.fgPool == nil {
		return db.base
	}
	return pgQuerier{db.fgPool}
}
