package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookd/hookd"
)

// database is the shop's own connection: a PostgreSQL pool, or an SQLite
// *sql.DB. Your application uses one of them; the example runs on both.
type database struct {
	pool *pgxpool.Pool // PostgreSQL
	sql  *sql.DB       // SQLite
}

// tx is one transaction of the shop's. native is what hookd.PublishTx and
// River's InsertTx take: a pgx.Tx or a *sql.Tx.
type tx interface {
	exec(ctx context.Context, query string, args ...any) (rowsAffected int64, err error)
	queryRow(ctx context.Context, query string, args ...any) interface{ Scan(...any) error }
	// each calls f on every row of query, in order.
	each(ctx context.Context, query string, f func(scan func(...any) error) error, args ...any) error
	native() any
}

func openDatabase(ctx context.Context, url string) (*database, error) {
	if strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://") {
		pool, err := pgxpool.New(ctx, url)
		if err != nil {
			return nil, fmt.Errorf("connect %s: %w", url, err)
		}
		return &database{pool: pool}, nil
	}
	db, err := hookd.OpenSQLite(ctx, url) // one connection, WAL, foreign keys: as River needs it
	if err != nil {
		return nil, err
	}
	return &database{sql: db}, nil
}

func (d *database) close() {
	if d.pool != nil {
		d.pool.Close()
		return
	}
	d.sql.Close()
}

// inTx runs f in one transaction: committed when f returns nil, rolled back
// (with everything f wrote, hookd's event included) when it fails.
func (d *database) inTx(ctx context.Context, f func(tx) error) error {
	if d.pool != nil {
		return pgx.BeginFunc(ctx, d.pool, func(t pgx.Tx) error { return f(pgTx{t}) })
	}
	t, err := d.sql.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(sqlTx{t}); err != nil {
		return errors.Join(err, ignoreDone(t.Rollback()))
	}
	return t.Commit()
}

func ignoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}

type pgTx struct{ pgx.Tx }

func (t pgTx) exec(ctx context.Context, q string, args ...any) (int64, error) {
	tag, err := t.Exec(ctx, q, args...)
	return tag.RowsAffected(), err
}

func (t pgTx) queryRow(ctx context.Context, q string, args ...any) interface{ Scan(...any) error } {
	return t.QueryRow(ctx, q, args...)
}

func (t pgTx) each(ctx context.Context, q string, f func(func(...any) error) error, args ...any) error {
	rows, err := t.Query(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return eachRow(rows, f)
}

func (t pgTx) native() any { return t.Tx }

type sqlTx struct{ *sql.Tx }

func (t sqlTx) exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := t.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (t sqlTx) queryRow(ctx context.Context, q string, args ...any) interface{ Scan(...any) error } {
	return t.QueryRowContext(ctx, q, args...)
}

func (t sqlTx) each(ctx context.Context, q string, f func(func(...any) error) error, args ...any) error {
	rows, err := t.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return eachRow(rows, f)
}

// eachRow calls f on every row of rows (a pgx.Rows or a *sql.Rows).
func eachRow(rows interface {
	Next() bool
	Scan(...any) error
	Err() error
}, f func(func(...any) error) error) error {
	for rows.Next() {
		if err := f(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (t sqlTx) native() any { return t.Tx }

// migrate creates the shop's own tables and its two products.
func (d *database) migrate(ctx context.Context) error {
	id := "INTEGER PRIMARY KEY AUTOINCREMENT"
	if d.pool != nil {
		id = "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"
	}
	return d.inTx(ctx, func(t tx) error {
		for _, q := range []string{
			`CREATE TABLE IF NOT EXISTS products (sku TEXT PRIMARY KEY, name TEXT NOT NULL, price_cents BIGINT NOT NULL, stock BIGINT NOT NULL CHECK (stock >= 0))`,
			`CREATE TABLE IF NOT EXISTS orders (id ` + id + `, sku TEXT NOT NULL REFERENCES products (sku), quantity BIGINT NOT NULL, total_cents BIGINT NOT NULL, region TEXT NOT NULL, email TEXT NOT NULL)`,
			`INSERT INTO products (sku, name, price_cents, stock) VALUES ('mug', 'Mug', 1200, 100), ('poster', 'Poster', 2500, 3) ON CONFLICT (sku) DO NOTHING`,
		} {
			if _, err := t.exec(ctx, q); err != nil {
				return fmt.Errorf("migrate: %w", err)
			}
		}
		return nil
	})
}
