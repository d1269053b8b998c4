package store

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/oklog/ulid/v2"
)

// Naming the partition (PostgreSQL, issue 48). PostgreSQL 15 locks every
// partition a generic plan names before it prunes any: a statement on
// hookd_deliveries with a month of daily partitions takes some 36 table
// locks, and from a backend's 17th lock on each one leaves the fast path
// for the shared lock table. A statement about one event's rows (a
// delivery's lookup, claim and settlement, a fanout's reads and writes)
// names that event's partitions instead: hookd_deliveries_p20261205 and
// hookd_events_p20261205 for an event of that day. The statement then
// locks one partition of each, and costs what it did unpartitioned.
//
// routes maps an event id to the suffix its partitions share (both
// tables' partitions of one range carry the same suffix). It is read from
// the catalog by Migrate, by every EnsurePartitions and
// DropExpiredPartitions, and again by the first statement routed more
// than routesMaxAge after the last read, so another process's new or
// dropped partitions reach it within that time. Until then:
//   - an interval whose partition this process has not seen yet is
//     addressed through the parent table: correct, only dearer;
//   - a partition another process dropped fails the statement with
//     "relation does not exist" (42P01), which rereads the routes at once;
//     the job that ran it is retried. A dropped partition held nothing
//     pending (DropExpiredPartitions), so only a finished delivery's
//     lookup can meet one.
//
// Only ids that are strictly "evt_" and a ULID are routed: their order as
// bytes is their order under any collation PostgreSQL might compare the
// bounds with (digits and capital letters only, one length). Any other
// id (a test's, a library user's own) goes through the parent.

// routesMaxAge is how long a process trusts the routes it read.
const routesMaxAge = time.Minute

// partitionRoutes is one reading of the partitions' ranges.
type partitionRoutes struct {
	ranges []idRange // in order of lo
	read   time.Time
}

// idRange is one partition's range of event ids, [lo, hi) ("" lo: every
// id below hi, the legacy's).
type idRange struct{ lo, hi, suffix string }

// suffix returns the suffix of the partitions holding id's rows ("" when
// none is known: the parent then finds them).
func (r *partitionRoutes) suffix(id string) string {
	if r == nil || len(r.ranges) == 0 || !strictEventID(id) {
		return ""
	}
	i := sort.Search(len(r.ranges), func(i int) bool { return id < r.ranges[i].hi })
	if i == len(r.ranges) || id < r.ranges[i].lo {
		return ""
	}
	return r.ranges[i].suffix
}

// strictEventID reports whether id is "evt_" and a canonical ULID.
func strictEventID(id string) bool {
	if len(id) != 4+ulid.EncodedSize || !strings.HasPrefix(id, "evt_") {
		return false
	}
	_, err := ulid.ParseStrict(id[4:])
	return err == nil && strings.ToUpper(id[4:]) == id[4:]
}

// router is a DB's routes and what rereads them.
type router struct {
	routes  atomic.Pointer[partitionRoutes]
	reading atomic.Bool
	wg      sync.WaitGroup // the reread under way
	texts   sync.Map       // routedKey → the statement with partitions named
}

type routedKey struct{ sql, suffix string }

// partitionedName matches the two partitioned tables' own names in a
// statement (not their partitions', indexes' or hookd_event_keys).
var partitionedName = regexp.MustCompile(`\bhookd_(events|deliveries)\b`)

// readRoutes reads the partitions' ranges from the catalog.
func (db *DB) readRoutes(ctx context.Context) error {
	if db.Backend != Postgres {
		return nil
	}
	parts, err := listPartitions(ctx, db.base, "hookd_deliveries")
	if err != nil {
		return err
	}
	r := &partitionRoutes{read: time.Now()}
	for _, p := range parts {
		if p.Default || p.To.IsZero() {
			continue
		}
		rg := idRange{hi: idBound(p.To), suffix: strings.TrimPrefix(p.Name, "hookd_deliveries_")}
		if !p.Legacy {
			rg.lo = idBound(p.From)
		}
		r.ranges = append(r.ranges, rg)
	}
	db.route.routes.Store(r)
	// Forget the statements of partitions gone.
	db.route.texts.Range(func(k, _ any) bool {
		if !slices.ContainsFunc(r.ranges, func(rg idRange) bool { return rg.suffix == k.(routedKey).suffix }) {
			db.route.texts.Delete(k)
		}
		return true
	})
	return nil
}

// routeSuffix is the suffix of the partitions every id of ids lives in,
// "" if they are not all in one known partition (or the tables are not
// partitioned). Routes older than routesMaxAge are reread in the
// background, one reread at a time, while the old ones serve: never on the
// caller's path, whose transaction may hold a lock that every other pooled
// connection waits for (a reread there could wait for a connection
// forever). Close waits for a reread under way.
func (db *DB) routeSuffix(ids ...string) string {
	if db.Backend != Postgres || len(ids) == 0 {
		return ""
	}
	r := db.route.routes.Load()
	if (r == nil || time.Since(r.read) > routesMaxAge) && db.route.reading.CompareAndSwap(false, true) {
		db.route.wg.Go(func() {
			defer db.route.reading.Store(false)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := db.readRoutes(ctx); err != nil {
				db.log.WarnContext(ctx, "reading the time partitions failed; statements name the parent tables meanwhile", "error", err)
			}
		})
	}
	s := r.suffix(ids[0])
	for _, id := range ids[1:] {
		if s == "" || r.suffix(id) != s {
			return ""
		}
	}
	return s
}

// routed returns sql with hookd_events and hookd_deliveries replaced by
// the partitions that hold the rows of the events ids (the statement must
// touch no other event's rows), or sql itself where no one partition
// does.
func (q *Q) routed(sql string, ids ...string) string {
	s := q.db.routeSuffix(ids...)
	if s == "" {
		return sql
	}
	k := routedKey{sql, s}
	if t, ok := q.db.route.texts.Load(k); ok {
		return t.(string)
	}
	t := partitionedName.ReplaceAllString(sql, "hookd_${1}_"+s)
	q.db.route.texts.Store(k, t)
	return t
}

// routeMissed rereads the routes if err says a relation does not exist: a
// partition this process named was dropped by another. It returns err.
func (db *DB) routeMissed(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" {
		db.route.routes.Store(&partitionRoutes{}) // read zero: the next statement has them reread
	}
	return err
}
