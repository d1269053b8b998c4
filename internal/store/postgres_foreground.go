package store

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
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

// inPipeTx runs fn in a pipeTx on a connection of pool (relaxed: see
// pipeTx), committed if fn returns nil, rolled back otherwise: InTx's
// transaction on PostgreSQL when TxOptions asks for Foreground (on the
// API's own connections) or Relaxed. Its BEGIN goes out with its first
// statement, and Q.InsertEventsAndCommit's statement with its COMMIT
// (pipeTx, postgres_pipeline.go).
func (d pgDialect) inPipeTx(ctx context.Context, pool *pgxpool.Pool, relaxed bool, fn func(q *Q) error) error {
	c, err := pool.Acquire(ctx)
	if err != nil {
		return classify(err)
	}
	// The pool closes a connection released with a transaction still open
	// (a panic in fn): nothing half-done is reused.
	defer c.Release()
	tx := &pipeTx{conn: c.Conn(), relaxed: relaxed}
	q := &Q{db: d.db, querier: pgQuerier{tx}, tx: tx}
	return classify(d.db.runTx(ctx, q, fn, tx.Commit, tx.Rollback))
}
