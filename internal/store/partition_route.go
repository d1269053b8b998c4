package store

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
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
// The drains' reads by endpoint (FreshDue, FreshAttempts, ClaimFresh, the
// wake-ups) go by no event: they name the one partition that may hold a
// fresh delivery, when there is one (freshPartition), which in the
// ordinary course is the current interval's.
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
	// fresh is the suffix of the one partition that may hold a fresh
	// delivery, "" when that is not one partition (freshPartition).
	fresh string
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
	// freshHeld is when (unix ns) a reading may record a fresh partition
	// again after freshMissed.
	freshHeld atomic.Int64
	// misses counts freshMissed's calls: a reading that overlapped one
	// forgets the fresh partition it found (readRoutesAt).
	misses atomic.Int64
	// raced, in tests, runs in a reading between its fresh partition's
	// check and its store (nil otherwise).
	raced func()
	wg    sync.WaitGroup // the reread under way
	texts sync.Map       // routedKey → the statement with partitions named
}

type routedKey struct{ sql, suffix string }

// partitionedName matches the two partitioned tables' own names in a
// statement (not their partitions', indexes' or hookd_event_keys).
var partitionedName = regexp.MustCompile(`\bhookd_(events|deliveries)\b`)

// readRoutes reads the partitions' ranges from the catalog, and which one
// partition may hold a fresh delivery (freshPartition).
func (db *DB) readRoutes(ctx context.Context) error {
	return db.readRoutesAt(ctx, time.Now())
}

// readRoutesAt is readRoutes with the fresh partition's window around now.
func (db *DB) readRoutesAt(ctx context.Context, now time.Time) error {
	if db.Backend != Postgres {
		return nil
	}
	r := &partitionRoutes{read: time.Now()} // before the reads: their age errs long
	misses := db.route.misses.Load()        // before the hold's check (freshMissed)
	parts, err := listPartitions(ctx, db.base, "hookd_deliveries")
	if err != nil {
		return err
	}
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
	if time.Now().UnixNano() >= db.route.freshHeld.Load() {
		if r.fresh, err = db.freshPartition(ctx, parts, r.ranges, now); err != nil {
			return err
		}
	}
	if db.route.raced != nil {
		db.route.raced()
	}
	db.route.routes.Store(r)
	if r.fresh != "" && db.route.misses.Load() != misses {
		// A freshMissed came after the hold's check: the fresh partition
		// found may predate the delivery it was told of.
		db.forgetFresh()
	}
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
// partitioned).
func (db *DB) routeSuffix(ids ...string) string {
	if len(ids) == 0 {
		return ""
	}
	r := db.routes()
	s := r.suffix(ids[0])
	for _, id := range ids[1:] {
		if s == "" || r.suffix(id) != s {
			return ""
		}
	}
	return s
}

// routes are the routes as last read; if they are older than
// routesMaxAge, a reread starts in the background, one at a time, while
// the old ones serve: never on the caller's path, whose transaction may
// hold a lock that every other pooled connection waits for (a reread
// there could wait for a connection forever). Close waits for a reread
// under way. A failed reread keeps the ranges, forgets the fresh
// partition, and is tried again after routesMaxAge. Nil on SQLite.
func (db *DB) routes() *partitionRoutes {
	if db.Backend != Postgres {
		return nil
	}
	r := db.route.routes.Load()
	if (r == nil || time.Since(r.read) > routesMaxAge) && db.route.reading.CompareAndSwap(false, true) {
		db.route.wg.Go(func() {
			defer db.route.reading.Store(false)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := db.readRoutes(ctx); err != nil {
				db.log.WarnContext(ctx, "reading the time partitions failed; statements name the parent tables until the next try", "error", err)
				kept := &partitionRoutes{read: time.Now()}
				if r != nil {
					kept.ranges = r.ranges
				}
				db.route.routes.Store(kept)
			}
		})
	}
	return r
}

// routed returns sql with hookd_events and hookd_deliveries replaced by
// the partitions that hold the rows of the events ids (the statement must
// touch no other event's rows), or sql itself where no one partition
// does.
func (q *Q) routed(sql string, ids ...string) string {
	return q.routedTo(sql, q.db.routeSuffix(ids...))
}

// routedFresh returns sql, a read or claim of fresh deliveries (pending,
// never attempted) by endpoint, with hookd_events and hookd_deliveries
// replaced by the one partition that may hold them (freshPartition), or
// sql itself where that is not one partition or not known for sure.
func (q *Q) routedFresh(sql string) string {
	r := q.db.routes()
	if r == nil || time.Since(r.read) > freshTrusted {
		return sql
	}
	return q.routedTo(sql, r.fresh)
}

// routedTo is sql naming the partitions of suffix s (sql itself for "").
func (q *Q) routedTo(sql, s string) string {
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

// freshMargin is how far from now an event's time may be for its
// deliveries to be made fresh in the ordinary course: a fanout runs
// within moments of the publish, and the processes' clocks agree within
// it.
const freshMargin = 5 * time.Minute

// freshTrusted is how long a reading's fresh partition is trusted: less
// than freshMargin by more than routesMaxAge, so a reread that is late
// (the database slow, a reread failing) never leaves the drains reading
// the partition of a window now past.
const freshTrusted = freshMargin - 2*routesMaxAge

// freshPartition is the suffix of the one partition that may hold a
// fresh delivery (pending, never attempted), which the drains' reads by
// endpoint (FreshDue, FreshAttempts, ClaimFresh, the wake-ups) then name
// instead of reading every partition's pending index: the partition that
// holds every id within freshMargin of now, provided no other partition
// (the legacy and the default included) holds a fresh delivery now. ""
// when the window spans two partitions (near an interval's end) or
// another one holds one. A fresh delivery made elsewhere after the
// reading (a resend of an old delivery, a fanout of an event older than
// the margin) is missed by the drains until the next reading, at most
// routesMaxAge; its own job still sends it. The process that makes one
// forgets its fresh partition at once (freshMissed).
func (db *DB) freshPartition(ctx context.Context, parts []Partition, ranges []idRange, now time.Time) (string, error) {
	lo, hi := idBound(now.Add(-freshMargin)), idBound(now.Add(freshMargin))
	var window []string
	for _, rg := range ranges {
		if rg.lo < hi && rg.hi > lo {
			window = append(window, rg.suffix)
		}
	}
	if len(window) != 1 || window[0] == "legacy" {
		return "", nil
	}
	// Every other partition: does it hold a fresh delivery? Each EXISTS
	// reads that partition's pending index (few entries in an old one).
	var checks []string
	for _, p := range parts {
		if p.Name != "hookd_deliveries_"+window[0] {
			checks = append(checks, `EXISTS (SELECT 1 FROM `+pgx.Identifier{p.Name}.Sanitize()+` WHERE state = 'pending' AND attempts = 0)`)
		}
	}
	if len(checks) > 0 {
		var other bool
		if err := db.base.queryRow(ctx, `SELECT `+strings.Join(checks, ` OR `)).Scan(&other); err != nil {
			return "", fmt.Errorf("fresh deliveries outside the current partition: %w", err)
		}
		if other {
			return "", nil
		}
	}
	return window[0], nil
}

// freshMade is told the events of deliveries about to be made fresh: if
// one is outside the fresh partition, it is forgotten (freshMissed).
func (db *DB) freshMade(eventIDs ...string) {
	r := db.route.routes.Load()
	if r == nil || r.fresh == "" {
		return
	}
	for _, id := range eventIDs {
		if r.suffix(id) != r.fresh {
			db.freshMissed()
			return
		}
	}
}

// freshMissed forgets the fresh partition (the drains read every
// partition again) for routesMaxAge: a delivery is being made fresh,
// perhaps outside it. Not until a reread, which could run before the
// write that made it commits, and not see it.
//
// The hold is set before the count goes up, and a reading loads the
// count before it checks the hold: so a reading that did not see the
// hold sees the count change, and forgets what it found.
func (db *DB) freshMissed() {
	db.route.freshHeld.Store(time.Now().Add(routesMaxAge).UnixNano())
	db.route.misses.Add(1)
	db.forgetFresh()
}

// forgetFresh drops the fresh partition of the routes as they stand.
func (db *DB) forgetFresh() {
	if r := db.route.routes.Load(); r != nil && r.fresh != "" {
		db.route.routes.Store(&partitionRoutes{ranges: r.ranges, read: r.read})
	}
}
