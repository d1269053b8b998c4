package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"

	"github.com/hookd/hookd"
)

// receiptArgs is the shop's own job: mail the customer a receipt.
type receiptArgs struct {
	OrderID int64  `json:"order_id"`
	Email   string `json:"email"`
}

func (receiptArgs) Kind() string { return "shop.receipt" }

type receiptWorker struct {
	river.WorkerDefaults[receiptArgs]
	log *slog.Logger
}

func (w *receiptWorker) Work(ctx context.Context, job *river.Job[receiptArgs]) error {
	w.log.Info("receipt sent", "order", job.Args.OrderID, "email", job.Args.Email)
	return nil
}

// jobs is the shop's one River client: it runs the shop's jobs and
// hookd's deliveries alike.
type jobs struct {
	start    func(context.Context) error
	stop     func(context.Context) error
	insertTx func(ctx context.Context, tx any, args river.JobArgs) error
}

// newJobs builds the shop's River client with hookd's workers on it, and
// hands it to hookd, which then inserts its jobs through it.
func newJobs(db *database, hooks *hookd.Hookd, log *slog.Logger) (*jobs, error) {
	rc := &river.Config{
		Logger:  log.With("component", "river"),
		Workers: river.NewWorkers(),
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 10}},
	}
	river.AddWorker(rc.Workers, &receiptWorker{log: log})
	if err := hooks.AddWorkers(rc); err != nil { // hookd: fanout, deliver, prune
		return nil, err
	}
	if db.pool != nil {
		c, err := river.NewClient(riverpgxv5.New(db.pool), rc)
		if err != nil {
			return nil, fmt.Errorf("river: %w", err)
		}
		insert := func(ctx context.Context, tx any, args river.JobArgs) error {
			_, err := c.InsertTx(ctx, tx.(pgx.Tx), args, nil)
			return err
		}
		return &jobs{c.Start, c.Stop, insert}, hooks.UseRiver(c) // hookd: use this client
	}
	// SQLite has no LISTEN/NOTIFY: River learns of new jobs by polling.
	rc.FetchCooldown, rc.FetchPollInterval = 10*time.Millisecond, 50*time.Millisecond
	c, err := river.NewClient(riversqlite.New(db.sql), rc)
	if err != nil {
		return nil, fmt.Errorf("river: %w", err)
	}
	insert := func(ctx context.Context, tx any, args river.JobArgs) error {
		_, err := c.InsertTx(ctx, tx.(*sql.Tx), args, nil)
		return err
	}
	return &jobs{c.Start, c.Stop, insert}, hooks.UseRiver(c) // hookd: use this client
}
