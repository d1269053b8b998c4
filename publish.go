package hookd

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/store"
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

// PublishTx publishes events inside your transaction on hookd's database: a
// pgx.Tx on PostgreSQL, a *sql.Tx on SQLite. The events and their fanout
// jobs commit with your business change, or roll back with it: a rollback
// sends nothing, a commit will be delivered. It returns the event ids.
func (h *Hookd) PublishTx(ctx context.Context, tx any, evs ...Event) ([]string, error) {
	q, err := h.db.WithTx(tx)
	if err != nil {
		return nil, err
	}
	return h.publish(ctx, q, evs)
}

// Publish publishes events in a transaction of its own.
func (h *Hookd) Publish(ctx context.Context, evs ...Event) ([]string, error) {
	var ids []string
	err := h.db.InTx(ctx, store.TxOptions{}, func(q *store.Q) error {
		var err error
		ids, err = h.publish(ctx, q, evs)
		return err
	})
	return ids, err
}

func (h *Hookd) publish(ctx context.Context, q *store.Q, evs []Event) ([]string, error) {
	if err := ownersExist(ctx, q, evs); err != nil {
		return nil, err
	}
	in := make([]*event.Event, len(evs))
	for i, e := range evs {
		in[i] = &event.Event{OwnerID: e.Owner, Type: e.Type, Subject: e.Subject, Data: e.Data, OccurredAt: e.OccurredAt, Tenant: e.Tenant, IdempotencyKey: e.IdempotencyKey}
	}
	out, err := h.delivery.Publish(ctx, delivery.Request{Tx: q, Events: in})
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(out))
	for i, p := range out {
		ids[i] = p.ID
	}
	return ids, nil
}

// ownersExist refuses events of an owner hookd does not know, with what to
// do about it, rather than the database's foreign-key error.
func ownersExist(ctx context.Context, q *store.Q, evs []Event) error {
	seen := map[string]bool{}
	for i, e := range evs {
		if seen[e.Owner] {
			continue
		}
		seen[e.Owner] = true
		if _, err := q.GetOwner(ctx, e.Owner); apperr.IsNotFound(err) {
			return apperr.New(apperr.Invalid, "events[%d]: owner %q does not exist: create it first (CreateOwner, or CreateAPIKey)", i, e.Owner)
		} else if err != nil {
			return fmt.Errorf("events[%d]: look up owner %q: %w", i, e.Owner, err)
		}
	}
	return nil
}
