package e2e_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/hookd/hookd"
	"github.com/hookd/hookd/internal/dbtest"
)

// TestPublishTxIsAnOutbox: an event published inside the caller's
// transaction exists if and only if that transaction commits.
func TestPublishTxIsAnOutbox(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		rc := newReceiver(t)
		b.registerType("order.placed")
		ep := b.endpoint(rc.URL, "order.*")
		ctx := context.Background()
		ev := hookd.Event{Owner: "acme", Type: "order.placed", Subject: "order://1", Data: []byte(`{"total":5}`)}

		// The business change and the event roll back together.
		errBusiness := errors.New("payment declined")
		err := inAppTx(t, b, func(tx any) error {
			if _, err := b.h.PublishTx(ctx, tx, ev); err != nil {
				return err
			}
			return errBusiness
		})
		if !errors.Is(err, errBusiness) {
			t.Fatalf("rollback path: %v", err)
		}
		if c := counts(t, b); c.events != 0 {
			t.Fatalf("a rolled-back transaction left %d events", c.events)
		}

		// Committed: delivered.
		var ids []string
		if err := inAppTx(t, b, func(tx any) error {
			var err error
			ids, err = b.h.PublishTx(ctx, tx, ev)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		got := rc.waitFor(t, 1, wait)
		if got[0].Header.Get("webhook-id") != ids[0] {
			t.Fatalf("delivered %s, published %s", got[0].Header.Get("webhook-id"), ids[0])
		}
		verify(t, ep.Secret, got[0])

		// A transaction of the wrong kind is refused with a clear error.
		if _, err := b.h.PublishTx(ctx, "not a tx", ev); err == nil {
			t.Fatal("PublishTx accepted a non-transaction")
		}
	})
}

// inAppTx runs f in a transaction the way an application would: on its own
// connection to hookd's database, committing when f returns nil.
func inAppTx(t *testing.T, b *bundle, f func(tx any) error) error {
	t.Helper()
	ctx := context.Background()
	if pool := b.h.DB.Pool(); pool != nil {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return f(tx) })
	}
	tx, err := b.h.DB.SQLDB().BeginTx(ctx, &sql.TxOptions{})
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}
