package store

import (
	"context"
	"errors"
	"strconv"
	"strings"
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
	if q.db == nil {
		return numbered
	}
	return q.db.d.bulkParams()
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
