package store

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/oklog/ulid/v2"
)

// Time partitions (PostgreSQL; issue 48). hookd_events and hookd_deliveries
// are partitioned by range of the event's id: an id is "evt_" and a ULID,
// whose first ten characters are its millisecond, so ids sort by time
// and a range of ids is a range of time. Events are partitioned by id,
// deliveries by event_id: an event and its deliveries live in partitions
// of the same range, so a delivery's lookup by (endpoint, event), the
// deliver job's, prunes to one partition, and retention drops an
// interval's events and deliveries together.
//
// Each table has:
//   - one partition per interval (DefaultPartitionInterval, a day),
//     created ahead of time by every migrate and every retention pass
//     (EnsurePartitions), named <table>_p<start> (p20261205, or
//     p20261205t1200 when an interval starts within a day);
//   - hookd_<table>_legacy, on a database that had rows before it was
//     partitioned: the old table itself, attached for every id below the
//     cut (partitionTables), dropped as a whole when the cut ages out;
//   - hookd_<table>_default, for an id no other partition takes (a clock
//     far off, or a test's): never dropped, pruned row by row like the
//     legacy, and empty in the ordinary course.
//
// Retention drops an interval's two partitions once the interval is older
// than the window and none of its deliveries is pending or finished
// within the window (DropExpiredPartitions). The rows-at-a-time prune
// (PruneDeliveries, PruneEvents) runs after it, for the legacy, the
// default and an interval kept, and leaves alone the interval that holds
// the cutoff (PartitionPass.Spare): the reads hide its expired rows
// (retention.go) until its drop.
//
// SQLite is not partitioned: every function here is a no-op there.

// DefaultPartitionInterval is the span of one partition.
const DefaultPartitionInterval = 24 * time.Hour

// partitionsAhead is how many intervals after the current one exist
// before they are needed: a process that stops running retention (every
// worker down) leaves publishes that many intervals before a new event
// goes to the default partition.
const partitionsAhead = 3

// partitionLockTimeout bounds how long a partition's create or drop waits
// for the parent tables' lock (PostgreSQL takes ACCESS EXCLUSIVE on the
// parent for both, and queues every later query behind the wait). It is
// under deadlock_timeout's default (1 s), so a transaction that holds one
// table and wants the other fails its wait, not the application's.
const partitionLockTimeout = "500ms"

// partitionedTables are the tables partitioned, with their partition key.
var partitionedTables = []struct{ name, key string }{
	{"hookd_events", "id"},
	{"hookd_deliveries", "event_id"},
}

// idBound is the lowest event id of time t's millisecond: the bound of a
// partition starting at t.
func idBound(t time.Time) string {
	var u ulid.ULID
	if err := u.SetTime(ulid.Timestamp(t)); err != nil {
		panic(err) // a time after the year 10889
	}
	return "evt_" + u.String()
}

// boundTime is the time idBound made b from.
func boundTime(b string) (time.Time, bool) {
	u, err := ulid.ParseStrict(strings.TrimPrefix(b, "evt_"))
	if err != nil || !strings.HasPrefix(b, "evt_") {
		return time.Time{}, false
	}
	return ulid.Time(u.Time()).UTC(), true
}

// intervalStart is the start of the interval (aligned on the Unix epoch,
// so a day starts at midnight UTC) that holds t.
func intervalStart(t time.Time, interval time.Duration) time.Time {
	return t.Truncate(interval).UTC()
}

// partitionSuffix names the partition starting at t.
func partitionSuffix(t time.Time) string {
	if t.Equal(t.Truncate(24 * time.Hour)) {
		return "p" + t.Format("20060102")
	}
	return "p" + t.Format("20060102t1504")
}

// Partition is one partition of hookd_deliveries (and its twin of
// hookd_events): From and To bound its event ids' times (zero From: the
// legacy's, every id below To; both zero: the default).
type Partition struct {
	Name     string // the deliveries' partition
	From, To time.Time
	Legacy   bool
	Default  bool
}

// boundExpr reads pg_get_expr(relpartbound): FOR VALUES FROM ('evt_…') TO
// ('evt_…'), FROM (MINVALUE) TO (…), or DEFAULT.
var boundExpr = regexp.MustCompile(`^FOR VALUES FROM \((MINVALUE|'([^']*)')\) TO \((MAXVALUE|'([^']*)')\)$`)

// Partitions lists hookd_deliveries' partitions in order of their range
// (the default last); none on SQLite or an unpartitioned table.
func (db *DB) Partitions(ctx context.Context) ([]Partition, error) {
	if db.Backend != Postgres {
		return nil, nil
	}
	return listPartitions(ctx, db.base, "hookd_deliveries")
}

func listPartitions(ctx context.Context, q querier, table string) ([]Partition, error) {
	type part struct{ name, bound string }
	parts, err := collect(ctx, q, func(r row) (part, error) {
		var p part
		return p, r.Scan(&p.name, &p.bound)
	}, `SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = to_regclass($1)`, table)
	if err != nil {
		return nil, fmt.Errorf("list partitions of %s: %w", table, err)
	}
	out := make([]Partition, 0, len(parts))
	for _, p := range parts {
		if p.bound == "DEFAULT" {
			out = append(out, Partition{Name: p.name, Default: true})
			continue
		}
		m := boundExpr.FindStringSubmatch(p.bound)
		if m == nil {
			return nil, fmt.Errorf("partition %s: unexpected bound %q", p.name, p.bound)
		}
		part := Partition{Name: p.name, Legacy: m[1] == "MINVALUE"}
		var ok bool
		if !part.Legacy {
			if part.From, ok = boundTime(m[2]); !ok {
				return nil, fmt.Errorf("partition %s: bound %q is not an event id", p.name, m[2])
			}
		}
		if m[3] != "MAXVALUE" {
			if part.To, ok = boundTime(m[4]); !ok {
				return nil, fmt.Errorf("partition %s: bound %q is not an event id", p.name, m[4])
			}
		}
		out = append(out, part)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Default != b.Default {
			return b.Default
		}
		return a.From.Before(b.From)
	})
	return out, nil
}

// partitionTables turns the unpartitioned tables of a database hookd
// created before issue 48 into partitioned ones, once (a no-op after),
// then creates the partitions ahead. It runs under migrate's lock, on a
// live database: nothing waits on it longer than the final swap.
//
// An empty database's tables are replaced. A database with rows keeps
// them where they are: each table is renamed hookd_<table>_legacy and
// attached to the new partitioned table as the partition of every id
// below the cut, the start of the next interval (at least a minute
// ahead, so no id a live process makes before the swap lands above it).
// Attaching checks that every row is below the cut: a CHECK constraint
// says so first, validated while writes go on (VALIDATE takes a lock that
// lets them), so the attach itself reads nothing. The partitioned table's
// indexes are the legacy's own definitions, so the attach adopts the
// legacy's indexes instead of building any.
func (db *DB) partitionTables(ctx context.Context, now time.Time) error {
	if db.Backend != Postgres {
		return nil
	}
	var kind string
	if err := db.base.queryRow(ctx, `SELECT c.relkind::text FROM pg_class c WHERE c.oid = to_regclass('hookd_deliveries')`).Scan(&kind); err != nil {
		return fmt.Errorf("partition tables: %w", err)
	}
	if kind == "r" {
		var empty bool
		if err := db.base.queryRow(ctx, `SELECT NOT EXISTS (SELECT 1 FROM hookd_deliveries) AND NOT EXISTS (SELECT 1 FROM hookd_events)`).Scan(&empty); err != nil {
			return fmt.Errorf("partition tables: %w", err)
		}
		cut := intervalStart(now, db.partitionInterval)
		if !empty {
			cut = intervalStart(now.Add(time.Minute), db.partitionInterval).Add(db.partitionInterval)
			for _, t := range partitionedTables {
				check := t.name + "_below_cut"
				if _, err := db.base.exec(ctx, `ALTER TABLE `+t.name+` DROP CONSTRAINT IF EXISTS `+check); err != nil {
					return fmt.Errorf("partition %s: %w", t.name, err)
				}
				if _, err := db.base.exec(ctx, `ALTER TABLE `+t.name+` ADD CONSTRAINT `+check+` CHECK (`+t.key+` < '`+idBound(cut)+`') NOT VALID`); err != nil {
					return fmt.Errorf("partition %s: %w", t.name, err)
				}
				if _, err := db.base.exec(ctx, `ALTER TABLE `+t.name+` VALIDATE CONSTRAINT `+check); err != nil {
					return fmt.Errorf("partition %s: %w", t.name, err)
				}
			}
		}
		// The swap waits for the tables' lock behind every transaction
		// using them, and every later query waits behind it: a few
		// seconds at most, then it lets go and tries again.
		var err error
		for try := 1; ; try++ {
			err = db.InTx(ctx, TxOptions{}, func(q *Q) error {
				if _, err := q.exec(ctx, `SET LOCAL lock_timeout = '3s'`); err != nil {
					return err
				}
				for _, t := range partitionedTables {
					if err := swapPartitioned(ctx, q, t.name, t.key, cut, empty); err != nil {
						return fmt.Errorf("partition %s: %w", t.name, err)
					}
				}
				return nil
			})
			var pgErr *pgconn.PgError
			if err == nil || try == 5 || !errors.As(err, &pgErr) || pgErr.Code != "55P03" { // lock_not_available
				break
			}
			db.log.InfoContext(ctx, "partitioning waits: the tables are busy", "try", try)
		}
		if err != nil {
			return err
		}
		db.log.InfoContext(ctx, "partitioned the event and delivery tables", "legacy_below", map[bool]string{true: "none", false: cut.Format(time.RFC3339)}[empty])
	}
	return db.EnsurePartitions(ctx, now)
}

// swapPartitioned renames table to its legacy name, creates table anew,
// partitioned by key, with the legacy's columns, defaults and indexes,
// and either attaches the legacy below cut or, empty, drops it.
func swapPartitioned(ctx context.Context, q *Q, table, key string, cut time.Time, empty bool) error {
	legacy := table + "_legacy"
	type index struct {
		name, def, constraint string
		keyed                 bool // its columns include the partition key
	}
	idx, err := collect(ctx, q, func(r row) (index, error) {
		var i index
		return i, r.Scan(&i.name, &i.def, &i.constraint, &i.keyed)
	}, `SELECT ic.relname, pg_get_indexdef(x.indexrelid), COALESCE(pg_get_constraintdef(con.oid), ''),
			EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = x.indrelid AND a.attname = $2 AND a.attnum = ANY (x.indkey::int2[]))
		FROM pg_index x JOIN pg_class ic ON ic.oid = x.indexrelid
		LEFT JOIN pg_constraint con ON con.conindid = x.indexrelid AND con.contype IN ('p', 'u')
		WHERE x.indrelid = to_regclass($1)
		ORDER BY con.oid IS NOT NULL, x.indexrelid`, table, key)
	if err != nil {
		return err
	}
	// The unique keys come last (the ORDER BY), as they were made last on
	// the old table (013): between two indexes that look alike to a plan
	// made without statistics, PostgreSQL takes the newest, and the
	// deliver job's lookup wants the unique (endpoint_id, event_id).
	stmts := []string{`ALTER TABLE ` + table + ` RENAME TO ` + legacy}
	for _, i := range idx {
		stmts = append(stmts, `ALTER INDEX `+i.name+` RENAME TO `+legacyName(i.name, table))
	}
	stmts = append(stmts, `CREATE TABLE `+table+` (LIKE `+legacy+` INCLUDING DEFAULTS) PARTITION BY RANGE (`+key+`)`)
	for _, i := range idx {
		switch {
		case i.constraint != "" && !i.keyed:
			// A unique key without the partition key cannot be the
			// partitioned table's (the deliveries' primary key on id, the
			// events' idempotency key): the legacy keeps it, new partitions
			// get a plain index where lookups need one (createPartition).
		case i.constraint != "":
			stmts = append(stmts, `ALTER TABLE `+table+` ADD CONSTRAINT `+i.name+` `+i.constraint)
		default:
			stmts = append(stmts, indexOn.ReplaceAllString(i.def, "CREATE ${1}INDEX "+i.name+" ON "+table+" "))
		}
	}
	if empty {
		stmts = append(stmts, `DROP TABLE `+legacy)
	} else {
		stmts = append(stmts,
			`ALTER TABLE `+table+` ATTACH PARTITION `+legacy+` FOR VALUES FROM (MINVALUE) TO ('`+idBound(cut)+`')`,
			`ALTER TABLE `+legacy+` DROP CONSTRAINT `+table+`_below_cut`)
	}
	stmts = append(stmts, `CREATE TABLE `+table+`_default PARTITION OF `+table+` DEFAULT`)
	if table == "hookd_deliveries" {
		stmts = append(stmts, `CREATE INDEX `+table+`_default_id ON `+table+`_default (id)`)
	}
	for _, s := range stmts {
		if _, err := q.exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// indexOn is the head of pg_get_indexdef's CREATE INDEX, up to its table.
var indexOn = regexp.MustCompile(`^CREATE (UNIQUE )?INDEX \S+ ON (ONLY )?\S+ `)

// legacyName is an index's name once its table is the legacy partition.
func legacyName(index, table string) string {
	if rest, ok := strings.CutPrefix(index, table); ok {
		return table + "_legacy" + rest
	}
	return index + "_legacy"
}

// EnsurePartitions creates the partitions of every interval from the
// current one to partitionsAhead after it that no partition covers yet,
// for both tables. Several processes may run it at once: a partition
// another created meanwhile is skipped. An interval whose ids already
// have rows in the default partition cannot get a partition (PostgreSQL
// refuses it); it is skipped, its rows stay where they are, and it is
// logged.
func (db *DB) EnsurePartitions(ctx context.Context, now time.Time) error {
	if db.Backend != Postgres {
		return nil
	}
	interval := db.partitionInterval
	return db.EnsurePartitionsFor(ctx, intervalStart(now, interval), intervalStart(now, interval).Add(time.Duration(partitionsAhead+1)*interval))
}

// EnsurePartitionsFor creates partitions, one per interval, covering
// [from, to) where none covers it yet (a bulk load of history does this
// first, so its rows land in partitions of their own, not in the
// default).
func (db *DB) EnsurePartitionsFor(ctx context.Context, from, to time.Time) error {
	if db.Backend != Postgres {
		return nil
	}
	parts, err := listPartitions(ctx, db.base, "hookd_deliveries")
	if err != nil || len(parts) == 0 {
		return err // not partitioned (yet): nothing to do
	}
	interval := db.partitionInterval
	for slot := intervalStart(from, interval); slot.Before(to); slot = slot.Add(interval) {
		// The slot, less what partitions already cover (parts is in order
		// of range, so lo only moves up).
		lo, hi := slot, slot.Add(interval)
		for _, p := range parts {
			if p.Default {
				continue
			}
			pTo := p.To
			if pTo.IsZero() { // MAXVALUE
				pTo = hi
			}
			switch {
			case !p.From.After(lo) && pTo.After(lo):
				lo = pTo // covers lo: what is left starts after it
			case p.From.After(lo) && p.From.Before(hi):
				hi = p.From // starts inside: what is left ends there
			}
		}
		if !lo.Before(hi) {
			continue
		}
		if err := db.createPartition(ctx, lo, hi); err != nil {
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "23514" { // 23514: the range has rows in the default
				return err
			}
			db.log.WarnContext(ctx, "an interval's ids are in the default partition; it gets no partition of its own", "from", lo, "to", hi)
		}
	}
	return db.readRoutes(ctx)
}

// createPartition creates both tables' partitions of [lo, hi).
func (db *DB) createPartition(ctx context.Context, lo, hi time.Time) error {
	suffix := partitionSuffix(lo)
	return db.InTx(ctx, TxOptions{}, func(q *Q) error {
		if _, err := q.exec(ctx, `SET LOCAL lock_timeout = '`+partitionLockTimeout+`'`); err != nil {
			return err
		}
		for _, t := range partitionedTables {
			name := t.name + "_" + suffix
			if _, err := q.exec(ctx, `CREATE TABLE IF NOT EXISTS `+name+` PARTITION OF `+t.name+
				` FOR VALUES FROM ('`+idBound(lo)+`') TO ('`+idBound(hi)+`')`); err != nil {
				return fmt.Errorf("create partition %s: %w", name, err)
			}
			if t.name == "hookd_deliveries" {
				// The legacy's primary key on id cannot be the partitioned
				// table's (it lacks event_id): each partition has its own.
				if _, err := q.exec(ctx, `CREATE INDEX IF NOT EXISTS `+name+`_id ON `+name+` (id)`); err != nil {
					return fmt.Errorf("create partition %s: %w", name, err)
				}
			}
		}
		return nil
	})
}

// PartitionPass is what one retention pass did to the partitions, and
// what it leaves the row loops.
type PartitionPass struct {
	Dropped int // intervals dropped
	// Spare is the range whose rows the row loops leave to the drop of
	// its partitions (zero: none): the partition that holds the cutoff,
	// where rows cross it all day long, and any expired one whose drop
	// was put off for a busy lock. Only where a partition is at most a
	// tenth of the window: then what waits for the drop is at most a
	// tenth more than the window keeps, hidden from every read meanwhile
	// (retention.go), and the rows go by the partition, not one by one.
	// A window of minutes (the soak's steady state) is pruned row by row.
	Spare IDRange
}

// spareShare is how much of the window one partition may span for the
// row loops to leave its expired rows to its drop.
const spareShare = 10

// DropExpiredPartitions drops the partitions (both tables') whose whole
// interval is older than the window (now less retention) and which hold
// no delivery still to keep: none pending, none finished within the
// window (a late retry or a resend of an old event). A partition with one
// is kept, and the row loops delete its expired rows, until its last one
// expires. Each drop takes both parent tables' lock for the few
// milliseconds of the check and the drop; if it cannot have them within
// partitionLockTimeout, the partition waits for the next pass (and is in
// Spare meanwhile).
func (db *DB) DropExpiredPartitions(ctx context.Context, now time.Time, retention time.Duration) (PartitionPass, error) {
	var pass PartitionPass
	if db.Backend != Postgres {
		return pass, nil
	}
	cutoff := now.Add(-retention)
	parts, err := listPartitions(ctx, db.base, "hookd_deliveries")
	if err != nil {
		return pass, err
	}
	var putOff []Partition
	for _, p := range parts {
		if p.Default || p.To.IsZero() || p.To.After(cutoff) {
			if !p.Default && !p.Legacy && !p.From.After(cutoff) && p.To.After(cutoff) && p.To.Sub(p.From) <= retention/spareShare {
				pass.Spare = IDRange{From: p.From, To: p.To}
			}
			continue
		}
		suffix := strings.TrimPrefix(p.Name, "hookd_deliveries_")
		kept := false
		err := db.InTx(ctx, TxOptions{}, func(q *Q) error {
			if _, err := q.exec(ctx, `SET LOCAL lock_timeout = '`+partitionLockTimeout+`'`); err != nil {
				return err
			}
			// Events first, as a query joining the two locks them.
			if _, err := q.exec(ctx, `LOCK TABLE hookd_events, hookd_deliveries IN ACCESS EXCLUSIVE MODE`); err != nil {
				return err
			}
			live, err := collect(ctx, q, func(r row) (int, error) {
				var i int
				return i, r.Scan(&i)
			}, liveSinceSQL([]string{p.Name}), ts(cutoff))
			if kept = len(live) > 0; err != nil || kept {
				return err
			}
			for _, t := range partitionedTables {
				if _, err := q.exec(ctx, `DROP TABLE IF EXISTS `+pgx.Identifier{t.name + "_" + suffix}.Sanitize()); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "55P03" { // lock_not_available
				db.log.InfoContext(ctx, "a partition's drop waits for the next retention pass: its tables were busy", "partition", p.Name)
				putOff = append(putOff, p)
				continue
			}
			return pass, fmt.Errorf("drop partition %s: %w", p.Name, err)
		}
		if kept {
			db.log.InfoContext(ctx, "an expired partition is kept: it holds a delivery pending or finished within the window", "partition", p.Name)
			continue
		}
		pass.Dropped++
	}
	// A drop put off leaves its rows to the next pass's drop too, not to a
	// row-by-row delete of its whole interval.
	for _, p := range putOff {
		if !pass.Spare.IsZero() && !p.Legacy && p.From.Before(pass.Spare.From) {
			pass.Spare.From = p.From
		}
	}
	return pass, db.readRoutes(ctx)
}

// VacuumCurrentPartition vacuums (and analyzes) the partitions of both
// tables whose interval holds now, as autovacuum would, where autovacuum
// is off: the server's setting, or the partition's own
// autovacuum_enabled. It does so when the deliveries' partition has taken
// autovacuum's own thresholds' worth of inserts or dead rows since its
// last vacuum (autovacuum_vacuum_insert_threshold plus its scale factor
// times the partition's rows; the same for dead rows), and says whether
// it did. Without it a server with autovacuum off never sets the
// visibility map of the day being written, and every read of the day's
// rows by the endpoint_recent or (endpoint_id, id) index visits the heap:
// the console's endpoint list at 20 M deliveries went from 100 ms (p50)
// and 191 ms (p99) to 23 and 32 ms once the day was vacuumed
// (docs/performance.md, "At volume"). Where autovacuum is on, it does
// this itself, and this does nothing. A no-op on SQLite and on
// unpartitioned tables (whose retention pass vacuums them: Reclaim).
func (db *DB) VacuumCurrentPartition(ctx context.Context, now time.Time) (bool, error) {
	if db.Backend != Postgres {
		return false, nil
	}
	parts, err := listPartitions(ctx, db.base, "hookd_deliveries")
	if err != nil {
		return false, err
	}
	i := slices.IndexFunc(parts, func(p Partition) bool {
		return !p.Default && !p.Legacy && !p.From.After(now) && p.To.After(now)
	})
	if i < 0 {
		return false, nil
	}
	var due bool
	err = db.pool.QueryRow(ctx, `SELECT (current_setting('autovacuum') = 'off'
			OR coalesce(c.reloptions && ARRAY['autovacuum_enabled=false', 'autovacuum_enabled=off'], false))
		AND ((current_setting('autovacuum_vacuum_insert_threshold')::bigint >= 0
				AND s.n_ins_since_vacuum >= current_setting('autovacuum_vacuum_insert_threshold')::bigint
					+ current_setting('autovacuum_vacuum_insert_scale_factor')::float8 * greatest(c.reltuples, 0))
			OR s.n_dead_tup >= current_setting('autovacuum_vacuum_threshold')::bigint
				+ current_setting('autovacuum_vacuum_scale_factor')::float8 * greatest(c.reltuples, 0))
		FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid WHERE s.relid = to_regclass($1)`, parts[i].Name).Scan(&due)
	if err != nil && !NotFound(err) {
		return false, fmt.Errorf("partition %s's vacuum due: %w", parts[i].Name, err)
	}
	if !due {
		return false, nil
	}
	if _, err := db.pool.Exec(ctx, `VACUUM (SKIP_LOCKED, ANALYZE) `+partitionsNamed(parts[i])); err != nil {
		return false, fmt.Errorf("vacuum partition %s: %w", parts[i].Name, err)
	}
	return true, nil
}

// partitionsNamed is both tables' partitions of p's interval, quoted and
// comma-separated, for a VACUUM.
func partitionsNamed(p Partition) string {
	suffix := strings.TrimPrefix(p.Name, "hookd_deliveries_")
	var names []string
	for _, t := range partitionedTables {
		names = append(names, pgx.Identifier{t.name + "_" + suffix}.Sanitize())
	}
	return strings.Join(names, ", ")
}

// VacuumClosedPartitions vacuums (and analyzes) up to limit partitions
// of both tables whose interval has ended and is still within the
// window, newest first, that no VACUUM (hookd's or autovacuum's) has
// visited since their interval ended; it returns how many it vacuumed.
// Rows written within the interval are then all visible, and the
// visibility map says so: the console's count of an endpoint's last day,
// the delivery log's first page and every other read of the endpoint_recent
// or (endpoint_id, id) index answers from the index alone (an index-only
// scan), where without it every row visits its heap page: on a server
// with autovacuum off, 70 ms of the endpoint list's 80,000 rows at 20 M
// deliveries. With autovacuum on it has usually been here first, and this
// finds nothing to do. One retention pass vacuums one partition (a day's,
// at the defaults); an interval ends once each. A no-op on SQLite and on
// unpartitioned tables.
func (db *DB) VacuumClosedPartitions(ctx context.Context, now time.Time, retention time.Duration, limit int) (int, error) {
	if db.Backend != Postgres || limit <= 0 {
		return 0, nil
	}
	parts, err := listPartitions(ctx, db.base, "hookd_deliveries")
	if err != nil {
		return 0, err
	}
	done := 0
	for i := len(parts) - 1; i >= 0 && done < limit; i-- {
		p := parts[i]
		if p.Default || p.Legacy || p.To.IsZero() || p.To.After(now) || (retention > 0 && !p.To.After(now.Add(-retention))) {
			continue
		}
		var last int64 // unix µs of the latest vacuum of the deliveries' partition, 0: none
		if err := db.pool.QueryRow(ctx, `SELECT COALESCE((extract(epoch FROM greatest(last_vacuum, last_autovacuum)) * 1000000)::bigint, 0)
			FROM pg_stat_user_tables WHERE relid = to_regclass($1)`, p.Name).Scan(&last); err != nil && !NotFound(err) {
			return done, fmt.Errorf("partition %s's last vacuum: %w", p.Name, err)
		}
		if last >= ts(p.To) {
			continue
		}
		if _, err := db.pool.Exec(ctx, `VACUUM (SKIP_LOCKED, ANALYZE) `+partitionsNamed(p)); err != nil {
			return done, fmt.Errorf("vacuum partition %s: %w", p.Name, err)
		}
		done++
	}
	return done, nil
}
