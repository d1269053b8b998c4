package store

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"time"
)

// SQLite's WAL checkpoints, off the writers' path. By default the
// connection whose commit makes the WAL reach 1,000 pages copies the WAL
// into the database file and syncs both, there and then (about 4 MB, 10–20
// ms on a virtio disk), and hookd has one connection: every publish, fetch
// and attempt record waits for it. With 32 clients publishing one event
// each that was the publish request's p99 (26–28 ms against a p50 of 3.5;
// without checkpoints 13–14 ms). So a database hookd opens gets a second
// connection of its own that checkpoints in the background (PASSIVE: it
// copies what the WAL holds beside the writer and never blocks it), and the
// main connection checkpoints itself only past walSafetyPages, should the
// background fall that far behind (or be unable to open). The next write
// after a checkpoint that caught up starts the WAL from its beginning again,
// so the file stays as small as before.

// checkpointEvery is how often the background checkpointer looks.
const checkpointEvery = time.Second

// walSafetyPages is the main connection's wal_autocheckpoint with a
// background checkpointer (SQLite's default is 1,000 pages): a backstop,
// not the rule.
const walSafetyPages = 16384

// checkpointer checkpoints one SQLite file's WAL from a connection of its own.
type checkpointer struct {
	db   *sql.DB
	log  *slog.Logger
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// startCheckpointer opens the checkpointer's connection to path, raises
// main's wal_autocheckpoint to walSafetyPages and checkpoints every
// checkpointEvery until stopped. It returns nil, and changes nothing, for
// an in-memory database or when its connection cannot be opened (main then
// checkpoints itself as SQLite does by default).
func startCheckpointer(ctx context.Context, main *sql.DB, path string, log *slog.Logger) *checkpointer {
	if inMemory(path) {
		return nil
	}
	db, err := sql.Open(CachingSQLiteDriver, "file:"+(&url.URL{Path: path}).EscapedPath()+"?_pragma=busy_timeout(10000)")
	if err == nil {
		db.SetMaxOpenConns(1)
		err = db.PingContext(ctx)
	}
	if err == nil {
		_, err = main.ExecContext(ctx, fmt.Sprintf("PRAGMA wal_autocheckpoint = %d", walSafetyPages))
	}
	if err != nil {
		log.Warn("sqlite: no background checkpointer; commits checkpoint the WAL themselves", "error", err)
		if db != nil {
			_ = db.Close()
		}
		return nil
	}
	c := &checkpointer{db: db, log: log, stop: make(chan struct{}), done: make(chan struct{})}
	go c.loop()
	return c
}

func (c *checkpointer) loop() {
	defer close(c.done)
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			if _, _, err := c.checkpoint(context.Background()); err != nil {
				c.log.Warn("sqlite: background checkpoint", "error", err)
			}
		}
	}
}

// checkpoint runs one PASSIVE checkpoint: walPages is the WAL's size in
// pages, copied how many of them are now in the database file (-1, -1
// when the file is not in WAL mode).
func (c *checkpointer) checkpoint(ctx context.Context) (walPages, copied int, err error) {
	var busy int
	err = c.db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &walPages, &copied)
	return walPages, copied, err
}

// close stops the checkpointer and closes its connection.
func (c *checkpointer) close() error {
	c.once.Do(func() { close(c.stop) })
	<-c.done
	return c.db.Close()
}

// CheckpointWAL copies the WAL into the SQLite file now (PASSIVE: beside
// any writer, blocking none), from the checkpointer's connection, or from
// db's own where it has none (a database opened with FromSQL). A no-op on
// PostgreSQL and an in-memory SQLite.
//
// Retention calls it between its delete batches. A pass writes the WAL
// faster than the background checkpointer, a second apart, can copy it
// with the WAL at rest: each of its checkpoints ends behind the writer, so
// the WAL never starts over, and at walSafetyPages a batch's own commit
// ran the checkpoint (and its fsync of the file) while it held the
// writer: one batch in about 70 took 65–130 ms instead of 7, at 5 M
// deliveries (docs/performance.md). Run in the pass's rest, with no batch
// writing, the checkpoint catches up and the next batch starts the WAL
// from its beginning.
func (db *DB) CheckpointWAL(ctx context.Context) error {
	if db.Backend != SQLite {
		return nil
	}
	if db.ckpt != nil {
		_, _, err := db.ckpt.checkpoint(ctx)
		return err
	}
	if db.sqlDB == nil {
		return nil
	}
	var busy, walPages, copied int
	return db.sqlDB.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &walPages, &copied)
}
