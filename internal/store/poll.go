package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/owner"
)

// PollChannel is the PostgreSQL notification channel a fanout that wrote
// polling endpoints' messages notifies at its commit; the payload is their
// ids, comma-separated.
const PollChannel = "hookd_poll"

// PollMessage is one event written for a polling endpoint: its fanout
// gives it the endpoint's next sequence number (Seq).
type PollMessage struct {
	EndpointID string
	Seq        int64
	ID         string // the delivery id (webhook-id)
	EventID    string
	CreatedAt  int64
}

// CreatePollEndpoint makes endpointID a polling endpoint with the poll
// token whose hash is tokenHash; run it in the endpoint's creating
// transaction.
func (q *Q) CreatePollEndpoint(ctx context.Context, endpointID string, tokenHash []byte) error {
	if _, err := q.exec(ctx, `INSERT INTO hookd_poll_endpoints (endpoint_id, token_hash) VALUES ($1, $2)`, endpointID, tokenHash); err != nil {
		return fmt.Errorf("create poll endpoint %s: %w", endpointID, err)
	}
	return nil
}

// SetPollToken replaces a polling endpoint's token hash (a rotation).
func (q *Q) SetPollToken(ctx context.Context, endpointID string, tokenHash []byte) error {
	n, err := q.exec(ctx, `UPDATE hookd_poll_endpoints SET token_hash = $2 WHERE endpoint_id = $1`, endpointID, tokenHash)
	if err != nil {
		return fmt.Errorf("rotate poll token of %s: %w", endpointID, err)
	}
	if n == 0 {
		return apperr.New(apperr.NotFound, "endpoint %q is not a polling endpoint", endpointID)
	}
	return nil
}

// PollEndpointOfToken returns the polling endpoint whose token hashes to
// tokenHash and its owner; NotFound when none does.
func (q *Q) PollEndpointOfToken(ctx context.Context, tokenHash []byte) (endpointID, ownerID string, err error) {
	err = q.queryRow(ctx, `SELECT p.endpoint_id, e.owner_id FROM hookd_poll_endpoints p JOIN hookd_endpoints e ON e.id = p.endpoint_id WHERE p.token_hash = $1`, tokenHash).Scan(&endpointID, &ownerID)
	if NotFound(err) {
		return "", "", apperr.New(apperr.NotFound, "no polling endpoint has this token")
	}
	if err != nil {
		return "", "", fmt.Errorf("poll token: %w", err)
	}
	return endpointID, ownerID, nil
}

// PollState is a polling endpoint's last sequence number and its
// server-side cursor.
func (q *Q) PollState(ctx context.Context, endpointID string) (last, acked int64, err error) {
	err = q.queryRow(ctx, `SELECT last_seq, acked_seq FROM hookd_poll_endpoints WHERE endpoint_id = $1`, endpointID).Scan(&last, &acked)
	if NotFound(err) {
		return 0, 0, apperr.New(apperr.NotFound, "endpoint %q is not a polling endpoint", endpointID)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("poll state of %s: %w", endpointID, err)
	}
	return last, acked, nil
}

// SetPollCursor moves a polling endpoint's server-side cursor to seq.
// forward: only if that moves it on (an ack; a seek moves it either way).
func (q *Q) SetPollCursor(ctx context.Context, endpointID string, seq int64, forward bool) error {
	_, err := q.exec(ctx, `UPDATE hookd_poll_endpoints SET acked_seq = $2 WHERE endpoint_id = $1 AND ($3 = false OR acked_seq < $2)`, endpointID, seq, forward)
	if err != nil {
		return fmt.Errorf("move the cursor of %s: %w", endpointID, err)
	}
	return nil
}

// PollSeqBefore returns the sequence number just before a polling
// endpoint's first message written at or after at (unix microseconds):
// the cursor a seek to that time sets. Past the last: the last.
func (q *Q) PollSeqBefore(ctx context.Context, endpointID string, at int64) (int64, error) {
	var seq int64
	err := q.queryRow(ctx, `SELECT seq FROM hookd_poll_messages WHERE endpoint_id = $1 AND created_at >= $2 ORDER BY seq LIMIT 1`, endpointID, at).Scan(&seq)
	if NotFound(err) {
		last, _, err := q.PollState(ctx, endpointID)
		return last, err
	}
	if err != nil {
		return 0, fmt.Errorf("seek %s: %w", endpointID, err)
	}
	return seq - 1, nil
}

// PollSeqOfEvent returns the sequence number just before a polling
// endpoint's message of eventID: the cursor that replays from it.
func (q *Q) PollSeqOfEvent(ctx context.Context, endpointID, eventID string) (int64, error) {
	var seq int64
	err := q.queryRow(ctx, `SELECT seq FROM hookd_poll_messages WHERE endpoint_id = $1 AND event_id = $2`, endpointID, eventID).Scan(&seq)
	if NotFound(err) {
		return 0, apperr.New(apperr.Invalid, "event_id %q: endpoint %s has no message of that event (never sent to it, or past retention)", eventID, endpointID)
	}
	if err != nil {
		return 0, fmt.Errorf("seek %s: %w", endpointID, err)
	}
	return seq - 1, nil
}

// AppendPollMessages gives each message its endpoint's next sequence
// numbers (in the order given) and writes them, inside the fanout's
// transaction. The endpoints' counters are taken in id order (two fanouts
// never wait on each other in a cycle), and each counter's row lock,
// held until commit, makes the messages of one endpoint commit in their
// numbers' order: a reader past seq n never misses a later commit of a
// smaller one. On PostgreSQL it notifies PollChannel, delivered at commit.
func (q *Q) AppendPollMessages(ctx context.Context, msgs []PollMessage) error {
	if len(msgs) == 0 {
		return nil
	}
	count := map[string]int64{}
	for _, m := range msgs {
		count[m.EndpointID]++
	}
	ids := make([]string, 0, len(count))
	for id := range count {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	next := map[string]int64{}
	for _, id := range ids {
		var last int64
		err := q.queryRow(ctx, `UPDATE hookd_poll_endpoints SET last_seq = last_seq + $2 WHERE endpoint_id = $1 RETURNING last_seq`, id, count[id]).Scan(&last)
		if NotFound(err) {
			continue // deleted meanwhile: its messages go nowhere
		}
		if err != nil {
			return fmt.Errorf("poll sequence of %s: %w", id, err)
		}
		next[id] = last - count[id] + 1
	}
	const per = 5
	var b strings.Builder
	args := make([]any, 0, per*len(msgs))
	b.WriteString(`INSERT INTO hookd_poll_messages (endpoint_id, seq, id, event_id, created_at) VALUES `)
	for i := range msgs {
		m := &msgs[i]
		seq, ok := next[m.EndpointID]
		if !ok {
			continue
		}
		m.Seq, next[m.EndpointID] = seq, seq+1
		if len(args) > 0 {
			b.WriteString(", ")
		}
		n := len(args)
		fmt.Fprintf(&b, "($%d, $%d, $%d, $%d, $%d)", n+1, n+2, n+3, n+4, n+5)
		args = append(args, m.EndpointID, m.Seq, m.ID, m.EventID, m.CreatedAt)
	}
	if len(args) == 0 {
		return nil
	}
	b.WriteString(` ON CONFLICT (endpoint_id, event_id) DO NOTHING`)
	if _, err := q.exec(ctx, b.String(), args...); err != nil {
		return fmt.Errorf("write poll messages: %w", err)
	}
	return q.db.d.notifyPollers(ctx, q, strings.Join(ids, ","))
}

// Polled is one message read for a poll: its number and id, the event
// (nil when pruned) and the owner as the event's fanout saw it (the
// envelope's attributes).
type Polled struct {
	Seq   int64
	ID    string
	Event *event.Event
	Owner *owner.Owner
}

// ReadPollMessages reads up to limit of a polling endpoint's messages
// after seq, in order: one range read of the primary key, with each
// message's event and owner.
func (q *Q) ReadPollMessages(ctx context.Context, endpointID string, after int64, limit int) ([]*Polled, error) {
	out, err := collect(ctx, q, scanPolled, `SELECT m.seq, m.id, m.event_id, o.id, o.profile, COALESCE(ev.owner_attributes, o.attributes), o.created_at,
			ev.id, ev.type, ev.subject, ev.occurred_at, ev.data, ev.tenant, ev.created_at
		FROM hookd_poll_messages m
		JOIN hookd_endpoints e ON e.id = m.endpoint_id
		JOIN hookd_owners o ON o.id = e.owner_id
		LEFT JOIN hookd_events ev ON ev.id = m.event_id
		WHERE m.endpoint_id = $1 AND m.seq > $2 ORDER BY m.seq LIMIT $3`, endpointID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("read poll messages of %s: %w", endpointID, err)
	}
	return out, nil
}

func scanPolled(r row) (*Polled, error) {
	var (
		p                            Polled
		o                            owner.Owner
		eventID, attrs               string
		oCreated                     int64
		evID, evType, evSubject, evT *string
		evOccurred, evCreated        *int64
		evData                       []byte
	)
	if err := r.Scan(&p.Seq, &p.ID, &eventID, &o.ID, &o.Profile, &attrs, &oCreated, &evID, &evType, &evSubject, &evOccurred, &evData, &evT, &evCreated); err != nil {
		return nil, err
	}
	o.CreatedAt = fromTS(oCreated)
	if err := json.Unmarshal([]byte(attrs), &o.Attributes); err != nil {
		return nil, fmt.Errorf("owner %s attributes: %w", o.ID, err)
	}
	p.Owner = &o
	if evID != nil {
		p.Event = &event.Event{ID: *evID, OwnerID: o.ID, Type: *evType, Subject: *evSubject, OccurredAt: fromTS(*evOccurred), Data: evData, Tenant: *evT, CreatedAt: fromTS(*evCreated)}
	}
	return &p, nil
}

// PrunePollMessages deletes up to limit poll messages written before
// cutoff (unix microseconds): the deliveries' retention.
func (q *Q) PrunePollMessages(ctx context.Context, cutoff int64, limit int) (int64, error) {
	n, err := q.exec(ctx, `DELETE FROM hookd_poll_messages WHERE (endpoint_id, seq) IN (SELECT endpoint_id, seq FROM hookd_poll_messages WHERE created_at < $1 ORDER BY created_at LIMIT $2)`, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("prune poll messages: %w", err)
	}
	return n, nil
}
