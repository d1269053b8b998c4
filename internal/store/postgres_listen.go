package store

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// ListenPoll calls wake with the polling endpoints each PostgreSQL
// notification on PollChannel names (any process's fanout, at its
// commit), until ctx ends. On one connection of its own; when that
// connection breaks it calls lost (notifications may have been missed:
// wake every poll) and listens again after a second. On SQLite it returns
// at once: a fanout wakes its own process's polls (one process).
func (db *DB) ListenPoll(ctx context.Context, wake func(endpointIDs []string), lost func()) {
	db.d.listenPoll(ctx, wake, lost)
}

func (d pgDialect) listenPoll(ctx context.Context, wake func(endpointIDs []string), lost func()) {
	db := d.db
	for ctx.Err() == nil {
		err := db.listenPoll(ctx, wake)
		if ctx.Err() != nil {
			return
		}
		db.log.Warn("poll notifications: listening again in 1s", "error", err)
		lost()
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (db *DB) listenPoll(ctx context.Context, wake func([]string)) error {
	pooled, err := db.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	// The connection will have heard LISTEN: it goes back to no pool.
	conn := pooled.Hijack()
	defer conn.Close(context.WithoutCancel(ctx)) //nolint:errcheck // closing a listening connection on the way out
	if _, err := conn.Exec(ctx, `LISTEN `+PollChannel); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		wake(strings.Split(n.Payload, ","))
	}
}
