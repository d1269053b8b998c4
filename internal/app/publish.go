package app

import (
	"context"
	"fmt"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/store"
)

// PublishTx publishes events inside the caller's transaction on hookd's
// database: a pgx.Tx on PostgreSQL, a *sql.Tx on SQLite. It returns the
// event ids.
func (a *App) PublishTx(ctx context.Context, tx any, evs []*event.Event) ([]string, error) {
	q, err := a.DB.WithTx(tx)
	if err != nil {
		return nil, err
	}
	return a.publish(ctx, q, evs)
}

// Publish publishes events in a transaction of its own.
func (a *App) Publish(ctx context.Context, evs []*event.Event) ([]string, error) {
	var ids []string
	err := a.DB.InTx(ctx, store.TxOptions{}, func(q *store.Q) error {
		var err error
		ids, err = a.publish(ctx, q, evs)
		return err
	})
	return ids, err
}

func (a *App) publish(ctx context.Context, q *store.Q, evs []*event.Event) ([]string, error) {
	if err := ownersExist(ctx, q, evs); err != nil {
		return nil, err
	}
	out, err := a.Delivery.Publish(ctx, delivery.Request{Tx: q, Events: evs})
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
func ownersExist(ctx context.Context, q *store.Q, evs []*event.Event) error {
	seen := map[string]bool{}
	for i, e := range evs {
		if seen[e.OwnerID] {
			continue
		}
		seen[e.OwnerID] = true
		if _, err := q.GetOwner(ctx, e.OwnerID); apperr.IsNotFound(err) {
			return apperr.New(apperr.Invalid, "events[%d]: owner %q does not exist: create it first (CreateOwner, or CreateAPIKey)", i, e.OwnerID)
		} else if err != nil {
			return fmt.Errorf("events[%d]: look up owner %q: %w", i, e.OwnerID, err)
		}
	}
	return nil
}

// CreateOwner creates an owner with profile (empty: Config.DefaultProfile)
// and attrs. Creating an owner that exists is an error.
func (a *App) CreateOwner(ctx context.Context, id, profile string, attrs map[string]string) error {
	_, err := a.Ops.CreateOwner(ctx, id, profile, attrs)
	return err
}

// CreateAPIKey creates an API key of role ("admin", "publisher",
// "operator"; empty: admin) and returns it; it is shown only now.
func (a *App) CreateAPIKey(ctx context.Context, ownerID, role string) (string, error) {
	r, err := owner.ParseRole(role)
	if err != nil {
		return "", err
	}
	k, err := a.Ops.CreateKey(ctx, ownerID, r)
	if err != nil {
		return "", err
	}
	return k.Secret, nil
}
