package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"sync"

	"modernc.org/sqlite"
)

// CachingSQLiteDriver is the name of modernc.org/sqlite's driver wrapped so
// that each connection compiles a statement text once and reuses it: SQLite
// parses every statement it is given, and River's (large CTE statements,
// run by its SQLite driver as plain text on every fetch, completion and
// insert) were over a third of hookd's CPU on SQLite. Open hookd's database
// with it (Open does) and River's statements and hookd's share one cache.
const CachingSQLiteDriver = "sqlite-hookd"

func init() { sql.Register(CachingSQLiteDriver, cachingDriver{}) }

type cachingDriver struct{}

func (cachingDriver) Open(name string) (driver.Conn, error) {
	c, err := (&sqlite.Driver{}).Open(name)
	if err != nil {
		return nil, err
	}
	return &cachingConn{Conn: c, stmts: map[string]*cachedStmt{}}, nil
}

// maxConnStmts bounds one connection's cache (texts built per batch size
// would otherwise grow it without end); past it texts run uncached.
const maxConnStmts = 512

// cachingConn runs Exec and Query through statements prepared once per text.
// database/sql uses a connection from one goroutine at a time; a statement
// whose rows are still open is not reused (a second use would reset it):
// that text runs on a fresh statement instead.
type cachingConn struct {
	driver.Conn
	mu    sync.Mutex
	stmts map[string]*cachedStmt
}

type cachedStmt struct {
	st   driver.Stmt
	busy bool // rows from it are open
}

var _ interface {
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
} = (*cachingConn)(nil)

// stmt returns the cached statement for q (marked busy when forQuery) or,
// when it is in use or the cache is full, a fresh one the caller closes.
func (c *cachingConn) stmt(ctx context.Context, q string, forQuery bool) (s *cachedStmt, cached bool, err error) {
	c.mu.Lock()
	s, ok := c.stmts[q]
	if ok && !s.busy {
		s.busy = forQuery
		c.mu.Unlock()
		return s, true, nil
	}
	full := len(c.stmts) >= maxConnStmts
	c.mu.Unlock()
	st, err := c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, q)
	if err != nil {
		return nil, false, err
	}
	s = &cachedStmt{st: st, busy: forQuery}
	if ok || full {
		return s, false, nil
	}
	c.mu.Lock()
	c.stmts[q] = s
	c.mu.Unlock()
	return s, true, nil
}

func (c *cachingConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	s, cached, err := c.stmt(ctx, q, false)
	if err != nil {
		return nil, err
	}
	if !cached {
		// Finalizing repeats the statement's last error, which ExecContext
		// returns already.
		defer func() { _ = s.st.Close() }()
	}
	return s.st.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (c *cachingConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	s, cached, err := c.stmt(ctx, q, true)
	if err != nil {
		return nil, err
	}
	rows, err := s.st.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		c.release(s, cached)
		return nil, err
	}
	return &cachedRows{Rows: rows, release: func() { c.release(s, cached) }}, nil
}

func (c *cachingConn) release(s *cachedStmt, cached bool) {
	if !cached {
		_ = s.st.Close() // finalizing repeats the rows' last error, which they returned already
		return
	}
	c.mu.Lock()
	s.busy = false
	c.mu.Unlock()
}

type cachedRows struct {
	driver.Rows
	release func()
	once    sync.Once
}

func (r *cachedRows) Close() error {
	err := r.Rows.Close()
	r.once.Do(r.release)
	return err
}

func (c *cachingConn) Close() error {
	c.mu.Lock()
	var errs []error
	for q, s := range c.stmts {
		errs = append(errs, s.st.Close())
		delete(c.stmts, q)
	}
	c.mu.Unlock()
	return errors.Join(append(errs, c.Conn.Close())...)
}

func (c *cachingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c *cachingConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	return c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, q)
}

func (c *cachingConn) Ping(ctx context.Context) error { return c.Conn.(driver.Pinger).Ping(ctx) }

func (c *cachingConn) ResetSession(ctx context.Context) error {
	return c.Conn.(driver.SessionResetter).ResetSession(ctx)
}

func (c *cachingConn) IsValid() bool { return c.Conn.(driver.Validator).IsValid() }
