package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestCheckpointer: a SQLite file hookd opens checkpoints its WAL from a
// connection of its own. The main connection checkpoints itself only past
// walSafetyPages; the checkpointer's PASSIVE checkpoints run beside the
// writer (writes in flight meanwhile all succeed), copy the whole WAL once
// the writes pause, and the next write then starts the WAL from its
// beginning, so the file does not grow without bound.
func TestCheckpointer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := Open(ctx, Config{URL: "sqlite:" + filepath.Join(t.TempDir(), "ck.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.ckpt == nil {
		t.Fatal("no checkpointer for a SQLite file")
	}
	var auto int
	if err := db.sqlDB.QueryRowContext(ctx, `PRAGMA wal_autocheckpoint`).Scan(&auto); err != nil || auto != walSafetyPages {
		t.Fatalf("main connection's wal_autocheckpoint = %d (%v); want %d", auto, err, walSafetyPages)
	}
	if _, err := db.sqlDB.ExecContext(ctx, `CREATE TABLE ck (n INTEGER, pad TEXT)`); err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 2000)
	write := func(from, n int) error {
		for i := from; i < from+n; i++ {
			if _, err := db.sqlDB.ExecContext(ctx, `INSERT INTO ck (n, pad) VALUES ($1, $2)`, i, pad); err != nil {
				return err
			}
		}
		return nil
	}
	// Far more than SQLite's default 1,000 pages, far fewer than the
	// backstop.
	if err := write(0, 3000); err != nil {
		t.Fatal(err)
	}
	// Checkpoints beside a writer: neither side fails.
	var wg sync.WaitGroup
	var werr error
	wg.Go(func() { werr = write(3000, 500) })
	for range 20 {
		if _, _, err := db.ckpt.checkpoint(ctx); err != nil {
			t.Fatalf("checkpoint beside a writer: %v", err)
		}
	}
	wg.Wait()
	if werr != nil {
		t.Fatalf("write beside checkpoints: %v", werr)
	}
	wal, copied, err := db.ckpt.checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if wal <= 0 || copied != wal {
		t.Fatalf("with the writes paused: WAL of %d pages, %d copied; want all", wal, copied)
	}
	if err := write(3500, 1); err != nil {
		t.Fatal(err)
	}
	if wal, _, err = db.ckpt.checkpoint(ctx); err != nil || wal > 10 {
		t.Fatalf("after a caught-up checkpoint, one write left a WAL of %d pages (%v); want it started again", wal, err)
	}
	var n int
	if err := db.sqlDB.QueryRowContext(ctx, `SELECT count(*) FROM ck`).Scan(&n); err != nil || n != 3501 {
		t.Fatalf("rows = %d (%v); want 3501", n, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCheckpointWAL: CheckpointWAL copies the whole WAL with the writes
// paused, so the next write starts it from its beginning: from the
// checkpointer's connection on a file hookd opened, and from the
// database's own on one wrapped with FromSQL (no checkpointer), as
// retention's pass between its batches.
func TestCheckpointWAL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	opened, err := Open(ctx, Config{URL: "sqlite:" + filepath.Join(t.TempDir(), "ck.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer opened.Close()
	raw, err := sql.Open(CachingSQLiteDriver, "file:"+filepath.Join(t.TempDir(), "raw.db")+"?_pragma=journal_mode(WAL)&_pragma=wal_autocheckpoint(0)")
	if err != nil {
		t.Fatal(err)
	}
	raw.SetMaxOpenConns(1)
	defer raw.Close()
	for name, db := range map[string]*DB{"opened": opened, "FromSQL": FromSQL(raw, nil)} {
		if _, err := db.sqlDB.ExecContext(ctx, `CREATE TABLE ck (n INTEGER, pad TEXT)`); err != nil {
			t.Fatal(err)
		}
		pad := strings.Repeat("x", 2000)
		for i := range 1000 {
			if _, err := db.sqlDB.ExecContext(ctx, `INSERT INTO ck (n, pad) VALUES ($1, $2)`, i, pad); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.CheckpointWAL(ctx); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := db.sqlDB.ExecContext(ctx, `INSERT INTO ck (n, pad) VALUES (-1, '')`); err != nil {
			t.Fatal(err)
		}
		var busy, wal, copied int
		if err := db.sqlDB.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &wal, &copied); err != nil || wal > 10 {
			t.Errorf("%s: after CheckpointWAL one write left a WAL of %d pages (%v); want it started again", name, wal, err)
		}
	}
}
