package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// TestCachingSQLiteDriver: a text is compiled once per connection and
// reused, in and out of transactions; a text whose rows are still open runs
// on a fresh statement, so nested use of one text reads both results whole.
func TestCachingSQLiteDriver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sql.Open(CachingSQLiteDriver, "file:"+filepath.Join(t.TempDir(), "c.db")+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (n INTEGER)`); err != nil {
		t.Fatal(err)
	}
	const insert, sel = `INSERT INTO t (n) VALUES ($1)`, `SELECT n FROM t ORDER BY n`
	for i := range 3 {
		if _, err := db.ExecContext(ctx, insert, i); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, insert, 3); err != nil {
		t.Fatal(err)
	}
	outer, err := tx.QueryContext(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for outer.Next() {
		var n int
		if err := outer.Scan(&n); err != nil {
			t.Fatal(err)
		}
		// The same text while its rows are open: a fresh statement.
		var count int
		inner, err := tx.QueryContext(ctx, sel)
		if err != nil {
			t.Fatal(err)
		}
		for inner.Next() {
			count++
		}
		inner.Close()
		if count != 4 {
			t.Fatalf("nested query read %d rows, want 4", count)
		}
		got = append(got, n)
	}
	outer.Close()
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[3] != 3 {
		t.Fatalf("outer query read %v, want 0..3", got)
	}

	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		c := dc.(*cachingConn)
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, q := range []string{insert, sel} {
			if s, ok := c.stmts[q]; !ok || s.busy {
				t.Errorf("%q: cached %v, busy %v; want cached and idle", q, ok, ok && s.busy)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
