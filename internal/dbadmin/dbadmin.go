// Package dbadmin is the database's maintenance for the hookd command, with
// no hookd running: applying and listing the migrations, and the online
// backup and restore of an SQLite file. It is the command's one way to the
// database besides a running hookd's ops, so the command needs nothing of
// the store's queries (the linter keeps it so: .golangci.yml).
package dbadmin

import (
	"context"
	"log/slog"
	"time"

	"github.com/hookd/hookd/internal/store"
)

type (
	// Migration is one of River's or hookd's migrations and its state.
	Migration = store.Migration
	// BackupInfo describes an SQLite backup: its schema version, sizes and
	// counts.
	BackupInfo = store.BackupInfo
)

// Migrate applies hookd's and River's pending migrations to the database
// url names (idempotent; safe to run concurrently).
func Migrate(ctx context.Context, url, schema string, log *slog.Logger) (err error) {
	return MigratePartitioned(ctx, url, schema, 0, log)
}

// MigratePartitioned is Migrate that also partitions the event and
// delivery tables by time, partitionInterval each, on PostgreSQL (0: as
// Migrate; store.Config.PartitionInterval).
func MigratePartitioned(ctx context.Context, url, schema string, partitionInterval time.Duration, log *slog.Logger) (err error) {
	db, err := store.Open(ctx, store.Config{URL: url, Schema: schema, Log: log, PartitionInterval: partitionInterval})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := db.Close(); err == nil {
			err = cerr
		}
	}()
	return db.Migrate(ctx)
}

// Migrations lists the database's migrations, applied and pending,
// changing nothing.
func Migrations(ctx context.Context, url, schema string, log *slog.Logger) (_ []Migration, err error) {
	db, err := store.Open(ctx, store.Config{URL: url, Schema: schema, Log: log})
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := db.Close(); err == nil {
			err = cerr
		}
	}()
	return db.Migrations(ctx)
}

// BackupSQLite copies the live SQLite database at src to dst, consistent
// while hookd runs.
func BackupSQLite(ctx context.Context, src, dst string) (*BackupInfo, error) {
	return store.BackupSQLite(ctx, src, dst)
}

// RestoreSQLite replaces the SQLite database at to with the backup from,
// after check approves the backup's description.
func RestoreSQLite(ctx context.Context, from, to string, check func(*BackupInfo) error) (*BackupInfo, error) {
	return store.RestoreSQLite(ctx, from, to, check)
}
