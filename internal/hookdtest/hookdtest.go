// Package hookdtest gives this module's tests a hookd with its internals
// at hand: an *app.App (internal/app, the constructor package hookd and
// the command share), whose fields are the store, delivery service, ops
// and River client.
package hookdtest

import (
	"context"

	"github.com/hookd/hookd"
	"github.com/hookd/hookd/internal/app"
	"github.com/hookd/hookd/internal/event"
)

// Hookd is a running hookd and its parts.
type Hookd struct {
	*app.App
}

// PublishTx publishes evs, given as a library user gives them (package
// hookd's Event), inside tx: what hookd.Hookd's PublishTx does.
func (h Hookd) PublishTx(ctx context.Context, tx any, evs ...hookd.Event) ([]string, error) {
	return h.App.PublishTx(ctx, tx, internal(evs))
}

// Publish is [Hookd.PublishTx] in a transaction of its own.
func (h Hookd) Publish(ctx context.Context, evs ...hookd.Event) ([]string, error) {
	return h.App.Publish(ctx, internal(evs))
}

func internal(evs []hookd.Event) []*event.Event {
	in := make([]*event.Event, len(evs))
	for i, e := range evs {
		in[i] = &event.Event{OwnerID: e.Owner, Type: e.Type, Subject: e.Subject, Data: e.Data, OccurredAt: e.OccurredAt, Tenant: e.Tenant, IdempotencyKey: e.IdempotencyKey}
	}
	return in
}
