package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"

	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
)

// Backup and restore of an SQLite database (`hookd backup`, `hookd
// restore`). A backup is an ordinary SQLite file written by VACUUM INTO: a
// consistent snapshot taken in one read transaction, while hookd keeps
// delivering on the live file. PostgreSQL is backed up with its own tools
// (docs/deploy.md).

// BackupInfo describes a backup file (or the database it came from).
type BackupInfo struct {
	Path  string
	Bytes int64
	// Hookd and River are the migration versions the file records.
	Hookd, River []int
	// HookdPending counts this binary's migrations the file lacks (hookd
	// serve or hookd migrate applies them after a restore).
	HookdPending int
	// Deliveries counts the file's deliveries by state (pending,
	// delivered, failed, …).
	Deliveries map[string]int
	// Sealed is one endpoint's sealed secret from the file, for a check
	// that the master key opens it; nil when the file has no endpoint.
	Sealed []byte
}

// Unfinished counts the deliveries neither delivered nor failed.
func (b *BackupInfo) Unfinished() int {
	n := 0
	for state, c := range b.Deliveries {
		if state != "delivered" && state != "failed" {
			n += c
		}
	}
	return n
}

// ErrNotBackup is returned for a file that is not a hookd backup.
var ErrNotBackup = errors.New("not a hookd backup")

// ErrNewerBackup is returned for a backup written by a newer hookd: it
// records migrations this binary does not know.
var ErrNewerBackup = errors.New("written by a newer hookd")

// BackupSQLite copies the live SQLite database at src to the new file
// dst, consistently, and checks the copy. It never overwrites dst, and on
// failure leaves no file behind.
func BackupSQLite(ctx context.Context, src, dst string) (_ *BackupInfo, err error) {
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no database at %s (no such file): check --db", src)
	} else if err != nil {
		return nil, fmt.Errorf("database %s: %w", src, err)
	}
	if err := mustNotExist(dst, "hookd backup never overwrites a file: choose a new name"); err != nil {
		return nil, err
	}
	lock, err := lockShared(src) // no restore may replace src while it is read
	if err != nil {
		return nil, err
	}
	defer lock.Release() //nolint:errcheck // closing a lock file we only read under
	db, err := OpenSQLite(ctx, src)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	if err := hasHookdTables(ctx, db, src); err != nil {
		return nil, err
	}
	partial := dst + ".partial"
	if err := mustNotExist(partial, "a backup to the same name is running, or one failed: remove it"); err != nil {
		return nil, err
	}
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, partial); err != nil {
		_ = os.Remove(partial) // whatever VACUUM left; the error to report is VACUUM's
		return nil, fmt.Errorf("backup %s: %w", src, err)
	}
	info, err := finishFile(ctx, partial, dst)
	if err != nil {
		_ = os.Remove(partial) // the check failed: no backup is better than a bad one
		return nil, err
	}
	return info, nil
}

// finishFile checks the written copy at tmp, makes it durable and gives it
// its name.
func finishFile(ctx context.Context, tmp, dst string) (*BackupInfo, error) {
	if err := syncFile(tmp); err != nil {
		return nil, err
	}
	info, err := InspectBackup(ctx, tmp)
	if err != nil {
		return nil, fmt.Errorf("checking the copy: %w", err)
	}
	if err := mustNotExist(dst, "it appeared while the copy was written"); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, dst); err != nil {
		return nil, err
	}
	info.Path = dst
	return info, syncDir(filepath.Dir(dst))
}

// sqliteMagic begins every SQLite database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// InspectBackup checks that path is a hookd backup this binary can
// restore (an SQLite file that passes integrity_check, with hookd's and
// River's tables, and no migration newer than this binary) and describes
// it. It opens the file read-only and changes nothing.
func InspectBackup(ctx context.Context, path string) (*BackupInfo, error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("backup %s: no such file: check --from", path)
	} else if err != nil {
		return nil, fmt.Errorf("backup %s: %w", path, err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("backup %s is a directory: %w", path, ErrNotBackup)
	}
	head := make([]byte, len(sqliteMagic))
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("backup %s: %w", path, err)
	}
	_, err = io.ReadFull(f, head)
	_ = f.Close() // read-only: nothing to flush
	if err != nil || !bytes.Equal(head, sqliteMagic) {
		return nil, fmt.Errorf("backup %s: %w: not an SQLite file (hookd backup writes one)", path, ErrNotBackup)
	}
	// immutable: no -wal or -shm beside the backup, no lock, no change.
	db, err := sql.Open(CachingSQLiteDriver, "file:"+(&url.URL{Path: path}).EscapedPath()+"?mode=ro&immutable=1")
	if err != nil {
		return nil, fmt.Errorf("backup %s: %w", path, err)
	}
	defer db.Close() //nolint:errcheck // read-only and immutable: nothing to flush or lose
	db.SetMaxOpenConns(1)
	var check string
	if err := db.QueryRowContext(ctx, `PRAGMA integrity_check(1)`).Scan(&check); err != nil {
		return nil, fmt.Errorf("backup %s is damaged: %w", path, err)
	}
	if check != "ok" {
		return nil, fmt.Errorf("backup %s is damaged (integrity_check: %s)", path, check)
	}
	if err := hasHookdTables(ctx, db, path); err != nil {
		return nil, err
	}
	info := &BackupInfo{Path: path, Bytes: st.Size(), Deliveries: map[string]int{}}
	if err := info.readMigrations(ctx, db); err != nil {
		return nil, err
	}
	if err := info.readDeliveries(ctx, db); err != nil {
		return nil, err
	}
	return info, nil
}

// hasHookdTables fails with ErrNotBackup unless db has hookd's and River's
// migration tables.
func hasHookdTables(ctx context.Context, db *sql.DB, path string) error {
	var n int
	err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('hookd_migrations', 'river_migration')`).Scan(&n)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if n != 2 {
		return fmt.Errorf("%s: %w: an SQLite file without hookd's tables (hookd_migrations, river_migration)", path, ErrNotBackup)
	}
	return nil
}

// readMigrations reads the file's migrations and fails with ErrNewerBackup
// when one is unknown to this binary.
func (b *BackupInfo) readMigrations(ctx context.Context, db *sql.DB) error {
	var err error
	if b.Hookd, err = sqlInts(ctx, db, `SELECT version FROM hookd_migrations ORDER BY version`); err != nil {
		return err
	}
	if b.River, err = sqlInts(ctx, db, `SELECT version FROM river_migration ORDER BY version`); err != nil {
		return err
	}
	ours, err := HookdMigrationVersions()
	if err != nil {
		return err
	}
	m, err := rivermigrate.New(riversqlite.New(db), nil)
	if err != nil {
		return err
	}
	var rivers []int
	for _, v := range m.AllVersions() {
		rivers = append(rivers, v.Version)
	}
	newHookd, newRiver := missingFrom(b.Hookd, ours), missingFrom(b.River, rivers)
	if len(newHookd) > 0 || len(newRiver) > 0 {
		return fmt.Errorf("backup %s was %w: it records hookd migrations %v and River migrations %v that this binary (hookd 1–%d, River 1–%d) does not know; restore it with the hookd that wrote it, or a newer one",
			b.Path, ErrNewerBackup, newHookd, newRiver, slices.Max(ours), slices.Max(rivers))
	}
	b.HookdPending = len(missingFrom(ours, b.Hookd))
	return nil
}

func (b *BackupInfo) readDeliveries(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `SELECT state, count(*) FROM hookd_deliveries GROUP BY state`)
	if err != nil {
		return fmt.Errorf("backup %s: deliveries: %w", b.Path, err)
	}
	defer rows.Close() //nolint:errcheck // rows.Err reports what went wrong reading
	for rows.Next() {
		var state string
		var n int
		if err := rows.Scan(&state, &n); err != nil {
			return err
		}
		b.Deliveries[state] = n
	}
	if err := rows.Err(); err != nil {
		return err
	}
	err = db.QueryRowContext(ctx, `SELECT secret_sealed FROM hookd_endpoints LIMIT 1`).Scan(&b.Sealed)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	return err
}

// RestoreSQLite writes the backup at from to a new database at to. It
// checks the backup first (InspectBackup, then check, e.g. that the master
// key opens its secrets), refuses while a hookd has the database open
// (ErrLive) and refuses to replace an existing database; on any refusal
// nothing is written.
func RestoreSQLite(ctx context.Context, from, to string, check func(*BackupInfo) error) (*BackupInfo, error) {
	info, err := InspectBackup(ctx, from)
	if err != nil {
		return nil, err
	}
	if err := check(info); err != nil {
		return nil, err
	}
	if err := restoreTarget(to); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o750); err != nil {
		return nil, err
	}
	lock, err := lockExclusive(to)
	if err != nil {
		return nil, err
	}
	defer lock.Release() //nolint:errcheck // the restore is written and synced before
	// A hookd may have created the file before the lock was taken.
	if err := restoreTarget(to); err != nil {
		return nil, err
	}
	tmp := to + ".restoring"
	if err := copyNew(from, tmp); err != nil {
		_ = os.Remove(tmp) // a partial copy is no database
		return nil, err
	}
	out, err := finishFile(ctx, tmp, to)
	if err != nil {
		_ = os.Remove(tmp)
		return nil, err
	}
	out.Sealed = info.Sealed
	return out, nil
}

// restoreTarget refuses a database path that is in use or exists: a
// restore writes only a new database. The -wal and -shm files count too:
// SQLite would replay a stale -wal into the restored file.
func restoreTarget(to string) error {
	for _, p := range []string{to, to + "-wal", to + "-shm"} {
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return err
		}
		if _, err := os.Stat(lockPath(to)); err == nil { // a hookd opened it: is one still there?
			l, err := lockExclusive(to)
			if err != nil {
				return err
			}
			if err := l.Release(); err != nil {
				return err
			}
		}
		return fmt.Errorf("%s exists: hookd restore writes only a new database; stop hookd and move %s (with its -wal and -shm files) aside, or restore to another path", p, to)
	}
	return nil
}

func mustNotExist(path, why string) error {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%s exists: %s", path, why)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// copyNew copies the file from to the new file to (mode 0600) and syncs it.
func copyNew(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close() //nolint:errcheck // read only: dst's Close is the one that matters
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		return errors.Join(err, dst.Close())
	}
	return dst.Close()
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// missingFrom returns the values of vs that all lacks.
func missingFrom(vs, all []int) []int {
	var out []int
	for _, v := range vs {
		if !slices.Contains(all, v) {
			out = append(out, v)
		}
	}
	return out
}

func sqlInts(ctx context.Context, db *sql.DB, query string) ([]int, error) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", query, err)
	}
	defer rows.Close() //nolint:errcheck // rows.Err reports what went wrong reading
	var out []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
