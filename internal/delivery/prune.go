package delivery

import (
	"context"

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
	_, _, err := w.s.Prune(ctx)
	return err
}

// Prune deletes what retention allows, in batches; it returns how many
// deliveries and events it deleted.
func (s *Service) Prune(ctx context.Context) (deliveries, events int64, err error) {
	cutoff := s.now().Add(-s.cfg.Retention).UnixMicro()
	const batch = 1000
	q := s.db.Q()
	for {
		n, err := q.PruneDeliveries(ctx, cutoff, batch)
		if err != nil {
			return deliveries, events, err
		}
		deliveries += n
		if n < batch {
			break
		}
	}
	for {
		n, err := q.PrunePollMessages(ctx, cutoff, batch)
		if err != nil {
			return deliveries, events, err
		}
		deliveries += n // a poll message is a delivery that is never sent
		if n < batch {
			break
		}
	}
	for {
		n, err := q.PruneEvents(ctx, cutoff, batch)
		if err != nil {
			return deliveries, events, err
		}
		events += n
		if n < batch {
			break
		}
	}
	audits, err := s.pruneAudit(ctx)
	if err != nil {
		return deliveries, events, err
	}
	if deliveries+events+audits > 0 {
		s.log.Info("retention pruned", "deliveries", deliveries, "events", events, "audit_records", audits)
	}
	return deliveries, events, nil
}

// pruneAudit deletes audit records older than their own retention.
func (s *Service) pruneAudit(ctx context.Context) (int64, error) {
	cutoff := s.now().Add(-s.cfg.AuditRetention).UnixMicro()
	const batch = 1000
	var total int64
	for {
		n, err := s.db.Q().PruneAudit(ctx, cutoff, batch)
		if err != nil {
			return total, err
		}
		total += n
		if n < batch {
			return total, nil
		}
	}
}
