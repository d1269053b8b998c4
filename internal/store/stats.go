package store

import (
	"context"
	"fmt"
)

// Stats is what the metrics collector reads at scrape time: bounded,
// aggregate queries (no row leaves the database) that the hot path never
// runs.
type Stats struct {
	// Pending deliveries, and the earliest next_attempt_at among those due
	// at now (0: none due).
	Pending       int64
	OldestDueAt   int64
	EndpointState map[string]int64    // healthy, failing, disabled
	RiverJobs     map[[2]string]int64 // (queue, state) → jobs
	// OldestDueByQueue is OldestDueAt for the pending deliveries whose
	// job waits in each queue (a delivery lane); queues with nothing due
	// are missing.
	OldestDueByQueue map[string]int64
}

// ReadStats reads Stats as of now (unix µs). The pending count and the
// oldest due delivery come from the partial index of pending deliveries;
// River's depth from river_job grouped by queue and state.
func (db *DB) ReadStats(ctx context.Context, now int64) (*Stats, error) {
	s := &Stats{EndpointState: map[string]int64{"healthy": 0, "failing": 0, "disabled": 0}, RiverJobs: map[[2]string]int64{}, OldestDueByQueue: map[string]int64{}}
	var oldest *int64
	err := db.base.queryRow(ctx, `SELECT count(*), min(CASE WHEN next_attempt_at <= $1 THEN next_attempt_at END)
		FROM hookd_deliveries WHERE state = 'pending'`, now).Scan(&s.Pending, &oldest)
	if err != nil {
		return nil, fmt.Errorf("stats: pending deliveries: %w", err)
	}
	if oldest != nil {
		s.OldestDueAt = *oldest
	}
	endpoints, err := collect(ctx, db.base, func(r row) (c count, err error) {
		err = r.Scan(&c.key[0], &c.n)
		return c, err
	}, `SELECT CASE WHEN NOT enabled THEN 'disabled' WHEN failing_since IS NOT NULL THEN 'failing' ELSE 'healthy' END, count(*)
		FROM hookd_endpoints GROUP BY 1`)
	if err != nil {
		return nil, fmt.Errorf("stats: endpoints: %w", err)
	}
	for _, c := range endpoints {
		s.EndpointState[c.key[0]] = c.n
	}
	jobs, err := collect(ctx, db.base, func(r row) (c count, err error) {
		err = r.Scan(&c.key[0], &c.key[1], &c.n)
		return c, err
	}, `SELECT queue, state, count(*) FROM river_job GROUP BY queue, state`)
	if err != nil {
		return nil, fmt.Errorf("stats: river jobs: %w", err)
	}
	for _, c := range jobs {
		s.RiverJobs[c.key] = c.n
	}
	lanes, err := collect(ctx, db.base, func(r row) (c count, err error) {
		err = r.Scan(&c.key[0], &c.n)
		return c, err
	}, `SELECT j.queue, min(d.next_attempt_at) FROM hookd_deliveries d JOIN river_job j ON j.id = d.job_id
		WHERE d.state = 'pending' AND d.next_attempt_at <= $1 AND j.state = 'available' GROUP BY j.queue`, now)
	if err != nil {
		return nil, fmt.Errorf("stats: oldest due by lane: %w", err)
	}
	for _, c := range lanes {
		s.OldestDueByQueue[c.key[0]] = c.n
	}
	return s, nil
}

// count is one row of a GROUP BY: up to two key columns and count(*).
type count struct {
	key [2]string
	n   int64
}
