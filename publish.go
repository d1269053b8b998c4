package hookd

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hookd/hookd/internal/event"
)

// Event is a fact your application publishes once; hookd sends it to every
// endpoint of Owner subscribed to Type.
type Event struct {
	// ID is set by hookd (evt_…): receivers see it as the webhook-id and
	// dedupe on it. Publish ignores a value given.
	ID string
	// Owner receives the event: its endpoints whose globs match Type.
	Owner   string
	Type    string
	Subject string
	// Data is the JSON payload (nil: {}). Keep it thin: ids and what
	// changed; receivers fetch the rest from your API.
	Data json.RawMessage
	// OccurredAt defaults to the time of publishing.
	OccurredAt time.Time
	// Tenant is who caused the event on a multi-tenant platform (the kwork
	// profile's envelope carries it).
	Tenant string
	// IdempotencyKey: publishing the same key twice returns the first id.
	IdempotencyKey string
}

func publicEvent(ev *event.Event) Event {
	return Event{ID: ev.ID, Owner: ev.OwnerID, Type: ev.Type, Subject: ev.Subject, Data: ev.Data, OccurredAt: ev.OccurredAt, Tenant: ev.Tenant, IdempotencyKey: ev.IdempotencyKey}
}

// internal is e as the delivery service publishes it (its ID left to hookd).
func (e Event) internal() *event.Event {
	return &event.Event{OwnerID: e.Owner, Type: e.Type, Subject: e.Subject, Data: e.Data, OccurredAt: e.OccurredAt, Tenant: e.Tenant, IdempotencyKey: e.IdempotencyKey}
}

func internalEvents(evs []Event) []*event.Event {
	in := make([]*event.Event, len(evs))
	for i, e := range evs {
		in[i] = e.internal()
	}
	return in
}

// PublishTx publishes events inside your transaction on hookd's database: a
// pgx.Tx on PostgreSQL, a *sql.Tx on SQLite. The events and their fanout
// jobs commit with your business change, or roll back with it: a rollback
// sends nothing, a commit will be delivered. It returns the event ids.
func (h *Hookd) PublishTx(ctx context.Context, tx any, evs ...Event) ([]string, error) {
	return h.a.PublishTx(ctx, tx, internalEvents(evs))
}

// Publish publishes events in a transaction of its own.
func (h *Hookd) Publish(ctx context.Context, evs ...Event) ([]string, error) {
	return h.a.Publish(ctx, internalEvents(evs))
}
