package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A transaction on the API's own connections (InTx with TxOptions.Foreground) is a group
// commit of single publishes that many callers wait for, and on a busy
// 2-core machine its round trips, not its statements, were what it took:
// BEGIN, the type rules, the insert and COMMIT each waited on the network
// and on a PostgreSQL backend that had to be scheduled to answer. So
// pipeTx sends BEGIN together with the transaction's first statement, and
// a statement run with Q.InsertEventsAndCommit together with COMMIT: a
// publish to an owner without endpoints is two round trips instead of
// four. PostgreSQL keeps a transaction opened by BEGIN inside a pipeline
// open past the pipeline's end (its Sync), as psql's \startpipeline does.

// pipeTx is a pgx.Tx on one connection whose BEGIN goes out with its first
// statement. It is what River's InsertManyTx gets too (q.tx), so River's
// inserts run inside it. Nested transactions (savepoints) are not offered:
// nothing in a foreground transaction opens one.
type pipeTx struct {
	conn *pgx.Conn
	// begun: BEGIN was sent; done: COMMIT or ROLLBACK was, and statements
	// now run on the connection alone, each its own implicit transaction.
	begun, done bool
	// relaxed: the commit does not wait for its WAL flush (DB.InTx, TxOptions.Relaxed):
	// set_config goes out with COMMIT, which is when PostgreSQL reads it.
	relaxed bool
}

var _ pgx.Tx = (*pipeTx)(nil)

var errNested = errors.New("a pipelined transaction offers no nested transactions")

// Begin refuses: see pipeTx.
func (t *pipeTx) Begin(context.Context) (pgx.Tx, error) { return nil, errNested }

// begin sends BEGIN alone, before a statement that cannot carry it.
func (t *pipeTx) begin(ctx context.Context) error {
	if t.begun {
		return nil
	}
	if _, err := t.conn.Exec(ctx, "begin"); err != nil {
		return err
	}
	t.begun = true
	return nil
}

// Commit commits (nothing was sent: there is nothing to commit).
func (t *pipeTx) Commit(ctx context.Context) error {
	if !t.begun || t.done {
		return nil
	}
	t.done = true
	if !t.relaxed {
		return commitTag(t.conn.Exec(ctx, "commit"))
	}
	var b pgx.Batch
	t.queueCommit(&b)
	br := t.conn.SendBatch(ctx, &b)
	err := t.readCommit(br)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// queueCommit queues COMMIT, after set_config if the transaction is relaxed.
func (t *pipeTx) queueCommit(b *pgx.Batch) {
	if t.relaxed {
		b.Queue(relaxCommit)
	}
	b.Queue("commit")
}

// readCommit reads the results queueCommit queued.
func (t *pipeTx) readCommit(br pgx.BatchResults) error {
	if t.relaxed {
		if _, err := br.Exec(); err != nil {
			return err
		}
	}
	return commitTag(br.Exec())
}

// commitTag is COMMIT's outcome from its tag: PostgreSQL answers COMMIT
// of a failed transaction with ROLLBACK.
func commitTag(tag pgconn.CommandTag, err error) error {
	if err == nil && tag.String() == "ROLLBACK" {
		return pgx.ErrTxCommitRollback
	}
	return err
}

// Rollback rolls back whatever the connection has open.
func (t *pipeTx) Rollback(ctx context.Context) error {
	t.done = true
	if t.conn.PgConn().TxStatus() == 'I' {
		return nil
	}
	_, err := t.conn.Exec(ctx, "rollback")
	return err
}

// CopyFrom runs COPY in the transaction.
func (t *pipeTx) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	if err := t.begin(ctx); err != nil {
		return 0, err
	}
	return t.conn.CopyFrom(ctx, table, cols, src)
}

// SendBatch runs a batch in the transaction, with BEGIN ahead of it if
// it comes first.
func (t *pipeTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if t.begun {
		return t.conn.SendBatch(ctx, b)
	}
	t.begun = true
	withBegin := &pgx.Batch{QueuedQueries: append([]*pgx.QueuedQuery{{SQL: "begin"}}, b.QueuedQueries...)}
	br := t.conn.SendBatch(ctx, withBegin)
	_, err := br.Exec()
	return afterBegin{br, err}
}

// LargeObjects is not offered (nothing of hookd's uses them): the zero
// value, whose every call fails.
func (t *pipeTx) LargeObjects() pgx.LargeObjects { return pgx.LargeObjects{} }

// Prepare prepares a statement on the connection.
func (t *pipeTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	return t.conn.Prepare(ctx, name, sql)
}

// Exec runs sql in the transaction, with BEGIN if it is the first.
func (t *pipeTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if t.begun {
		return t.conn.Exec(ctx, sql, args...)
	}
	br := t.sendWithBegin(ctx, sql, args)
	var tag pgconn.CommandTag
	_, err := br.Exec() // BEGIN
	if err == nil {
		tag, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

// Query runs sql in the transaction, with BEGIN if it is the first.
func (t *pipeTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if t.begun {
		return t.conn.Query(ctx, sql, args...)
	}
	br := t.sendWithBegin(ctx, sql, args)
	if _, err := br.Exec(); err != nil { // BEGIN
		_ = br.Close() // the batch failed already: err is what it says
		return nil, err
	}
	r, err := br.Query()
	if err != nil {
		_ = br.Close() // the batch failed already: err is what it says
		return nil, err
	}
	return &pgBatchRows{Rows: r, br: br}, nil
}

// QueryRow is Query's first row.
func (t *pipeTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if t.begun {
		return t.conn.QueryRow(ctx, sql, args...)
	}
	r, err := t.Query(ctx, sql, args...)
	if err != nil {
		return errRow{err}
	}
	return firstRow{r}
}

// firstRow is the first row of rows, as pgx.Conn.QueryRow answers it.
type firstRow struct{ rs pgx.Rows }

func (f firstRow) Scan(dest ...any) error {
	defer f.rs.Close()
	if !f.rs.Next() {
		if err := f.rs.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := f.rs.Scan(dest...); err != nil {
		return err
	}
	f.rs.Close()
	return f.rs.Err()
}

// Conn is the connection the transaction runs on.
func (t *pipeTx) Conn() *pgx.Conn { return t.conn }

// sendWithBegin sends BEGIN and sql as one pipelined batch.
func (t *pipeTx) sendWithBegin(ctx context.Context, sql string, args []any) pgx.BatchResults {
	var b pgx.Batch
	b.Queue("begin")
	b.Queue(sql, args...)
	t.begun = true
	return t.conn.SendBatch(ctx, &b)
}

// queryThenCommit runs sql, reads its rows with each, and commits, sql and
// COMMIT in one round trip. stmtErr is sql's failure (nothing committed:
// the caller rolls back); commitErr is COMMIT's, whose outcome a caller
// cannot know (the connection may have died after the commit).
//
// A transaction whose only statement sql is sends BEGIN in that round trip
// too (Q.InsertExpectedAndCommit).
func (t *pipeTx) queryThenCommit(ctx context.Context, sql string, args []any, each func(row) error) (stmtErr, commitErr error) {
	var b pgx.Batch
	withBegin := !t.begun
	if withBegin {
		b.Queue("begin")
		t.begun = true
	}
	b.Queue(sql, args...)
	t.queueCommit(&b)
	br := t.conn.SendBatch(ctx, &b)
	defer func() {
		if err := br.Close(); err != nil && stmtErr == nil && commitErr == nil {
			commitErr = err
		}
	}()
	var err error
	if withBegin {
		_, err = br.Exec()
	}
	var rs pgx.Rows
	if err == nil {
		rs, err = br.Query()
	}
	if err == nil {
		for rs.Next() && err == nil {
			err = each(rs)
		}
		rs.Close()
		if err == nil {
			err = rs.Err()
		}
	}
	if err != nil {
		return err, nil // PostgreSQL skips the COMMIT after a failed statement
	}
	t.done = true
	return nil, t.readCommit(br)
}

// reopen makes the next statement begin a new transaction, after a
// transaction committed (queryThenCommit) with nothing written.
func (t *pipeTx) reopen() { t.begun, t.done = false, false }

// afterBegin is the results of a batch sent after BEGIN, BEGIN's own
// result read; a failed BEGIN fails every statement after it.
type afterBegin struct {
	pgx.BatchResults
	begin error
}

func (a afterBegin) Exec() (pgconn.CommandTag, error) {
	if a.begin != nil {
		return pgconn.CommandTag{}, a.begin
	}
	return a.BatchResults.Exec()
}

func (a afterBegin) Query() (pgx.Rows, error) {
	if a.begin != nil {
		return nil, a.begin
	}
	return a.BatchResults.Query()
}

func (a afterBegin) QueryRow() pgx.Row {
	if a.begin != nil {
		return errRow{a.begin}
	}
	return a.BatchResults.QueryRow()
}

func (a afterBegin) Close() error {
	err := a.BatchResults.Close()
	if a.begin != nil {
		return a.begin
	}
	return err
}

// errRow is the row of a query that failed before it had rows.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// CommitError is the failure of a COMMIT sent with a transaction's last
// statement (Q.InsertEventsAndCommit): the statement ran, and whether the
// transaction committed is unknown, so its caller must not try again as if
// nothing had happened.
type CommitError struct{ Err error }

func (e *CommitError) Error() string { return fmt.Sprintf("commit: %v", e.Err) }
func (e *CommitError) Unwrap() error { return e.Err }
