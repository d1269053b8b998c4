package store

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// querier is the one query surface hookd's SQL is written against. Both
// engines take the same SQL text ($N placeholders work in SQLite too), so the
// stores differ only in how a connection or transaction is adapted here.
type querier interface {
	exec(ctx context.Context, sql string, args ...any) (int64, error)
	query(ctx context.Context, sql string, args ...any) (rows, error)
	queryRow(ctx context.Context, sql string, args ...any) row
}

type rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

type row interface{ Scan(dest ...any) error }

// errNoRows is what row.Scan returns on both engines when nothing matched.
var errNoRows = errors.New("no rows")

// --- database/sql (SQLite) ---

type sqlConn interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// sqlQuerier runs SQL on SQLite. Statements are compiled once per text by
// the connection itself (CachingSQLiteDriver), inside transactions too.
type sqlQuerier struct{ c sqlConn }

func (s sqlQuerier) exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := s.c.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (s sqlQuerier) query(ctx context.Context, q string, args ...any) (rows, error) {
	r, err := s.c.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{r}, nil
}

func (s sqlQuerier) queryRow(ctx context.Context, q string, args ...any) row {
	return sqlRow{s.c.QueryRowContext(ctx, q, args...)}
}

type sqlRows struct{ *sql.Rows }

// Close drops *sql.Rows.Close's error: it is the iteration's, which Err
// reports too (database/sql keeps it for Err after Close).
func (r sqlRows) Close() { _ = r.Rows.Close() }

type sqlRow struct{ r *sql.Row }

func (r sqlRow) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return errNoRows
	}
	return err
}

// --- pgx (PostgreSQL) ---

type pgConn interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

type pgQuerier struct{ c pgConn }

func (p pgQuerier) exec(ctx context.Context, q string, args ...any) (int64, error) {
	tag, err := p.c.Exec(ctx, q, args...)
	if err != nil {
		return 0, classify(err)
	}
	return tag.RowsAffected(), nil
}

func (p pgQuerier) query(ctx context.Context, q string, args ...any) (rows, error) {
	r, err := p.c.Query(ctx, q, args...)
	if err != nil {
		return nil, classify(err)
	}
	return pgRows{r}, nil
}

// pgRows classifies the error pgx reports only once the rows are read (a
// query on a connection that died is lazy about saying so).
type pgRows struct{ pgx.Rows }

func (r pgRows) Err() error { return classify(r.Rows.Err()) }

func (p pgQuerier) queryRow(ctx context.Context, q string, args ...any) row {
	return pgRow{p.c.QueryRow(ctx, q, args...)}
}

type pgRow struct{ r pgx.Row }

func (r pgRow) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return errNoRows
	}
	return classify(err)
}

// pgRelaxed runs each statement in its own implicit transaction whose
// commit does not wait for the WAL flush (synchronous_commit off for that
// transaction only), in one round trip: set_config and the statement go
// out as one pipelined batch. For writes a database crash may lose without
// losing anything that matters (see DB.Relaxed).
type pgRelaxed struct{ pool *pgxpool.Pool }

const relaxCommit = `SELECT set_config('synchronous_commit', 'off', true)`

func (p pgRelaxed) send(ctx context.Context, q string, args ...any) pgx.BatchResults {
	var b pgx.Batch
	b.Queue(relaxCommit)
	b.Queue(q, args...)
	return p.pool.SendBatch(ctx, &b)
}

func (p pgRelaxed) exec(ctx context.Context, q string, args ...any) (int64, error) {
	br := p.send(ctx, q, args...)
	var tag pgconn.CommandTag
	_, err := br.Exec() // set_config
	if err == nil {
		tag, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, classify(err)
	}
	return tag.RowsAffected(), nil
}

func (p pgRelaxed) query(ctx context.Context, q string, args ...any) (rows, error) {
	br := p.send(ctx, q, args...)
	if _, err := br.Exec(); err != nil {
		_ = br.Close() // the batch failed already: err is what it says
		return nil, classify(err)
	}
	r, err := br.Query()
	if err != nil {
		_ = br.Close() // the batch failed already: err is what it says
		return nil, classify(err)
	}
	return &pgBatchRows{Rows: r, br: br}, nil
}

func (p pgRelaxed) queryRow(ctx context.Context, q string, args ...any) row {
	r, err := p.query(ctx, q, args...)
	return pgFirstRow{r, err}
}

// pgBatchRows closes its batch with the rows (which returns the
// connection). The batch is an implicit transaction whose commit PostgreSQL
// reports after the rows, so Err after Close includes the batch's error.
type pgBatchRows struct {
	pgx.Rows
	br       pgx.BatchResults
	closed   bool
	closeErr error
}

func (r *pgBatchRows) Close() {
	r.Rows.Close()
	if !r.closed {
		r.closed = true
		r.closeErr = r.br.Close()
	}
}

func (r *pgBatchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return classify(err)
	}
	return classify(r.closeErr)
}

type pgFirstRow struct {
	r   rows
	err error
}

func (f pgFirstRow) Scan(dest ...any) error {
	if f.err != nil {
		return f.err
	}
	defer f.r.Close()
	if !f.r.Next() {
		if err := f.r.Err(); err != nil {
			return err
		}
		return errNoRows
	}
	if err := f.r.Scan(dest...); err != nil {
		return err
	}
	f.r.Close()
	return f.r.Err()
}

// collect runs query on db and reads every row it returns with scan: the
// one row loop of the store. Each list query is a scan function and a call.
func collect[T any](ctx context.Context, db querier, scan func(row) (T, error), query string, args ...any) ([]T, error) {
	rs, err := db.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close() // on a scan error; a no-op after the Close below
	var out []T
	for rs.Next() {
		v, err := scan(rs)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	rs.Close() // before Err: a relaxed query's batch reports its commit on Close
	return out, rs.Err()
}

// scanOne reads a row of one column.
func scanOne[T any](r row) (T, error) {
	var v T
	err := r.Scan(&v)
	return v, err
}

// setOf returns the set of vs.
func setOf[T comparable](vs []T) map[T]bool {
	out := make(map[T]bool, len(vs))
	for _, v := range vs {
		out[v] = true
	}
	return out
}

// placeholders returns "$from, …, $(from+n-1)".
func placeholders(from, n int) string {
	var sb strings.Builder
	writePlaceholders(&sb, from, n)
	return sb.String()
}

// paramStyle is how a generated statement writes its parameters.
type paramStyle int

const (
	numbered  paramStyle = iota // $1,$2
	cast                        // $1::text,$2::bigint
	anonymous                   // ?,?: SQLite only, in a statement with no numbered ones
)

// anonParams is the style of parameters for a bulk statement of q's that
// uses each parameter once, in order: anonymous on SQLite, numbered on
// PostgreSQL. modernc's driver looks up each parameter's name before it
// binds it, and SQLite finds a named one ($n) by walking the statement's
// list of names: a statement of 2,200 named parameters took millions of
// steps to bind (6 % of hookd's CPU while delivering on SQLite), where
// anonymous ones have no names to look up. SQLite numbers ? itself, so a
// statement must not mix the two.
func (q *Q) anonParams() paramStyle {
	if q.db != nil && q.db.Backend == SQLite {
		return anonymous
	}
	return numbered
}

// writeAnonymous writes n anonymous parameters (?,?,…) to sb.
func writeAnonymous(sb *strings.Builder, n int) {
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteByte('?')
	}
}

// writePlaceholders writes placeholders(from, n) to sb.
func writePlaceholders(sb *strings.Builder, from, n int) {
	var b [20]byte
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteByte('$')
		sb.Write(strconv.AppendInt(b[:0], int64(from+i), 10))
	}
}

func anys[T any](vs []T) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

// nonNil is vs, or an empty slice for none: a JSON [] and an SQL empty
// array, not null.
func nonNil[T any](vs []T) []T {
	if vs == nil {
		return []T{}
	}
	return vs
}
