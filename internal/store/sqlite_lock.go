package store

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// A hookd process that opens an SQLite file holds a shared lock on the
// file beside it named FILE.lock for as long as it has the database open;
// `hookd restore` takes the exclusive lock. So a restore never writes
// under a running hookd (or a one-shot command such as `hookd apikey
// create`), and no hookd opens the file while a restore writes it.
//
// A lock file of its own, not a lock on the database: SQLite holds POSIX
// record locks on the database, and a process that closed any other
// descriptor of that file would drop them all.

// ErrLive is returned when an SQLite database is open in a running hookd.
var ErrLive = errors.New("the database is open in a running hookd")

// ErrRestoring is returned when hookd opens an SQLite database that a
// restore is writing.
var ErrRestoring = errors.New("a restore is writing the database")

// lockPath is the lock file of the SQLite database at path.
func lockPath(path string) string { return path + ".lock" }

// fileLock is a held lock on a lock file; Release lets it go.
type fileLock struct{ f *os.File }

func (l *fileLock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	return l.f.Close() // closing the descriptor releases its flock
}

// lockShared takes the shared lock a hookd holds on the database at path
// while it has it open.
func lockShared(path string) (*fileLock, error) {
	l, err := lockFile(lockPath(path), false)
	if errors.Is(err, errLocked) {
		return nil, fmt.Errorf("open sqlite %s: %w (wait for `hookd restore` to finish)", path, ErrRestoring)
	}
	return l, err
}

// lockExclusive takes the lock a restore holds on the database at path:
// it fails with ErrLive while any hookd has the database open.
func lockExclusive(path string) (*fileLock, error) {
	l, err := lockFile(lockPath(path), true)
	if errors.Is(err, errLocked) {
		return nil, fmt.Errorf("%s: %w (it holds %s): stop it, and every hookd command using this file, first", path, ErrLive, lockPath(path))
	}
	return l, err
}

var errLocked = errors.New("locked")

// inMemory reports whether an SQLite path names an in-memory database (no
// file, so no lock and no checkpoints).
func inMemory(path string) bool {
	return path == "" || path == ":memory:" || strings.Contains(path, "mode=memory")
}
