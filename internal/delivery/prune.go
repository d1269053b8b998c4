package delivery

import (
	"context"
	"time"

	"github.com/hookd/hookd/internal/store"
	"github.com/riverqueue/river"
)

// PruneArgs is the periodic retention job: finished deliveries and events
// older than the retention period are deleted, and audit records older
// than theirs (AuditRetention). A pending delivery whose
// event was pruned is discarded when it next runs.
type PruneArgs struct{}

// Kind is the job kind River knows the retention job by.
func (PruneArgs) Kind() string { return "hookd.prune" }

// InsertOpts puts the retention job in the fanout queue.
func (PruneArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueFanout}
}

type pruneWorker struct {
	river.WorkerDefaults[PruneArgs]
	s *Service
}

func (w *pruneWorker) Work(ctx context.Context, _ *river.Job[PruneArgs]) error {
	w.s.beforePrune(ctx)
	_, _, err := w.s.Prune(ctx)
	return err
}

// Timeout lets a retention pass run until the next one is due (at least
// the job timeout): a pass that met a backlog of rows, or a VACUUM of a
// day's partition (minutes at millions of rows a day), was cut off at the
// job timeout (15 s) and began again an hour later, where a vacuum never
// finished. River's rescuer leaves a running job alone within its own
// timeout, so a long pass is not run twice.
func (w *pruneWorker) Timeout(*river.Job[PruneArgs]) time.Duration {
	return pruneTimeout(w.s.cfg.JobTimeout, w.s.cfg.Retention)
}

// pruneTimeout is a retention pass's bound: the time to the next pass,
// or the job timeout if that is longer.
func pruneTimeout(jobTimeout, retention time.Duration) time.Duration {
	return max(jobTimeout, pruneEvery(retention))
}

// Retention deletes in batches sized to a time budget, and rests between
// them. On SQLite a delete holds the database's only writer: a publish or
// a delivery's record waiting behind it waits one batch at most, and the
// rest after each batch (as long as the batch took) leaves the writer free
// at least half the time while a large backlog is pruned. The batch halves
// when one takes longer than the budget and doubles, up to pruneMaxBatch,
// when one takes under half of it. On PostgreSQL the rest spreads the
// deletes' I/O the same way.
const (
	pruneBudget   = 10 * time.Millisecond
	pruneMaxBatch = 1000
	pruneMinBatch = 10
)

// pruneEvery is how often retention runs: a tenth of the window, so
// what is kept stays within 10 % of it, between every 10 s (a window of
// minutes, as the soak's steady state uses) and every hour (the default
// 30 days).
func pruneEvery(retention time.Duration) time.Duration {
	return min(time.Hour, max(10*time.Second, retention/10))
}

// pruner runs one retention pass's batches.
type pruner struct {
	// now times a batch: the real clock, not the service's (a test's clock
	// that jumps a day must not make the rest a day long).
	now     func() time.Time
	rest    func(ctx context.Context, d time.Duration) error
	batch   int
	longest time.Duration // the longest batch of the pass
	// checkpoint copies SQLite's WAL into the file, every
	// pruneCheckpointEvery batches (nil on PostgreSQL).
	checkpoint func(ctx context.Context) error
	batches    int
}

// pruneCheckpointEvery is how many batches apart a pass checkpoints
// SQLite's WAL: a batch writes about 1 MiB of it at 5 M deliveries, so
// the WAL stays near 16 MiB, under a quarter of the commit's own
// checkpoint threshold (store's walSafetyPages, 64 MiB).
const pruneCheckpointEvery = 16

// pruneFirstBatch is a pass's first batch: small, so that the batch the
// budget has not yet sized holds the writer no longer than the others (a
// first batch of 1,000 deliveries took 24 ms at 5 M on SQLite, where the
// pass's batches settle near 500 in 6 ms); it doubles from there while a
// batch takes under half the budget.
const pruneFirstBatch = 128

func (s *Service) newPruner() *pruner {
	p := &pruner{now: time.Now, rest: sleep, batch: pruneFirstBatch}
	if s.db.Backend == store.SQLite {
		p.checkpoint = s.db.CheckpointWAL
	}
	return p
}

// run deletes with del, a batch of at most limit rows a call, until a
// batch deletes fewer than it was allowed; it returns how many it deleted.
func (p *pruner) run(ctx context.Context, del func(limit int) (int64, error)) (int64, error) {
	var total int64
	for {
		limit := p.batch
		start := p.now()
		n, err := del(limit)
		took := p.now().Sub(start)
		p.longest = max(p.longest, took)
		if err != nil {
			return total, err
		}
		total += n
		if n < int64(limit) {
			return total, nil
		}
		switch {
		case took > pruneBudget:
			p.batch = max(pruneMinBatch, p.batch/2)
		case took < pruneBudget/2:
			p.batch = min(pruneMaxBatch, p.batch*2)
		}
		if err := ctx.Err(); err != nil { // a rest of 0 may not see it
			return total, err
		}
		p.batches++
		if p.checkpoint != nil && p.batches%pruneCheckpointEvery == 0 {
			// In the rest, with no batch writing (store.DB.CheckpointWAL):
			// the WAL starts over instead of growing to the commit that
			// checkpoints it while holding the writer.
			start := p.now()
			if err := p.checkpoint(ctx); err != nil {
				return total, err
			}
			took = max(0, took-p.now().Sub(start)) // the checkpoint was rest enough
		}
		if err := p.rest(ctx, min(took, time.Second)); err != nil {
			return total, err
		}
	}
}

// Prune deletes what retention allows, in batches (above); it returns how
// many deliveries and events it deleted. A pending delivery is never
// deleted: only those finished before the cutoff.
func (s *Service) Prune(ctx context.Context) (deliveries, events int64, err error) {
	now := s.now()
	cutoff := now.Add(-s.cfg.Retention).UnixMicro()
	q := s.db.Q()
	p := s.newPruner()
	// On PostgreSQL, whole intervals first (store/partition.go): the
	// partitions ahead are made, and those wholly older than the window
	// with nothing to keep are dropped, which deletes their rows without
	// a row-at-a-time delete or the dead rows it leaves. The row loops
	// below leave the partition that holds the cutoff to its own drop
	// (its expired rows are hidden from every read until then), so what
	// they find is the legacy's, the default's and a kept partition's.
	if err := s.db.EnsurePartitions(ctx, now); err != nil {
		s.log.Warn("retention could not create the partitions ahead; the next pass tries again", "error", err)
	}
	parts, err := s.db.DropExpiredPartitions(ctx, now, s.cfg.Retention)
	if err != nil {
		return 0, 0, err
	}
	if deliveries, err = p.run(ctx, func(limit int) (int64, error) { return q.PruneDeliveries(ctx, cutoff, parts.Spare, limit) }); err != nil {
		return deliveries, events, err
	}
	polled, err := p.run(ctx, func(limit int) (int64, error) { return q.PrunePollMessages(ctx, cutoff, limit) })
	deliveries += polled // a poll message is a delivery that is never sent
	if err != nil {
		return deliveries, events, err
	}
	if events, err = p.run(ctx, func(limit int) (int64, error) { return q.PruneEvents(ctx, cutoff, parts.Spare, limit) }); err != nil {
		return deliveries, events, err
	}
	if _, err = p.run(ctx, func(limit int) (int64, error) { return q.PruneEventKeys(ctx, cutoff, limit) }); err != nil {
		return deliveries, events, err
	}
	audits, err := s.pruneAudit(ctx, p)
	if err != nil {
		return deliveries, events, err
	}
	if deliveries+events > 0 {
		if err := s.db.Reclaim(ctx); err != nil {
			// The rows are gone; their space waits for the next pass.
			s.log.Warn("retention could not reclaim the pruned space; the next pass tries again", "error", err)
		}
	}
	// The newest interval that has ended and no VACUUM has visited since:
	// its rows all visible, the console's reads of it come from the index
	// alone (store.VacuumClosedPartitions). One a pass; a no-op where
	// autovacuum got there first.
	vacuumed, err := s.db.VacuumClosedPartitions(ctx, now, s.cfg.Retention, 1)
	if err != nil {
		s.log.Warn("retention could not vacuum an ended partition; the next pass tries again", "error", err)
	}
	if vacuumed > 0 {
		s.log.Info("retention vacuumed an ended partition", "partitions", vacuumed)
	}
	// And the interval being written, where autovacuum is off and would
	// have by now (store.VacuumCurrentPartition): the day's rows read from
	// the index alone too.
	if did, err := s.db.VacuumCurrentPartition(ctx, now); err != nil {
		s.log.Warn("retention could not vacuum the current partition; the next pass tries again", "error", err)
	} else if did {
		s.log.Info("retention vacuumed the current partition (autovacuum is off)")
	}
	if deliveries+events+audits > 0 || parts.Dropped > 0 {
		s.log.Info("retention pruned", "partitions_dropped", parts.Dropped, "deliveries", deliveries, "events", events, "audit_records", audits, "longest_batch", p.longest)
	}
	return deliveries, events, nil
}

// pruneAudit deletes audit records older than their own retention.
func (s *Service) pruneAudit(ctx context.Context, p *pruner) (int64, error) {
	cutoff := s.now().Add(-s.cfg.AuditRetention).UnixMicro()
	q := s.db.Q()
	return p.run(ctx, func(limit int) (int64, error) { return q.PruneAudit(ctx, cutoff, limit) })
}
