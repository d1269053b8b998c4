package bench

import (
	"bufio"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/store"
)

// One retention pass at size (issue 48 §2, Options.PrunePass): after the
// soak's fill, the bench runs hookd's own retention pass
// (delivery.Service.Prune, its batches sized to a 10 ms budget and its
// Reclaim) with a retention that makes the history's oldest PrunePass
// expire, on a connection of its own to the run's database, and measures
// the pass's time, the rows it deleted, every batch's time (each DELETE
// statement, timed at the driver), the Reclaim's steps, and its I/O:
// /proc/self/io of this process (SQLite: the deletes run here), or on
// PostgreSQL the WAL it wrote and its backends' /proc/PID/io. A second
// pass then deletes the next PrunePass while a probe publishes single
// events at probeRate to an owner without endpoints (a write through the
// API each time), and the probe's request times during the pass are set
// beside the same probe's just before it: how long a publish waited for
// the writer the pass held.
//
// On SQLite the pass's connection is not hookd's: a publish that finds
// the file locked by a batch waits in SQLite's busy handler (sleeps of
// 1, 2, 5, 10 … ms) instead of in hookd's connection queue, so the probe
// overstates the wait a little.

// probeOwner is the probe's owner: no endpoints, so its events are
// written and fanned out to nobody, and no receipt is counted.
const probeOwner = "bench-probe"

// probeRate is the probe's publishes a second.
const probeRate = 50

// PrunePassResult is one measured retention pass.
type PrunePassResult struct {
	Label                 string
	Took                  time.Duration
	Deliveries, Events    int64
	Batches               []time.Duration // each DELETE's time (SQLite: with its commit, once it has the write lock)
	Waits                 []time.Duration // SQLite: each DELETE's wait for the write lock
	ReclaimSteps          []time.Duration // each incremental_vacuum or VACUUM
	CPU                   time.Duration   // this process's (SQLite: the pass runs here)
	BackendCPU            time.Duration   // PostgreSQL: the pass's backends' (-1: unreadable)
	ReadBytes, WriteBytes int64           // /proc/…/io of the pass's process or backends (-1: unreadable)
	WALBytes              int64           // PostgreSQL's WAL written during the pass
	// PostgreSQL's time partitions: how many the pass dropped, each
	// drop's time (its DROP statements), and the rows gone with them
	// (the deliveries counted before and after, less the row loop's).
	PartitionsDropped     int
	Drops                 []time.Duration
	DroppedRows           int64
	FileBefore, FileAfter int64 // SQLite file + WAL
	// Probe: publish request times just before the pass (Base) and
	// during it (During); only on the loaded pass.
	ProbeBase, ProbeDuring []time.Duration
}

// stmtTimes collects the pass's statement times.
type stmtTimes struct {
	mu                             sync.Mutex
	deletes, reclaim, drops, waits []time.Duration
}

// wait records a batch's wait for SQLite's write lock.
func (t *stmtTimes) wait(d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.waits = append(t.waits, d)
}

func (t *stmtTimes) add(sql string, d time.Duration) {
	s := strings.TrimSpace(sql)
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case strings.HasPrefix(s, "DELETE"):
		t.deletes = append(t.deletes, d)
	case strings.HasPrefix(s, "PRAGMA incremental_vacuum"), strings.HasPrefix(s, "VACUUM"):
		t.reclaim = append(t.reclaim, d)
	case strings.HasPrefix(s, "DROP TABLE"):
		t.drops = append(t.drops, d)
	}
}

func (t *stmtTimes) take() (deletes, reclaim, drops, waits []time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	deletes, reclaim, drops, waits = t.deletes, t.reclaim, t.drops, t.waits
	t.deletes, t.reclaim, t.drops, t.waits = nil, nil, nil, nil
	return deletes, reclaim, drops, waits
}

// layout is the delivery table's partition count (0: unpartitioned or
// SQLite) and its row count, outside the pass's timing.
func (p *passDB) layout(ctx context.Context) (parts int, rows int64, err error) {
	if p.pool == nil {
		return 0, 0, nil
	}
	ps, err := p.db.Partitions(ctx)
	if err != nil {
		return 0, 0, err
	}
	if len(ps) == 0 {
		return 0, 0, nil
	}
	err = p.pool.QueryRow(ctx, `SELECT count(*) FROM hookd_deliveries`).Scan(&rows)
	return len(ps), rows, err
}

// passDB is the pass's own connection to the run's database.
type passDB struct {
	db    *store.DB
	times *stmtTimes
	pids  []int // PostgreSQL: its backends
	pool  *pgxpool.Pool
	close func()
}

func openPassDB(ctx context.Context, db *database) (*passDB, error) {
	t := &stmtTimes{}
	if db.engine != "postgres" {
		// As hookd's own connection is opened (store.OpenSQLite), with its
		// WAL backstop (a background checkpointer keeps the WAL short).
		dsn := "file:" + (&url.URL{Path: db.url}).EscapedPath() + "?_pragma=foreign_keys(1)&_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)&_pragma=wal_autocheckpoint(16384)&_txlock=immediate"
		probe, err := sql.Open(store.CachingSQLiteDriver, dsn)
		if err != nil {
			return nil, err
		}
		drv := probe.Driver()
		_ = probe.Close()
		sqlDB := sql.OpenDB(timedConnector{drv: drv, dsn: dsn, t: t})
		sqlDB.SetMaxOpenConns(1)
		return &passDB{db: store.FromSQL(sqlDB, nil), times: t, close: func() { _ = sqlDB.Close() }}, nil
	}
	cfg, err := pgxpool.ParseConfig(pgURL(db.url))
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = db.schema
	cfg.ConnConfig.RuntimeParams["application_name"] = "hookd_prune_pass"
	cfg.ConnConfig.Tracer = pgTimer{t}
	cfg.MinConns, cfg.MaxConns = 2, 2
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	p := &passDB{db: store.FromPool(pool, db.schema, nil), times: t, pool: pool, close: pool.Close}
	// Open both connections now, and learn their backends.
	var held []*pgxpool.Conn
	for range 2 {
		c, err := pool.Acquire(ctx)
		if err != nil {
			pool.Close()
			return nil, err
		}
		held = append(held, c)
		var pid int
		if err := c.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
			pool.Close()
			return nil, err
		}
		p.pids = append(p.pids, pid)
	}
	for _, c := range held {
		c.Release()
	}
	return p, nil
}

// timedConnector opens SQLite connections whose Exec calls are timed.
type timedConnector struct {
	drv driver.Driver
	dsn string
	t   *stmtTimes
}

func (c timedConnector) Connect(context.Context) (driver.Conn, error) {
	cn, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return timedConn{Conn: cn, t: c.t}, nil
}

func (c timedConnector) Driver() driver.Driver { return c.drv }

type timedConn struct {
	driver.Conn
	t *stmtTimes
}

// ExecContext times q. A DELETE (the pass's batches, each its own
// transaction) runs between a BEGIN IMMEDIATE and a COMMIT of its own, so
// that the wait for SQLite's write lock (another connection's write:
// River's, the probe's) is timed apart from what the batch holds it for:
// the same transaction as the DELETE alone, with the lock taken first.
func (c timedConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	ex, ok := c.Conn.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	if !strings.HasPrefix(strings.TrimSpace(q), "DELETE") {
		start := time.Now()
		r, err := ex.ExecContext(ctx, q, args)
		c.t.add(q, time.Since(start))
		return r, err
	}
	start := time.Now()
	if _, err := ex.ExecContext(ctx, "BEGIN IMMEDIATE", nil); err != nil {
		return nil, err
	}
	locked := time.Now()
	r, err := ex.ExecContext(ctx, q, args)
	if err == nil {
		_, err = ex.ExecContext(ctx, "COMMIT", nil)
	}
	if err != nil {
		_, _ = ex.ExecContext(ctx, "ROLLBACK", nil)
		return nil, err
	}
	c.t.add(q, time.Since(locked))
	c.t.wait(locked.Sub(start))
	return r, nil
}

func (c timedConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	qu, ok := c.Conn.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	return qu.QueryContext(ctx, q, args)
}

func (c timedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if b, ok := c.Conn.(driver.ConnBeginTx); ok {
		return b.BeginTx(ctx, opts)
	}
	return c.Conn.Begin() //nolint:staticcheck // the fallback database/sql itself uses
}

// pgTimer times the pass's statements on PostgreSQL.
type pgTimer struct{ t *stmtTimes }

type pgStartKey struct{}

type pgStart struct {
	sql string
	at  time.Time
}

func (p pgTimer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, pgStartKey{}, pgStart{sql: d.SQL, at: time.Now()})
}

func (p pgTimer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	if s, ok := ctx.Value(pgStartKey{}).(pgStart); ok {
		p.t.add(s.sql, time.Since(s.at))
	}
}

// procIO reads read_bytes and write_bytes of /proc/PID/io (pid 0: self);
// ok is false where it cannot be read.
func procIO(pid int) (read, write int64, ok bool) {
	path := "/proc/self/io"
	if pid != 0 {
		path = "/proc/" + strconv.Itoa(pid) + "/io"
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, false
	}
	defer f.Close() //nolint:errcheck // opened read-only
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ": ")
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch k {
		case "read_bytes":
			read = n
		case "write_bytes":
			write = n
		}
	}
	return read, write, true
}

// passIO is the pass's I/O counters: this process's, or the pass's
// PostgreSQL backends' summed.
func (p *passDB) io() (read, write int64) {
	if p.pool == nil {
		r, w, ok := procIO(0)
		if !ok {
			return -1, -1
		}
		return r, w
	}
	for _, pid := range p.pids {
		r, w, ok := procIO(pid)
		if !ok {
			return -1, -1
		}
		read, write = read+r, write+w
	}
	return read, write
}

// backendCPU is the CPU the pass's PostgreSQL backends have used (0 on
// SQLite, -1 when one is unreadable).
func (p *passDB) backendCPU() time.Duration {
	var sum time.Duration
	for _, pid := range p.pids {
		c, ok := procCPU(pid)
		if !ok {
			return -1
		}
		sum += c
	}
	return sum
}

func (p *passDB) walLSN(ctx context.Context) int64 {
	if p.pool == nil {
		return 0
	}
	var n int64
	if err := p.pool.QueryRow(ctx, "SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").Scan(&n); err != nil {
		return -1
	}
	return n
}

// prunePasses runs the two measured passes (above) after the fill.
func prunePasses(ctx context.Context, opts Options, db *database, p *plan, api *client, res *Result, step func(string, ...any)) error {
	pd, err := openPassDB(ctx, db)
	if err != nil {
		return fmt.Errorf("prune pass: open: %w", err)
	}
	defer pd.close()
	in := map[string]string{"exposure": "webhook", "description": "bench probe"}
	if err := api.call(ctx, http.MethodPut, "/api/admin/event_types/"+probeType, p.probeKey, in, http.StatusOK, nil); err != nil {
		return fmt.Errorf("prune pass: probe's event type: %w", err)
	}
	step("prune pass: deleting the history's oldest %v, quiet", opts.PrunePass)
	quiet, err := onePass(ctx, opts, db, pd, soakSpan-opts.PrunePass)
	if err != nil {
		return err
	}
	quiet.Label = "quiet"
	res.PrunePasses = append(res.PrunePasses, quiet)

	// The probe alone first, as long as the quiet pass took (at least
	// 10 s), then the next pass beside it.
	base := max(10*time.Second, quiet.Took)
	step("prune pass: the probe alone for %v, then the next %v's pass beside it", base.Round(time.Second), opts.PrunePass)
	bctx, cancel := context.WithTimeout(ctx, base)
	baseTimes, err := probePublish(bctx, api, p)
	cancel()
	if err != nil {
		return err
	}
	pctx, stop := context.WithCancel(ctx)
	var during []time.Duration
	var perr error
	done := make(chan struct{})
	go func() { during, perr = probePublish(pctx, api, p); close(done) }()
	loaded, err := onePass(ctx, opts, db, pd, soakSpan-2*opts.PrunePass)
	stop()
	<-done
	if err = errors.Join(err, perr); err != nil {
		return err
	}
	loaded.Label = "beside the probe"
	loaded.ProbeBase, loaded.ProbeDuring = baseTimes, during
	res.PrunePasses = append(res.PrunePasses, loaded)
	return nil
}

// probeType is the probe owner's event type.
const probeType = "bench.probe"

// probePublish publishes single events of the probe owner at probeRate
// until ctx ends, and returns the requests' times.
func probePublish(ctx context.Context, api *client, p *plan) ([]time.Duration, error) {
	post := api.publisher(false)
	times := &requestTimes{}
	tick := time.NewTicker(time.Second / probeRate)
	defer tick.Stop()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for seq := 0; ; seq++ {
		select {
		case <-ctx.Done():
			wg.Wait()
			times.mu.Lock()
			defer times.mu.Unlock()
			return times.all, firstErr
		case <-tick.C:
		}
		wg.Go(func() {
			sent := time.Now()
			body := eventBody(nil, probeType, seq, sent.UnixNano())
			// The probe's own context: a request cut off as the probe
			// ends is not an error.
			if err := post(context.WithoutCancel(ctx), "/api/v1/events", p.probeKey, body, http.StatusAccepted); err != nil {
				mu.Lock()
				firstErr = cmpOr(firstErr, err)
				mu.Unlock()
				return
			}
			times.add(time.Since(sent))
		})
	}
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// onePass runs delivery.Service.Prune with retention on the pass's
// connection and measures it.
func onePass(ctx context.Context, opts Options, db *database, pd *passDB, retention time.Duration) (PrunePassResult, error) {
	svc := delivery.New(delivery.Config{DB: pd.db, Retention: retention, Log: opts.Log})
	var r PrunePassResult
	r.FileBefore = sqliteFileBytes(db)
	parts0, rows0, err := pd.layout(ctx)
	if err != nil {
		return r, fmt.Errorf("prune pass: %w", err)
	}
	pd.times.take()
	rd0, wr0 := pd.io()
	wal0 := pd.walLSN(ctx)
	cpu0, _ := selfCPU()
	bcpu0 := pd.backendCPU()
	start := time.Now()
	r.Deliveries, r.Events, err = svc.Prune(ctx)
	r.Took = time.Since(start)
	if err != nil {
		return r, fmt.Errorf("prune pass: %w", err)
	}
	cpu1, _ := selfCPU()
	r.CPU = cpu1 - cpu0
	if r.BackendCPU = -1; bcpu0 >= 0 {
		if bcpu1 := pd.backendCPU(); bcpu1 >= 0 {
			r.BackendCPU = bcpu1 - bcpu0
		}
	}
	rd1, wr1 := pd.io()
	r.ReadBytes, r.WriteBytes = -1, -1
	if rd0 >= 0 && rd1 >= 0 {
		r.ReadBytes, r.WriteBytes = rd1-rd0, wr1-wr0
	}
	if wal0 > 0 {
		r.WALBytes = pd.walLSN(ctx) - wal0
	}
	r.Batches, r.ReclaimSteps, r.Drops, r.Waits = pd.times.take()
	r.FileAfter = sqliteFileBytes(db)
	parts1, rows1, err := pd.layout(ctx)
	if err != nil {
		return r, fmt.Errorf("prune pass: %w", err)
	}
	if parts0 > parts1 {
		r.PartitionsDropped, r.DroppedRows = parts0-parts1, max(0, rows0-rows1-r.Deliveries)
	}
	return r, nil
}

// write prints the pass.
func (r PrunePassResult) write(line func(name, format string, args ...any)) {
	name := "prune pass (" + r.Label + ")"
	line(name, "%d deliveries and %d events deleted in %v; this process's CPU %v", r.Deliveries, r.Events, r.Took.Round(time.Millisecond), r.CPU.Round(time.Millisecond))
	if r.BackendCPU > 0 {
		line(name+" backends", "CPU %v (the pass's PostgreSQL backends)", r.BackendCPU.Round(time.Millisecond))
	}
	b := percentiles(r.Batches)
	line(name+" batches", "%d: p50 %v, p99 %v, max %v", len(r.Batches), b.P50.Round(10*time.Microsecond), b.P99.Round(10*time.Microsecond), b.Max.Round(10*time.Microsecond))
	if slow := slowest(r.Batches, 5); slow != "" {
		line(name+" slowest", "batches (n-th of the pass: time): %s", slow)
	}
	if len(r.Waits) > 0 {
		w := percentiles(r.Waits)
		line(name+" lock waits", "before each batch, for SQLite's write lock: p50 %v, p99 %v, max %v", w.P50.Round(10*time.Microsecond), w.P99.Round(10*time.Microsecond), w.Max.Round(10*time.Microsecond))
	}
	if len(r.ReclaimSteps) > 0 {
		c := percentiles(r.ReclaimSteps)
		line(name+" reclaim", "%d steps: p50 %v, p99 %v, max %v", len(r.ReclaimSteps), c.P50.Round(10*time.Microsecond), c.P99.Round(10*time.Microsecond), c.Max.Round(10*time.Microsecond))
	}
	if r.ReadBytes >= 0 {
		line(name+" I/O", "read %s, written %s", sizeOf(r.ReadBytes), sizeOf(r.WriteBytes))
	}
	if r.WALBytes > 0 {
		line(name+" WAL", "%s", sizeOf(r.WALBytes))
	}
	if r.PartitionsDropped > 0 {
		d := percentiles(r.Drops)
		line(name+" partitions", "%d dropped with %d deliveries; %d DROP statements: max %v", r.PartitionsDropped, r.DroppedRows, len(r.Drops), d.Max.Round(10*time.Microsecond))
	}
	if r.FileBefore > 0 {
		line(name+" file", "SQLite file + WAL %s before, %s after", sizeOf(r.FileBefore), sizeOf(r.FileAfter))
	}
	if len(r.ProbeDuring) > 0 {
		a, d := percentiles(r.ProbeBase), percentiles(r.ProbeDuring)
		line(name+" probe", "publish p50/p99/max %v/%v/%v before the pass (%d), %v/%v/%v during it (%d)",
			a.P50.Round(10*time.Microsecond), a.P99.Round(10*time.Microsecond), a.Max.Round(10*time.Microsecond), len(r.ProbeBase),
			d.P50.Round(10*time.Microsecond), d.P99.Round(10*time.Microsecond), d.Max.Round(10*time.Microsecond), len(r.ProbeDuring))
	}
}

// slowest names the k longest of ds by their place in the pass ("412:
// 61.2ms"), longest first: where in a pass the slow batches fall.
func slowest(ds []time.Duration, k int) string {
	idx := make([]int, len(ds))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return ds[idx[a]] > ds[idx[b]] })
	var parts []string
	for _, i := range idx[:min(k, len(idx))] {
		parts = append(parts, fmt.Sprintf("%d: %v", i+1, ds[i].Round(10*time.Microsecond)))
	}
	return strings.Join(parts, ", ")
}
