package store

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"
)

// SQLite's reclaim: giving the pages a large prune freed back to the
// filesystem. A file hookd creates has auto_vacuum = INCREMENTAL
// (OpenSQLite sets it before the first table exists), so the pages a
// delete frees stay on the free list, where the next inserts reuse them,
// until `PRAGMA incremental_vacuum(N)` moves up to N pages from the end
// of the file into free slots and cuts the end off (at the next
// checkpoint, in WAL mode).
//
// At steady state a pass frees what the next inserts will take again
// (pruneEvery runs it a tenth of the window apart: with a 1-minute window
// every 10 s, a sixth of the rows), and moving pages only to grow the
// file back would cost writes for nothing. So reclaim keeps up to a
// quarter of the file free (reclaimKeepFree) and gives back the rest: what
// a prune much larger than the steady state leaves (retention shortened,
// a backlog aged out at once).
//
// Each step is its own write transaction on the one connection, so it
// holds the writer like a prune batch does: sized to reclaimBudget (a
// step over it halves the next, one under half of it doubles it), with a
// rest as long as the step after each one. The first step is 64 pages:
// on a 465 MiB file with 40 % of it free, 256 pages took 19–36 ms and
// 4,096 took 134–145 ms (sqlite3 3.40; docs/performance.md), so a 10 ms
// step is under about 128 pages, and the budget sizes it from 64.
const (
	reclaimBudget   = 10 * time.Millisecond
	reclaimMinPages = 8
	reclaimMaxPages = 4096
	reclaimKeepFree = 4 // keep up to page_count/reclaimKeepFree pages free
)

// autoVacuumIncremental is PRAGMA auto_vacuum's value for INCREMENTAL.
const autoVacuumIncremental = 2

// sqliteReclaimer runs one reclaim's steps.
type sqliteReclaimer struct {
	db      *sql.DB
	log     *slog.Logger
	now     func() time.Time
	rest    func(ctx context.Context, d time.Duration) error
	pages   int           // the next step's pages
	steps   int           // steps run
	freed   int64         // pages given back
	longest time.Duration // the longest step
}

func newSQLiteReclaimer(db *sql.DB, log *slog.Logger) *sqliteReclaimer {
	return &sqliteReclaimer{db: db, log: log, now: time.Now, rest: restFor, pages: 64}
}

func restFor(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// run gives back the free pages beyond reclaimKeepFree of the file. A
// file whose auto_vacuum is not INCREMENTAL (created before hookd set it,
// and not converted: docs/design.md, "Retention") is left as it is: its
// free list is reused all the same.
func (r *sqliteReclaimer) run(ctx context.Context) error {
	var mode int
	if err := r.db.QueryRowContext(ctx, `PRAGMA auto_vacuum`).Scan(&mode); err != nil {
		return err
	}
	if mode != autoVacuumIncremental {
		return nil
	}
	for {
		var pages, free int64
		if err := r.db.QueryRowContext(ctx, `SELECT page_count, freelist_count FROM pragma_page_count(), pragma_freelist_count()`).Scan(&pages, &free); err != nil {
			return err
		}
		excess := free - pages/reclaimKeepFree
		if excess <= 0 {
			if r.steps > 0 {
				r.log.Info("sqlite: gave free pages back to the filesystem", "pages", r.freed, "steps", r.steps, "longest_step", r.longest)
			}
			return nil
		}
		n := min(int64(r.pages), excess)
		start := r.now()
		// Exec steps the pragma to its end: each page it frees is a row.
		if _, err := r.db.ExecContext(ctx, fmt.Sprintf(`PRAGMA incremental_vacuum(%d)`, n)); err != nil {
			return err
		}
		took := r.now().Sub(start)
		r.steps++
		r.freed += n
		r.longest = max(r.longest, took)
		switch {
		case took > reclaimBudget:
			r.pages = max(reclaimMinPages, r.pages/2)
		case took < reclaimBudget/2:
			r.pages = min(reclaimMaxPages, r.pages*2)
		}
		if err := r.rest(ctx, min(took, time.Second)); err != nil {
			return err
		}
	}
}
