package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/endpoint"
)

// DeliveryFilter selects one endpoint's deliveries for its log, newest
// first. Zero fields filter nothing.
type DeliveryFilter struct {
	OwnerID    string
	EndpointID string
	State      endpoint.DeliveryState
	EventType  string
	// Since and Until bound created_at: [Since, Until).
	Since, Until time.Time
	// Before pages backwards: deliveries older than this delivery id.
	Before string
	Limit  int
}

// ListDeliveriesWhere returns the deliveries f selects, newest first. The
// (endpoint_id, id) index serves the order, so a page costs its rows, not
// the endpoint's whole log.
func (q *Q) ListDeliveriesWhere(ctx context.Context, f DeliveryFilter) ([]*endpoint.Delivery, error) {
	sql, args := deliveryLogSQL(f, q.db.keptSince())
	out, err := collect(ctx, q, scanDelivery, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("list deliveries: %w", err)
	}
	return out, nil
}

// deliveryLogSQL is ListDeliveriesWhere's statement and arguments, with
// the deliveries retention expired at kept hidden (0: none).
func deliveryLogSQL(f DeliveryFilter, kept int64) (string, []any) {
	var sb strings.Builder
	args := []any{f.EndpointID, f.OwnerID}
	sb.WriteString(`SELECT ` + deliveryCols + ` FROM hookd_deliveries WHERE endpoint_id = $1 AND owner_id = $2`)
	add := func(cond string, v any) {
		args = append(args, v)
		fmt.Fprintf(&sb, " AND "+cond, len(args))
	}
	switch f.State {
	case "":
	case endpoint.Pending, endpoint.Failed:
		// A literal, not a parameter: only then may PostgreSQL's cached
		// generic plan use the state's partial (endpoint_id, id) index,
		// and the filtered page costs its rows instead of a walk through
		// the endpoint's whole log (issue 48's soak found it).
		fmt.Fprintf(&sb, " AND state = '%s'", f.State)
	default:
		add("state = $%d", string(f.State))
	}
	if f.EventType != "" {
		add("event_type = $%d", f.EventType)
	}
	if !f.Since.IsZero() {
		add("created_at >= $%d", ts(f.Since))
	}
	if !f.Until.IsZero() {
		add("created_at < $%d", ts(f.Until))
	}
	if f.Before != "" {
		add("id < $%d", f.Before)
	}
	if kept != 0 {
		args = append(args, kept)
		sb.WriteString(" AND " + unexpiredDelivery("", len(args)))
	}
	args = append(args, f.Limit)
	fmt.Fprintf(&sb, " ORDER BY id DESC LIMIT $%d", len(args))
	return sb.String(), args
}

// GetDelivery returns one delivery of one of an owner's endpoints.
func (q *Q) GetDelivery(ctx context.Context, ownerID, endpointID, id string) (*endpoint.Delivery, error) {
	d, err := scanDelivery(q.queryRow(ctx, `SELECT `+deliveryCols+` FROM hookd_deliveries WHERE id = $1 AND endpoint_id = $2 AND owner_id = $3 AND `+unexpiredDelivery("", 4),
		id, endpointID, ownerID, q.db.keptSince()))
	if NotFound(err) {
		return nil, apperr.New(apperr.NotFound, "delivery %q not found", id)
	}
	return d, err
}

// Activity is one endpoint's recent deliveries: counts since a time and
// its latest attempted delivery.
type Activity struct {
	EndpointID string
	// Deliveries and Failures count deliveries created since the cut-off;
	// a failure is one that failed or is being retried.
	Deliveries, Failures int
	Last                 *endpoint.Delivery
}

// endpointActivitySQL is EndpointActivity's count of each endpoint's
// deliveries and failures since $2, for the endpoints of owner $1: one
// range scan of the endpoint_recent index each.
const endpointActivitySQL = `SELECT e.id,
		(SELECT count(*) * 4294967296 + coalesce(sum(CASE WHEN d.state = 'failed' OR (d.state = 'pending' AND d.attempts > 0) THEN 1 ELSE 0 END), 0)
			FROM hookd_deliveries d WHERE d.endpoint_id = e.id AND d.created_at >= $2)
		FROM hookd_endpoints e WHERE e.owner_id = $1 ORDER BY e.created_at, e.id`

// endpointActivityPartsSQL is endpointActivitySQL reading only the named
// partitions of hookd_deliveries: each endpoint's count is one range scan
// of each one's endpoint_recent index, summed. With none, every count is
// zero.
func endpointActivityPartsSQL(parts []string) string {
	if len(parts) == 0 {
		return `SELECT e.id, CAST($2 AS bigint) * 0 FROM hookd_endpoints e WHERE e.owner_id = $1 ORDER BY e.created_at, e.id`
	}
	var from strings.Builder
	for i, p := range parts {
		if i > 0 {
			from.WriteString(" UNION ALL ")
		}
		from.WriteString(`SELECT state, attempts FROM ` + pgx.Identifier{p}.Sanitize() + ` WHERE endpoint_id = e.id AND created_at >= $2`)
	}
	return `SELECT e.id,
		(SELECT count(*) * 4294967296 + coalesce(sum(CASE WHEN d.state = 'failed' OR (d.state = 'pending' AND d.attempts > 0) THEN 1 ELSE 0 END), 0)
			FROM (` + from.String() + `) d)
		FROM hookd_endpoints e WHERE e.owner_id = $1 ORDER BY e.created_at, e.id`
}

// activitySkew is how far behind a delivery's creation its settlement's
// clock may be (another process's): activityPartitions' bound on
// finished_at is that much earlier than the window.
const activitySkew = 5 * time.Minute

// activityPartitions names the partitions of hookd_deliveries that can
// hold a delivery created at or after since (PostgreSQL, partitioned; ok
// false otherwise: read the parent). A partition is by its events' time,
// not its deliveries': a replay, a resend or a late fanout creates
// deliveries of old events in old partitions. So an interval from since
// to the current one is read as it is, and any other partition (older,
// ahead, the legacy, the default) only if it holds a delivery pending or
// finished since the window began, which a delivery created since then
// must be (it is created pending, and finished after its creation). Both
// tests are a step into an index (liveSinceSQL), one statement for all: a month of daily partitions costs a millisecond or
// two, where each endpoint's count reading every partition cost 31
// index descents an endpoint (docs/performance.md, "At volume").
func (q *Q) activityPartitions(ctx context.Context, since time.Time) (names []string, ok bool, err error) {
	if q.db.Backend != Postgres {
		return nil, false, nil
	}
	parts, err := listPartitions(ctx, q, "hookd_deliveries")
	if err != nil || len(parts) == 0 {
		return nil, false, err
	}
	now := time.Now()
	if q.db.clock != nil {
		now = q.db.clock()
	}
	var check []string
	for _, p := range parts {
		if !p.Default && !p.Legacy && p.To.After(since) && p.From.Before(now.Add(time.Hour)) {
			names = append(names, p.Name)
			continue
		}
		check = append(check, p.Name)
	}
	if len(check) == 0 {
		return names, true, nil
	}
	live, err := collect(ctx, q, func(r row) (int, error) {
		var i int
		return i, r.Scan(&i)
	}, liveSinceSQL(check), ts(since.Add(-activitySkew)))
	if err != nil {
		return nil, false, fmt.Errorf("endpoint activity's partitions: %w", err)
	}
	for _, i := range live {
		names = append(names, check[i])
	}
	return names, true, nil
}

// liveSinceSQL reads which of the named partitions of hookd_deliveries
// hold a delivery pending or finished at or after $1: the index of each
// one returned. Each test is one step into an index, whatever the plan:
// the smallest pending delivery's endpoint in the partial pending index,
// the largest finished_at at the end of its index. (An EXISTS of
// finished_at >= $1 is not: a generic plan, made for any $1, expects a
// third of the rows to match, so a sequential scan to find the first
// looks cheaper, and it read every row of a partition with none: 4.3 s
// for the endpoint list at 20 M deliveries.)
func liveSinceSQL(names []string) string {
	var sb strings.Builder
	for i, name := range names {
		if i > 0 {
			sb.WriteString(" UNION ALL ")
		}
		n := pgx.Identifier{name}.Sanitize()
		fmt.Fprintf(&sb, `SELECT %d WHERE (SELECT min(endpoint_id) FROM %s WHERE state = 'pending') IS NOT NULL OR (SELECT max(finished_at) FROM %s) >= $1`, i, n, n)
	}
	return sb.String()
}

// EndpointActivity returns the activity of every endpoint of ownerID since
// since, in the endpoint list's order (created_at, id): one entry per
// endpoint, with zero counts and no Last for an endpoint without
// deliveries.
func (q *Q) EndpointActivity(ctx context.Context, ownerID string, since time.Time) ([]*Activity, error) {
	// One index-only range scan per endpoint (per partition read),
	// aggregated as it goes: no sort of the window's rows, which a GROUP
	// BY over the join needed. A scalar subquery returns one value, so it
	// packs both counts into one integer (deliveries in the high 32 bits,
	// failures in the low): the same on both engines, where a second
	// subquery scanned the range again.
	stmt := endpointActivitySQL
	parts, partitioned, err := q.activityPartitions(ctx, since)
	if err != nil {
		return nil, err
	}
	if partitioned {
		stmt = endpointActivityPartsSQL(parts)
	}
	out, err := collect(ctx, q, func(r row) (*Activity, error) {
		var id string
		var packed int64
		if err := r.Scan(&id, &packed); err != nil {
			return nil, err
		}
		return &Activity{EndpointID: id, Deliveries: int(packed >> 32), Failures: int(packed & 0xffffffff)}, nil
	}, stmt, ownerID, ts(since))
	if err != nil {
		return nil, fmt.Errorf("endpoint activity: %w", err)
	}
	byID := make(map[string]*Activity, len(out))
	for _, a := range out {
		byID[a.EndpointID] = a
	}
	if err := q.lastDeliveries(ctx, ownerID, since, parts, partitioned, byID); err != nil {
		return nil, fmt.Errorf("endpoint last delivery: %w", err)
	}
	return out, nil
}

// lastDeliveries sets each endpoint's latest attempted delivery (byID:
// the owner's endpoints). Each is one backwards step down its (endpoint_id,
// id) index, in every partition: 31 of them a month, for each endpoint.
// On partitioned tables it first steps only into parts (the partitions
// that can hold a delivery created since since: activityPartitions). A
// delivery found there created since since is the latest: one created
// later is in parts too (its id is larger, as its creation is later, and
// it is pending or finished since). An endpoint with none there (idle for
// the window) is looked for in every partition, alone.
func (q *Q) lastDeliveries(ctx context.Context, ownerID string, since time.Time, parts []string, partitioned bool, byID map[string]*Activity) error {
	kept := q.db.keptSince()
	set := func(last []*endpoint.Delivery) {
		for _, d := range last {
			if a := byID[d.EndpointID]; a != nil {
				a.Last = d
			}
		}
	}
	if !partitioned {
		last, err := collect(ctx, q, scanDelivery, q.db.lastDeliverySQL(), ownerID, kept)
		set(last)
		return err
	}
	if len(parts) > 0 {
		last, err := collect(ctx, q, scanDelivery, lastDeliveryPartsSQL(parts), ownerID, kept)
		if err != nil {
			return err
		}
		for _, d := range last {
			if !d.CreatedAt.Before(since) {
				set([]*endpoint.Delivery{d})
			}
		}
	}
	var idle []string
	for id, a := range byID {
		if a.Last == nil {
			idle = append(idle, id)
		}
	}
	if len(idle) == 0 {
		return nil
	}
	last, err := collect(ctx, q, scanDelivery, q.db.lastDeliverySQL()+` AND e.id = ANY($3)`, ownerID, kept, idle)
	set(last)
	return err
}

// lastDeliveryPartsSQL is lastDeliverySQL (PostgreSQL) over the named
// partitions only: the latest of each one's latest.
func lastDeliveryPartsSQL(parts []string) string {
	var sb strings.Builder
	for i, p := range parts {
		if i > 0 {
			sb.WriteString(" UNION ALL ")
		}
		sb.WriteString(`(SELECT ` + prefixCols("x.", deliveryCols) + ` FROM ` + pgx.Identifier{p}.Sanitize() + ` x WHERE x.endpoint_id = e.id AND x.attempts > 0 AND ` +
			unexpiredDelivery("x.", 2) + ` ORDER BY x.id DESC LIMIT 1)`)
	}
	return `SELECT ` + prefixCols("d.", deliveryCols) + ` FROM hookd_endpoints e CROSS JOIN LATERAL (SELECT * FROM (` + sb.String() + `) y ORDER BY y.id DESC LIMIT 1) d
		WHERE e.owner_id = $1`
}

// lastDeliverySQL reads the latest attempted delivery of each of owner
// $1's endpoints, none retention expired at $2. On PostgreSQL the row
// comes from the backwards step itself (LATERAL): found by its id
// afterwards, as SQLite's form does, a partitioned table (keyed by the
// event, not the delivery) probed every partition's id index for each
// endpoint.
func (db *DB) lastDeliverySQL() string {
	last := `SELECT %s FROM hookd_deliveries x WHERE x.endpoint_id = e.id AND x.attempts > 0 AND ` + unexpiredDelivery("x.", 2) + ` ORDER BY x.id DESC LIMIT 1`
	if db.Backend == Postgres {
		return `SELECT ` + prefixCols("d.", deliveryCols) + ` FROM hookd_endpoints e CROSS JOIN LATERAL (` + fmt.Sprintf(last, prefixCols("x.", deliveryCols)) + `) d
		WHERE e.owner_id = $1`
	}
	return `SELECT ` + prefixCols("d.", deliveryCols) + ` FROM hookd_endpoints e JOIN hookd_deliveries d ON d.id = (` + fmt.Sprintf(last, "x.id") + `)
		WHERE e.owner_id = $1`
}

// HourCount is how many of an endpoint's deliveries created in one hour
// stand in each state.
type HourCount struct {
	Delivered, Failed, Pending int
}

// hourlyOutcomesSQL counts an endpoint's ($1) deliveries created in
// [$2, $3) by state, from the endpoint_recent index alone.
const hourlyOutcomesSQL = `SELECT COALESCE(sum(CASE WHEN state = 'delivered' THEN 1 ELSE 0 END), 0), COALESCE(sum(CASE WHEN state = 'failed' THEN 1 ELSE 0 END), 0), count(*)
	FROM hookd_deliveries WHERE endpoint_id = $1 AND created_at >= $2 AND created_at < $3`

// hourlyOutcomesHoursSQL is hourlyOutcomesSQL for each of $3 hours from
// $2 in one statement (PostgreSQL): the same range scan an hour, run
// hour after hour inside it, so the hours are not grouped (no sort) and
// the statement is planned, and its partitions locked, once. On
// partitioned tables created_at does not prune (the key is the event's
// id), so each of 24 statements read every partition's index: 85 ms for
// a day's chart at 2 M deliveries in 31 partitions, against 3–8 ms as one
// (26 ms and 1–4 ms unpartitioned).
const hourlyOutcomesHoursSQL = `SELECT c.delivered, c.failed, c.total FROM generate_series(0, $3::int - 1) h CROSS JOIN LATERAL (
		SELECT COALESCE(sum(CASE WHEN state = 'delivered' THEN 1 ELSE 0 END), 0) AS delivered,
			COALESCE(sum(CASE WHEN state = 'failed' THEN 1 ELSE 0 END), 0) AS failed, count(*) AS total
		FROM hookd_deliveries WHERE endpoint_id = $1 AND created_at >= $2::bigint + h * 3600000000::bigint AND created_at < $2::bigint + (h + 1) * 3600000000::bigint) c
	ORDER BY h`

// HourlyOutcomes counts an endpoint's deliveries created in each of the
// hours from since, by state: one index-only range scan per hour, summed as
// it goes (grouping by a computed hour sorted every row of the day); on
// PostgreSQL all the hours in one statement, on SQLite (no partitions,
// no planning cost to speak of) a statement an hour. The caller has
// checked that the endpoint is its owner's (a delivery's owner is its
// endpoint's).
func (q *Q) HourlyOutcomes(ctx context.Context, endpointID string, since time.Time, hours int) ([]HourCount, error) {
	out := make([]HourCount, hours)
	if q.db.Backend == Postgres {
		rows, err := collect(ctx, q, func(r row) (HourCount, error) {
			var h HourCount
			return h, r.Scan(&h.Delivered, &h.Failed, &h.Pending)
		}, hourlyOutcomesHoursSQL, endpointID, ts(since), hours)
		if err != nil {
			return nil, fmt.Errorf("hourly outcomes: %w", err)
		}
		for i, h := range rows[:min(len(rows), hours)] {
			h.Pending -= h.Delivered + h.Failed
			out[i] = h
		}
		return out, nil
	}
	for i := range out {
		from := since.Add(time.Duration(i) * time.Hour)
		h := &out[i]
		err := q.queryRow(ctx, hourlyOutcomesSQL, endpointID, ts(from), ts(from.Add(time.Hour))).Scan(&h.Delivered, &h.Failed, &h.Pending)
		if err != nil {
			return nil, fmt.Errorf("hourly outcomes: %w", err)
		}
		h.Pending -= h.Delivered + h.Failed
	}
	return out, nil
}
func prefixCols(prefix, cols string) string {
	parts := strings.Split(cols, ", ")
	for i, p := range parts {
		parts[i] = prefix + p
	}
	return strings.Join(parts, ", ")
}

// ListDeliveries returns an endpoint's latest deliveries, newest first;
// before (a delivery id, optional) pages backwards.
func (q *Q) ListDeliveries(ctx context.Context, ownerID, endpointID string, limit int, before string) ([]*endpoint.Delivery, error) {
	return q.ListDeliveriesWhere(ctx, DeliveryFilter{OwnerID: ownerID, EndpointID: endpointID, Limit: limit, Before: before})
}
