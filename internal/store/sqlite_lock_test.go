package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/store"
)

// TestRestoreLock: while hookd has an SQLite file open, the restore's lock
// is refused (ErrLive); once it is closed the lock is taken, and while it
// is held hookd refuses to open the file (ErrRestoring), until released.
func TestRestoreLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := dbtest.SQLite(t).URL
	db, err := store.Open(ctx, store.Config{URL: path})
	must(t, err)
	if _, err := store.LockForRestore(path); !errors.Is(err, store.ErrLive) {
		t.Errorf("restore lock on an open database: %v, want ErrLive", err)
	}
	second, err := store.Open(ctx, store.Config{URL: path}) // a one-shot command beside serve
	must(t, err)
	must(t, db.Close())
	if _, err := store.LockForRestore(path); !errors.Is(err, store.ErrLive) {
		t.Errorf("restore lock while a second opener remains: %v, want ErrLive", err)
	}
	must(t, second.Close())
	lock, err := store.LockForRestore(path)
	must(t, err)
	if db, err := store.Open(ctx, store.Config{URL: path}); !errors.Is(err, store.ErrRestoring) {
		if err == nil {
			_ = db.Close()
		}
		t.Errorf("open during a restore: %v, want ErrRestoring", err)
	}
	must(t, lock.Release())
	db, err = store.Open(ctx, store.Config{URL: path})
	must(t, err)
	must(t, db.Close())
}
