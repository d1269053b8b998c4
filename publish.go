package hookd

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/store"
)

// Event is what a library user publishes.
type Event struct {
	// Owner receives the event (its endpoints whose globs match Type).
	Owner   string
	Type    string
	Subject string
	// Data is the JSON payload (nil: {}).
	Data       json.RawMessage
	OccurredAt time.Time
	Tenant     string
	// IdempotencyKey: publishing the same key twice returns the first id.
	IdempotencyKey string
}

// PublishTx publishes events inside the caller's transaction on hookd's
// database — a *sql.Tx on SQLite, a pgx.Tx on PostgreSQL. The events and
// their fanout jobs commit or roll back with the caller's business change.
// It returns the event ids.
func (h *Hookd) PublishTx(ctx context.Context, tx any, evs ...Event) ([]string, error) {
	q, err := h.DB.WithTx(tx)
	if err != nil {
		return nil, err
	}
	return h.publish(ctx, q, evs)
}

// Publish publishes events in a transaction of its own.
func (h *Hookd) Publish(ctx context.Context, evs ...Event) ([]string, error) {
	var ids []string
	err := h.DB.InTx(ctx, func(q *store.Q) error {
		var err error
		ids, err = h.publish(ctx, q, evs)
		return err
	})
	return ids, err
}

func (h *Hookd) publish(ctx context.Context, q *store.Q, evs []Event) ([]string, error) {
	in := make([]*event.Event, len(evs))
	for i, e := range evs {
		in[i] = &event.Event{OwnerID: e.Owner, Type: e.Type, Subject: e.Subject, Data: e.Data, OccurredAt: e.OccurredAt, Tenant: e.Tenant, IdempotencyKey: e.IdempotencyKey}
	}
	out, err := h.Engine.Publish(ctx, q, in)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(out))
	for i, p := range out {
		ids[i] = p.ID
	}
	return ids, nil
}
