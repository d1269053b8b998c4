package bench

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oklog/ulid/v2"

	"github.com/hookd/hookd/internal/store"
)

// The soak (issue 48, docs/performance.md "At volume"): before the
// measured run, the database is filled with Options.Soak finished
// deliveries of the plan's endpoints (and their events), spread over the
// last soakSpan as if hookd had delivered them, so the run and the page
// probes (pages.go) see a database at volume. The rows are written in
// bulk (COPY on PostgreSQL, large transactions of prepared inserts on
// SQLite), not through the API: what is measured is hookd beside the
// history, not the filling. Each filled event goes to every endpoint of
// its owner, as a publish would; 1 in 50 events failed at every endpoint
// (the log's filtered page has rows to find), the rest were delivered.

// soakSpan is how far back the history reaches: inside the 30-day
// retention, so the pruner deletes none of it during the run.
const soakSpan = 25 * 24 * time.Hour

// soakFailedEvery makes one filled delivery in this many failed.
const soakFailedEvery = 50

// filledRow is one filled delivery with its event, in the order written.
type filledRow struct {
	eventID, deliveryID, ownerID, endpointID, eventType, state string
	at                                                         int64 // unix µs
}

// history generates the filled rows: nEvents events, event i of owner
// i%owners at an even step through the span ending at now, each with a
// delivery to every endpoint of its owner. ids are ULIDs of their row's
// time (the log pages by id), from an entropy of their own: event.NewID
// never goes back in time, and hookd's own ids are already at now.
type history struct {
	p         *plan
	endpoints []string // endpoint j's id
	nEvents   int
	from      time.Time
	step      time.Duration
	entropy   *ulid.MonotonicEntropy
	// middle is, once written, the id of endpoint 0's delivery at the
	// middle of the history (the page probes' deep page and delivery).
	middle string
}

func newHistory(p *plan, endpoints []string, deliveries int, now time.Time) *history {
	perEvent := max(1, p.endpoints/p.owners)
	n := max(1, deliveries/perEvent)
	return &history{p: p, endpoints: endpoints, nEvents: n, from: now.Add(-soakSpan),
		step: soakSpan / time.Duration(n), entropy: ulid.Monotonic(rand.Reader, 0)}
}

func (h *history) id(prefix string, at time.Time) string {
	return prefix + ulid.MustNew(ulid.Timestamp(at), h.entropy).String()
}

// each calls fn for every event's rows in time order; fn gets the event's
// rows (one per endpoint of its owner) and may stop the walk with an
// error. The ids are new on every walk: walk once.
func (h *history) each(fn func(rows []filledRow) error) error {
	var rows []filledRow
	for i := range h.nEvents {
		at := h.from.Add(time.Duration(i) * h.step)
		k := i % h.p.owners
		ev := h.id("evt_", at)
		rows = rows[:0]
		// One in soakFailedEvery of each owner's events failed at every
		// endpoint, so every endpoint's log has failures to filter.
		state := "delivered"
		if (i/h.p.owners)%soakFailedEvery == soakFailedEvery-1 {
			state = "failed"
		}
		for j := k; j < h.p.endpoints; j += h.p.owners {
			rows = append(rows, filledRow{eventID: ev, deliveryID: h.id("dlv_", at), ownerID: h.p.ownerID(k),
				endpointID: h.endpoints[j], eventType: h.p.eventType(k), state: state, at: at.UnixMicro()})
		}
		if k == 0 && h.middle == "" && i >= h.nEvents/2 {
			h.middle = rows[0].deliveryID // endpoint 0's: owner 0's first
		}
		if err := fn(rows); err != nil {
			return err
		}
	}
	return nil
}

// fill writes the history into db and returns how many deliveries it
// wrote.
func fill(ctx context.Context, db *database, h *history, progress func(format string, args ...any)) (int, error) {
	if db.engine == "postgres" {
		return fillPostgres(ctx, db, h, progress)
	}
	return fillSQLite(ctx, db, h, progress)
}

var (
	eventCols    = []string{"id", "owner_id", "type", "subject", "occurred_at", "data", "created_at"}
	deliveryCols = []string{"id", "owner_id", "endpoint_id", "event_id", "event_type", "job_id", "state", "attempts", "last_status", "last_error", "created_at", "updated_at", "finished_at"}
)

// deliveryValues is a filled delivery's row: one attempt, answered 200
// (or 500 for a failed one, its attempts spent), finished a second after
// it was made.
func deliveryValues(r filledRow) []any {
	attempts, status, errText := 1, 200, ""
	if r.state == "failed" {
		attempts, status, errText = 18, 500, "HTTP 500"
	}
	done := r.at + int64(time.Second/time.Microsecond)
	return []any{r.deliveryID, r.ownerID, r.endpointID, r.eventID, r.eventType, int64(0), r.state, attempts, status, errText, r.at, done, done}
}

func eventValues(r filledRow, seq int) []any {
	return []any{r.eventID, r.ownerID, r.eventType, fmt.Sprintf("soak/%d", seq), r.at, []byte(fmt.Sprintf(`{"soak":%d}`, seq)), r.at}
}

// fillPostgres streams the rows through two COPYs, a million deliveries
// a transaction, then analyzes the tables as autovacuum would.
func fillPostgres(ctx context.Context, db *database, h *history, progress func(string, ...any)) (int, error) {
	conn, err := schemaConn(ctx, db)
	if err != nil {
		return 0, err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	var events, deliveries [][]any
	written, seq := 0, 0
	flush := func() error {
		if len(deliveries) == 0 {
			return nil
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"hookd_events"}, eventCols, pgx.CopyFromRows(events)); err != nil {
				return fmt.Errorf("copy events: %w", err)
			}
			_, err := tx.CopyFrom(ctx, pgx.Identifier{"hookd_deliveries"}, deliveryCols, pgx.CopyFromRows(deliveries))
			return err
		})
		if err != nil {
			return err
		}
		written += len(deliveries)
		progress("filled %d deliveries", written)
		events, deliveries = events[:0], deliveries[:0]
		return nil
	}
	err = h.each(func(rows []filledRow) error {
		events = append(events, eventValues(rows[0], seq))
		seq++
		for _, r := range rows {
			deliveries = append(deliveries, deliveryValues(r))
		}
		if len(deliveries) >= 1_000_000 {
			return flush()
		}
		return nil
	})
	if err = errors.Join(err, flush()); err != nil {
		return written, err
	}
	// The state 25 days of retention passes leave: each ended day's
	// partitions vacuumed and analyzed once (store.VacuumClosedPartitions,
	// hookd's pass), today's not; statistics of the whole, as autovacuum
	// would have them. Then a checkpoint, so the fill's dirty pages
	// (gigabytes at 20 M) are written before the measured run rather than
	// during it, by a checkpoint the run's own WAL sets off (two 20 M runs
	// without it delivered at 2,307/s and 4,671/s).
	if err := vacuumEnded(ctx, db); err != nil {
		return written, err
	}
	_, err = conn.Exec(ctx, "ANALYZE hookd_events; ANALYZE hookd_deliveries; CHECKPOINT")
	return written, err
}

// vacuumEnded runs hookd's vacuum of the ended partitions over the whole
// fill (a retention pass does one an hour).
func vacuumEnded(ctx context.Context, db *database) error {
	cfg, err := pgxpool.ParseConfig(pgURL(db.url))
	if err != nil {
		return err
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = db.schema
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	_, err = store.FromPool(pool, db.schema, nil).VacuumClosedPartitions(ctx, time.Now(), 0, 1000)
	return err
}

// fillSQLite inserts the rows through prepared statements, 50,000
// deliveries a transaction, beside the running hookd (WAL: its reads go
// on; its writes wait out one transaction at most). The file is left as
// hookd's own would be: without planner statistics.
func fillSQLite(ctx context.Context, db *database, h *history, progress func(string, ...any)) (int, error) {
	conn, err := sql.Open(store.CachingSQLiteDriver, "file:"+(&url.URL{Path: db.url}).EscapedPath()+"?_pragma=busy_timeout(30000)&_pragma=synchronous(NORMAL)&_txlock=immediate")
	if err != nil {
		return 0, err
	}
	defer func() { _ = conn.Close() }()
	conn.SetMaxOpenConns(1)
	insert := func(table string, cols []string) string {
		return "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES (?" + strings.Repeat(", ?", len(cols)-1) + ")"
	}
	written, seq := 0, 0
	var tx *sql.Tx
	var evStmt, dlStmt *sql.Stmt
	begin := func() error {
		var err error
		if tx, err = conn.BeginTx(ctx, nil); err != nil {
			return err
		}
		if evStmt, err = tx.PrepareContext(ctx, insert("hookd_events", eventCols)); err != nil {
			return err
		}
		dlStmt, err = tx.PrepareContext(ctx, insert("hookd_deliveries", deliveryCols))
		return err
	}
	if err := begin(); err != nil {
		return 0, err
	}
	inTx := 0
	err = h.each(func(rows []filledRow) error {
		if _, err := evStmt.ExecContext(ctx, eventValues(rows[0], seq)...); err != nil {
			return fmt.Errorf("insert event: %w", err)
		}
		seq++
		for _, r := range rows {
			if _, err := dlStmt.ExecContext(ctx, deliveryValues(r)...); err != nil {
				return fmt.Errorf("insert delivery: %w", err)
			}
		}
		written += len(rows)
		if inTx += len(rows); inTx < 50_000 {
			return nil
		}
		inTx = 0
		if err := tx.Commit(); err != nil {
			return err
		}
		progress("filled %d deliveries", written)
		return begin()
	})
	if err != nil {
		_ = tx.Rollback()
		return written, err
	}
	// No ANALYZE: hookd never runs it on SQLite, and statistics taken
	// now, with no delivery pending, record the pending deliveries'
	// partial index as empty ("0 0 0"), after which SQLite's planner
	// reads a drain's fresh deliveries through the endpoint's whole
	// history instead (at 5 million rows, 250,000 rows an endpoint: a few
	// deliveries a second; docs/performance.md, "At volume").
	return written, tx.Commit()
}

// soakBytesPerDelivery is what one filled delivery with its share of an
// event takes in tables and indexes (measured: docs/performance.md),
// with room to spare, for the disk check before a fill.
const soakBytesPerDelivery = 1200

// soak fills the history, then measures the tables' size and the pages.
func soak(ctx context.Context, opts Options, db *database, p *plan, base string, res *Result, step func(string, ...any)) error {
	need := int64(opts.Soak) * soakBytesPerDelivery
	dir, err := dataDir(ctx, db)
	if err != nil {
		return err
	}
	if free, err := freeBytes(dir); err == nil && need > free {
		return fmt.Errorf("%d deliveries need about %s on %s, which has %s free", opts.Soak, sizeOf(need), dir, sizeOf(free))
	}
	step("soak: filling %d deliveries (about %s on %s)", opts.Soak, sizeOf(need), dir)
	h := newHistory(p, p.endpointIDs, opts.Soak, time.Now())
	began := time.Now()
	n, err := fill(ctx, db, h, step)
	if err != nil {
		return err
	}
	res.Filled, res.FillDuration = n, time.Since(began)
	if res.TableBytes, err = tableBytes(ctx, db); err != nil {
		return err
	}
	step("soak: %d deliveries in %v; timing the pages", n, res.FillDuration.Round(time.Second))
	pr := probe{base: base, key: p.keys[0], endpoint: p.endpointIDs[0], middle: h.middle}
	if res.Pages, err = probePages(ctx, pr); err != nil || db.engine != "postgres" {
		return err
	}
	step("soak: vacuuming the tables, then timing the pages again")
	began = time.Now()
	if err := vacuumAll(ctx, db); err != nil {
		return err
	}
	res.Vacuumed = time.Since(began)
	res.PagesVacuumed, err = probePages(ctx, pr)
	return err
}

// vacuumAll vacuums and analyzes the event and delivery tables: on
// partitioned tables only today's partition has work left (fillPostgres
// vacuumed the ended ones).
func vacuumAll(ctx context.Context, db *database) error {
	conn, err := schemaConn(ctx, db)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	_, err = conn.Exec(ctx, "VACUUM (ANALYZE) hookd_events, hookd_deliveries") // alone: not in a transaction
	return err
}

// schemaConn is a connection to the run's PostgreSQL database with its
// schema first on the search path.
func schemaConn(ctx context.Context, db *database) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(pgURL(db.url))
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["search_path"] = db.schema
	return pgx.ConnectConfig(ctx, cfg)
}

// dataDir is where the database keeps its files: the SQLite file's
// folder, or PostgreSQL's data directory (its disk is this machine's
// only when the server runs here, which the bench's CPU figures assume
// too).
func dataDir(ctx context.Context, db *database) (string, error) {
	if db.engine != "postgres" {
		return filepath.Dir(db.url), nil
	}
	conn, err := pgx.Connect(ctx, pgURL(db.url))
	if err != nil {
		return "", err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	var dir string
	if err := conn.QueryRow(ctx, "SHOW data_directory").Scan(&dir); err != nil {
		return "", fmt.Errorf("data directory (needs a superuser, or pg_read_all_settings): %w", err)
	}
	return dir, nil
}

func freeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * st.Bsize, nil
}

// tableBytes is the size of hookd's event and delivery tables with their
// indexes, on either engine.
func tableBytes(ctx context.Context, db *database) (int64, error) {
	if db.engine != "postgres" {
		conn, err := sql.Open(store.CachingSQLiteDriver, "file:"+(&url.URL{Path: db.url}).EscapedPath()+"?mode=ro&_pragma=busy_timeout(10000)")
		if err != nil {
			return 0, err
		}
		defer func() { _ = conn.Close() }()
		// dbstat: the pages of the two tables and their indexes (the
		// automatic ones of their keys included), as PostgreSQL's
		// pg_total_relation_size counts them.
		var n int64
		err = conn.QueryRowContext(ctx, `SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name LIKE 'hookd_events%' OR name LIKE 'hookd_deliveries%'
			OR name LIKE 'sqlite_autoindex_hookd_events%' OR name LIKE 'sqlite_autoindex_hookd_deliveries%'`).Scan(&n)
		return n, err
	}
	conn, err := pgx.Connect(ctx, pgURL(db.url))
	if err != nil {
		return 0, err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	var n int64
	// Every partition's (pg_partition_tree: a partitioned table and its
	// partitions, none for an unpartitioned table, so the table itself is
	// added; a partitioned parent has no storage of its own).
	q := `SELECT coalesce(sum(pg_total_relation_size(r)), 0) FROM (
		SELECT relid AS r FROM pg_partition_tree($1::regclass) UNION SELECT $1::regclass
		UNION SELECT relid FROM pg_partition_tree($2::regclass) UNION SELECT $2::regclass) t`
	s := pgx.Identifier{db.schema}.Sanitize()
	err = conn.QueryRow(ctx, q, s+".hookd_events", s+".hookd_deliveries").Scan(&n)
	return n, err
}
