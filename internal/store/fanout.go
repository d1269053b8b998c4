package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/owner"
)

// LockEvent locks the event for this transaction (PostgreSQL: SELECT …
// FOR UPDATE SKIP LOCKED; SQLite has one writer at a time and always gets
// it). ok=false: another transaction holds it — a fanout that took the
// event along, which enqueues its deliveries when it commits.
func (q *Q) LockEvent(ctx context.Context, id string) (ok bool, err error) {
	return q.db.d.lockEvent(ctx, q, id)
}

// EndpointsWithDelivery returns which of endpointIDs already have a
// delivery of eventID (what a repeated fanout must skip). It names the
// endpoints so that the unique (endpoint_id, event_id) serves it: the
// deliveries have no index by event alone (migration 012).
func (q *Q) EndpointsWithDelivery(ctx context.Context, eventID string, endpointIDs []string) (map[string]bool, error) {
	have := map[string]bool{}
	for len(endpointIDs) > 0 {
		chunk := endpointIDs[:min(len(endpointIDs), 1000)]
		endpointIDs = endpointIDs[len(chunk):]
		ids, err := collect(ctx, q, scanOne[string], q.routed(withDeliverySQL(len(chunk)), eventID), append([]any{eventID}, anys(chunk)...)...)
		if err != nil {
			return nil, fmt.Errorf("endpoints with delivery: %w", err)
		}
		for _, id := range ids {
			have[id] = true
		}
	}
	return have, nil
}

// AwaitingFanout returns up to limit of the owner's events still awaiting
// fanout, oldest first, except the one given, with their fanout jobs' ids;
// on PostgreSQL it locks them (skipping any another fanout has locked), so
// call it inside the transaction that fans them out.
func (q *Q) AwaitingFanout(ctx context.Context, ownerID, except string, limit int) ([]*event.Event, []int64, error) {
	evs, err := collect(ctx, q, scanEventJob, q.awaitingFanoutSQL(), ownerID, except, limit)
	if err != nil {
		return nil, nil, fmt.Errorf("events awaiting fanout: %w", err)
	}
	evs, jobs := withJobs(evs)
	return evs, jobs, nil
}

// withJobs is evs (nil if empty) and their fanout jobs.
func withJobs(evs []*event.Event) ([]*event.Event, []int64) {
	if len(evs) == 0 {
		return nil, nil
	}
	jobs := make([]int64, len(evs))
	for i, e := range evs {
		jobs[i] = e.FanoutJob
	}
	return evs, jobs
}

// scanEventJob reads eventCols and fanout_job.
func scanEventJob(r row) (*event.Event, error) {
	var job int64
	e, err := scanEvent(r, &job)
	if err != nil {
		return nil, err
	}
	e.FanoutJob = job
	return e, nil
}

// InsertDeliveries inserts pending deliveries, skipping any (endpoint, event)
// pair that already has one: fanout run twice enqueues once. It returns the
// ones it inserted.
func (q *Q) InsertDeliveries(ctx context.Context, ds []*endpoint.Delivery) ([]*endpoint.Delivery, error) {
	var out []*endpoint.Delivery
	const perStmt = 200 // 11 params each; well under both engines' limits
	anon := q.anonParams() == anonymous
	for len(ds) > 0 {
		chunk := ds[:min(perStmt, len(ds))]
		ds = ds[len(chunk):]
		for _, d := range chunk {
			q.db.freshMade(d.EventID)
		}
		var sb strings.Builder
		sb.WriteString(`INSERT INTO hookd_deliveries (id, owner_id, endpoint_id, event_id, event_type, job_id, state, attempts, next_attempt_at, created_at, updated_at) VALUES `)
		args := make([]any, 0, len(chunk)*11)
		byID := make(map[string]*endpoint.Delivery, len(chunk))
		for i, d := range chunk {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteByte('(')
			if anon {
				writeAnonymous(&sb, 11)
			} else {
				writePlaceholders(&sb, len(args)+1, 11)
			}
			sb.WriteByte(')')
			args = append(args, d.ID, d.OwnerID, d.EndpointID, d.EventID, d.EventType, d.JobID, string(d.State), d.Attempts, tsPtr(d.NextAttemptAt), ts(d.CreatedAt), ts(d.UpdatedAt))
			byID[d.ID] = d
		}
		sb.WriteString(` ON CONFLICT (endpoint_id, event_id) DO NOTHING RETURNING id`)
		ids, err := collect(ctx, q, scanOne[string], sb.String(), args...)
		if err != nil {
			return nil, fmt.Errorf("insert deliveries: %w", err)
		}
		for _, id := range ids {
			out = append(out, byID[id])
		}
	}
	return out, nil
}

// MarkFannedOut records that these events were fanned out, with their
// owner's attributes as the fanout read them (JSON; "" keeps none), which
// every attempt of their deliveries renders (LoadAttempt).
func (q *Q) MarkFannedOut(ctx context.Context, ids []string, ownerAttributes string) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := q.exec(ctx, `UPDATE hookd_events SET fanout_job = 0, owner_attributes = NULLIF($1, '') WHERE id IN (`+placeholders(2, len(ids))+`)`, append([]any{ownerAttributes}, anys(ids)...)...); err != nil {
		return fmt.Errorf("mark fanned out: %w", err)
	}
	return nil
}

// BusyEndpoints returns which of the endpoints have every lease slot held
// at now: a job enqueued for one of them now would only meet the lease
// busy and snooze.
func (q *Q) BusyEndpoints(ctx context.Context, endpointIDs []string, now int64) (map[string]bool, error) {
	busy := map[string]bool{}
	for len(endpointIDs) > 0 {
		chunk := endpointIDs[:min(len(endpointIDs), 1000)]
		endpointIDs = endpointIDs[len(chunk):]
		ids, err := collect(ctx, q, scanOne[string], busySQL(len(chunk)), append([]any{now}, anys(chunk)...)...)
		if err != nil {
			return nil, fmt.Errorf("busy endpoints: %w", err)
		}
		for _, id := range ids {
			busy[id] = true
		}
	}
	return busy, nil
}

const lockEventSQL = `SELECT id FROM hookd_events WHERE id = $1 FOR UPDATE SKIP LOCKED`

// withDeliverySQL is EndpointsWithDelivery's statement for n endpoints
// ($1 the event, then the endpoints).
func withDeliverySQL(n int) string {
	return `SELECT endpoint_id FROM hookd_deliveries WHERE event_id = $1 AND endpoint_id IN (` + placeholders(2, n) + `)`
}

// awaitingFanoutSQL is AwaitingFanout's statement ($1 the owner, $2 the
// event excepted, $3 the limit).
func (q *Q) awaitingFanoutSQL() string {
	return `SELECT ` + eventCols + `, fanout_job FROM hookd_events WHERE owner_id = $1 AND fanout_job <> 0 AND id <> $2
		ORDER BY id LIMIT $3` + q.skipLocked()
}

// busySQL is BusyEndpoints' statement for n endpoints ($1 now, then the
// endpoints).
func busySQL(n int) string {
	return `SELECT endpoint_id FROM hookd_endpoint_leases WHERE endpoint_id IN (` + placeholders(2, n) + `)
			GROUP BY endpoint_id HAVING min(busy_until) > $1`
}

// FanoutTake is what a fanout's transaction reads before it writes: the
// event's lock (Locked false: another transaction holds it, and nothing
// else here counts), which of the endpoints already have its delivery,
// the owner's other events awaiting fanout with their fanout jobs, the
// types scoped for the owner as of now, and which endpoints are busy.
type FanoutTake struct {
	Locked    bool
	Have      map[string]bool
	Others    []*event.Event
	OtherJobs []int64
	Scoped    map[string]bool
	Busy      map[string]bool
}

// TakeForFanout reads a fanout transaction's FanoutTake, in this order:
// LockEvent, EndpointsWithDelivery (of endpointIDs), AwaitingFanout (up
// to limit), ScopedTypes and BusyEndpoints (of endpointIDs at now). Each
// statement sees what committed before it, so a concurrent fanout the
// lock waited out has its deliveries seen, and events taken along are
// judged by scoped types read after them. On PostgreSQL the five go out
// in one round trip (the transaction's first, with its BEGIN: pipeTx),
// which one after another were five; SQLite, and more than 1,000
// endpoints, run them one after another.
func (q *Q) TakeForFanout(ctx context.Context, eventID, ownerID string, endpointIDs []string, limit int, now int64) (*FanoutTake, error) {
	batcher, ok := q.batcher()
	if !ok || len(endpointIDs) > 1000 {
		return q.takeForFanout(ctx, eventID, ownerID, endpointIDs, limit, now)
	}
	var b pgx.Batch
	b.Queue(q.routed(lockEventSQL, eventID), eventID)
	if len(endpointIDs) > 0 {
		b.Queue(q.routed(withDeliverySQL(len(endpointIDs)), eventID), append([]any{eventID}, anys(endpointIDs)...)...)
	}
	b.Queue(q.awaitingFanoutSQL(), ownerID, eventID, limit)
	b.Queue(scopedTypesOf+effective, ownerID)
	if len(endpointIDs) > 0 {
		b.Queue(busySQL(len(endpointIDs)), append([]any{now}, anys(endpointIDs)...)...)
	}
	br := batcher.SendBatch(ctx, &b)
	take, err := scanFanoutTake(br, len(endpointIDs) > 0)
	if cerr := br.Close(); err == nil && cerr != nil {
		err = classify(cerr)
	}
	if err != nil {
		return nil, fmt.Errorf("take for fanout: %w", q.db.routeMissed(err))
	}
	return take, nil
}

// scanFanoutTake reads TakeForFanout's results from br (withEndpoints:
// the two reads of endpoints were queued).
func scanFanoutTake(br pgx.BatchResults, withEndpoints bool) (*FanoutTake, error) {
	take := &FanoutTake{Have: map[string]bool{}, Busy: map[string]bool{}}
	locked, err := collectRows(br, scanOne[string])
	if err != nil {
		return nil, err
	}
	take.Locked = len(locked) > 0
	if withEndpoints {
		have, err := collectRows(br, scanOne[string])
		if err != nil {
			return nil, err
		}
		take.Have = setOf(have)
	}
	others, err := collectRows(br, scanEventJob)
	if err != nil {
		return nil, err
	}
	take.Others, take.OtherJobs = withJobs(others)
	names, err := collectRows(br, scanOne[string])
	if err != nil {
		return nil, err
	}
	take.Scoped = setOf(names)
	if withEndpoints {
		busy, err := collectRows(br, scanOne[string])
		if err != nil {
			return nil, err
		}
		take.Busy = setOf(busy)
	}
	return take, nil
}

// takeForFanout is TakeForFanout one read after another.
func (q *Q) takeForFanout(ctx context.Context, eventID, ownerID string, endpointIDs []string, limit int, now int64) (take *FanoutTake, err error) {
	take = &FanoutTake{}
	if take.Locked, err = q.LockEvent(ctx, eventID); err != nil || !take.Locked {
		return take, err
	}
	if take.Have, err = q.EndpointsWithDelivery(ctx, eventID, endpointIDs); err != nil {
		return nil, err
	}
	if take.Others, take.OtherJobs, err = q.AwaitingFanout(ctx, ownerID, eventID, limit); err != nil {
		return nil, err
	}
	if take.Scoped, err = q.ScopedTypes(ctx, ownerID); err != nil {
		return nil, err
	}
	if take.Busy, err = q.BusyEndpoints(ctx, endpointIDs, now); err != nil {
		return nil, err
	}
	return take, nil
}

// batcher is q's connection or transaction as a sender of pgx batches
// (PostgreSQL only).
func (q *Q) batcher() (interface {
	SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
}, bool) {
	pg, _ := q.querier.(pgQuerier)
	b, ok := pg.c.(interface {
		SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
	})
	return b, ok
}

// FanoutRead is what a fanout reads before its transaction: the event, its
// owner, the owner's enabled endpoints (oldest first) and the types scoped
// for it (ScopedTypes).
type FanoutRead struct {
	Event     *event.Event
	Owner     *owner.Owner
	Endpoints []*endpoint.Endpoint
	Scoped    map[string]bool
}

// eventOwner is SQL for the owner of the event $1.
const eventOwner = `(SELECT owner_id FROM hookd_events WHERE id = $1)`

// ReadForFanout reads what a fanout of the event needs before its
// transaction; a NotFound if the event or its owner is gone. On
// PostgreSQL the four reads go out in one round trip, each its own
// statement naming the owner through the event (GetEvent, GetOwner,
// ListEndpoints and ScopedTypes, one after another, were four, each on a
// connection taken from the pool); SQLite runs them one after another.
func (q *Q) ReadForFanout(ctx context.Context, eventID string) (*FanoutRead, error) {
	batcher, ok := q.batcher()
	if !ok {
		return q.readForFanout(ctx, eventID)
	}
	var b pgx.Batch
	b.Queue(q.routed(`SELECT `+eventCols+` FROM hookd_events WHERE id = $1`, eventID), eventID)
	b.Queue(q.routed(`SELECT `+ownerCols+` FROM hookd_owners WHERE id = `+eventOwner, eventID), eventID)
	b.Queue(q.routed(`SELECT `+endpointReadCols+` FROM hookd_endpoints WHERE owner_id = `+eventOwner+` AND enabled = true ORDER BY created_at, id`, eventID), eventID)
	b.Queue(q.routed(scopedTypesOf+effectiveFor(eventOwner), eventID), eventID)
	br := batcher.SendBatch(ctx, &b)
	read, err := scanFanoutRead(br, eventID)
	if cerr := br.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("read for fanout: %w", q.db.routeMissed(classify(cerr)))
	}
	if err != nil {
		return nil, err
	}
	return read, nil
}

// scanFanoutRead reads ReadForFanout's four results from br.
func scanFanoutRead(br pgx.BatchResults, eventID string) (*FanoutRead, error) {
	var read FanoutRead
	var err error
	if read.Event, err = scanEvent(pgRow{br.QueryRow()}); NotFound(err) {
		return nil, apperr.New(apperr.NotFound, "event %q not found", eventID)
	} else if err != nil {
		return nil, fmt.Errorf("read for fanout: event: %w", err)
	}
	if read.Owner, err = scanOwner(pgRow{br.QueryRow()}); NotFound(err) {
		return nil, apperr.New(apperr.NotFound, "owner %q not found", read.Event.OwnerID)
	} else if err != nil {
		return nil, fmt.Errorf("read for fanout: owner: %w", err)
	}
	if read.Endpoints, err = collectRows(br, scanEndpoint); err != nil {
		return nil, fmt.Errorf("read for fanout: endpoints: %w", err)
	}
	names, err := collectRows(br, scanOne[string])
	if err != nil {
		return nil, fmt.Errorf("read for fanout: scoped types: %w", err)
	}
	read.Scoped = setOf(names)
	return &read, nil
}

// collectRows scans the next result of br with scan.
func collectRows[T any](br pgx.BatchResults, scan func(row) (T, error)) ([]T, error) {
	rs, err := br.Query()
	if err != nil {
		return nil, classify(err)
	}
	defer rs.Close()
	var out []T
	for rs.Next() {
		v, err := scan(pgRows{rs})
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, classify(rs.Err())
}

// readForFanout is ReadForFanout one read after another.
func (q *Q) readForFanout(ctx context.Context, eventID string) (*FanoutRead, error) {
	var read FanoutRead
	var err error
	if read.Event, err = q.GetEvent(ctx, "", eventID); err != nil {
		return nil, err
	}
	if read.Owner, err = q.GetOwner(ctx, read.Event.OwnerID); err != nil {
		return nil, err
	}
	if read.Endpoints, err = q.ListEndpoints(ctx, read.Owner.ID, true); err != nil {
		return nil, err
	}
	if read.Scoped, err = q.ScopedTypes(ctx, read.Owner.ID); err != nil {
		return nil, err
	}
	return &read, nil
}
