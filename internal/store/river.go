package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"
)

// JobClient is the River client of either engine, without its transaction type:
// what hookd needs beyond inserting jobs inside a store transaction.
type JobClient interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
	StopAndCancel(ctx context.Context) error
	JobGet(ctx context.Context, id int64) (*rivertype.JobRow, error)
	// JobRetry makes a scheduled or retryable job available now.
	JobRetry(ctx context.Context, id int64) (*rivertype.JobRow, error)
	// JobUpdate sets a job's output (a running job reports its progress).
	JobUpdate(ctx context.Context, id int64, params *river.JobUpdateParams) (*rivertype.JobRow, error)
	// Stopped is closed once the client has fully stopped.
	Stopped() <-chan struct{}
	insertManyTx(ctx context.Context, tx any, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error)
}

type riverClient[TTx any] struct{ *river.Client[TTx] }

func (c riverClient[TTx]) insertManyTx(ctx context.Context, tx any, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error) {
	return c.InsertManyTx(ctx, tx.(TTx), params)
}

// NewRiver builds the River client on this database's driver. Afterwards the
// store's transactions can insert jobs (Q.InsertJobs). A config with no
// Workers/Queues gives an insert-only client (an API-only node).
func (db *DB) NewRiver(cfg *river.Config) (JobClient, error) {
	q, err := db.d.newRiver(cfg)
	if err != nil {
		return nil, err
	}
	// Nothing of the client's would run on an insert: no middleware,
	// hooks or plugins (hookd's tracing adds otelriver's middleware).
	db.jobsDirect = len(cfg.Middleware) == 0 && len(cfg.Hooks) == 0 && len(cfg.Plugins) == 0 &&
		len(cfg.JobInsertMiddleware) == 0 //nolint:staticcheck // deprecated, but still installs middleware
	db.jobs = q
	return q, nil
}

// RiverClient returns the *river.Client under q (a *river.Client[pgx.Tx]
// or a *river.Client[*sql.Tx]): for River UI, which takes the client
// itself. nil for anything else.
func RiverClient(q JobClient) any {
	switch c := q.(type) {
	case riverClient[pgx.Tx]:
		return c.Client
	case riverClient[*sql.Tx]:
		return c.Client
	}
	return nil
}

// UseRiver makes client, the application's own River client on this
// database, the one hookd inserts its jobs with and reads them back from
// (library mode: no second client runs). It must be a
// *river.Client[pgx.Tx] on PostgreSQL or a *river.Client[*sql.Tx] on
// SQLite.
func (db *DB) UseRiver(client any) (JobClient, error) {
	if client == nil {
		return nil, errors.New("no River client given")
	}
	q, err := db.d.useRiver(client)
	if err != nil {
		return nil, err
	}
	db.jobs, db.jobsDirect = q, false
	return q, nil
}

// errUnsupportedRiver is UseRiver's answer to a client of neither engine.
func errUnsupportedRiver(client any) error {
	return fmt.Errorf("unsupported River client %T: pass a *river.Client[pgx.Tx] (PostgreSQL) or *river.Client[*sql.Tx] (SQLite)", client)
}

// JobMetadata returns the metadata of River jobs by id (those that exist),
// as JSON on both engines: a fanout reads the trace context of the events it
// takes along, a drain that of the deliveries it sends.
func (q *Q) JobMetadata(ctx context.Context, ids []int64) (map[int64][]byte, error) {
	out := make(map[int64][]byte, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	col := q.db.d.jsonText(`metadata`)
	type jobMeta struct {
		id   int64
		meta []byte
	}
	rows, err := collect(ctx, q, func(r row) (m jobMeta, err error) {
		err = r.Scan(&m.id, &m.meta)
		return m, err
	}, `SELECT id, `+col+` FROM river_job WHERE id IN (`+placeholders(1, len(ids))+`)`, anys(ids)...)
	if err != nil {
		return nil, fmt.Errorf("job metadata: %w", err)
	}
	for _, m := range rows {
		out[m.id] = m.meta
	}
	return out, nil
}

// hookd reaches past River's client in five places: it deletes jobs with
// its own statement (deleteJobsStmt) and sends River's insert notification
// itself (notifyInsert, insertNotification), both here, and writes River's
// job rows itself: a publish's fanout jobs on PostgreSQL (fanoutJobsCTE,
// publish_onetrip.go) and a fanout's deliver jobs on both engines
// (fanoutWriteStmt and sqliteJobRows, fanout_write_batch.go). Each relies on
// River internals that a River upgrade may change; each names the version
// it was checked against and the test that fails if River changes.

// notifyInsert returns what tells River's producers on PostgreSQL that a
// job in a queue is available: the notification River's own inserts send
// (topic "river_insert" in the client's schema, payload {"queue": …}).
// JobRetry sends none, so a job it makes available would otherwise wait for
// the producers' next poll.
//
// Checked against River v0.51.2: Client.maybeNotifyInsertForQueues sends
// exactly this through NotifyMany, and the producer decodes insertPayload
// {Queue} from notifier.NotificationTopicInsert ("river_insert").
// Guarded by TestWakeNextFreshNotifies (river_test.go): if River changes
// the topic or payload its producers listen for, the job it wakes waits for
// the poll and that test fails.
func notifyInsert(exec riverdriver.Executor, schema string) func(ctx context.Context, queue string) error {
	return func(ctx context.Context, queue string) error {
		return insertNotification(ctx, exec, schema, []string{queue})
	}
}

// insertNotification sends River's insert notification for queues through
// exec: on PostgreSQL a NOTIFY, on SQLite a row of River's notification
// outbox (river_notification), which its listener polls and hands to the
// producers, as River's insert writes it in the inserting transaction.
func insertNotification(ctx context.Context, exec riverdriver.Executor, schema string, queues []string) error {
	payloads := make([]string, len(queues))
	for i, queue := range queues {
		payloads[i] = fmt.Sprintf(`{"queue": %q}`, queue)
	}
	return exec.NotifyMany(ctx, &riverdriver.NotifyManyParams{Payload: payloads, Schema: schema, Topic: "river_insert"})
}

// deleteJobsStmt deletes River jobs that are not running: River's
// JobDeleteMany in one plain statement (it also selects and returns every
// deleted row, which a drain's recorder has no use for).
//
// Checked against River v0.51.2: its river_job table (both drivers) has
// id and state, and JobDeleteMany spares state 'running' the same way
// (dbsqlc/river_job.sql of riverpgxv5 and riversqlite). Guarded by
// TestDeleteJobs (river_test.go: a running job survives, the others go)
// and TestRecordDrained (deliver_drain_test.go).
func deleteJobsStmt(ids []int64) stmt {
	return stmt{`DELETE FROM river_job WHERE state <> 'running' AND id IN (` + placeholders(1, len(ids)) + `)`, anys(ids)}
}

// InsertJobs inserts River jobs in this transaction (so they exist if and
// only if the transaction commits).
func (q *Q) InsertJobs(ctx context.Context, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error) {
	if q.tx == nil {
		return nil, errors.New("InsertJobs needs a transaction")
	}
	if q.db.jobs == nil {
		return nil, errors.New("InsertJobs: no River client (call NewRiver first)")
	}
	return q.db.jobs.insertManyTx(ctx, q.tx, params)
}

// DeleteJobs deletes River jobs, except running ones: the fanout jobs of
// events another fanout took along.
func (q *Q) DeleteJobs(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	st := deleteJobsStmt(ids)
	if _, err := q.exec(ctx, st.sql, st.args...); err != nil {
		return fmt.Errorf("delete jobs: %w", err)
	}
	return nil
}

// Jobs is the River client hookd inserts and reads its jobs with (nil
// before NewRiver or UseRiver).
func (db *DB) Jobs() JobClient { return db.jobs }
