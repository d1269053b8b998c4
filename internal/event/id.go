package event

import (
	"crypto/rand"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

var (
	idMu      sync.Mutex
	idEntropy = ulid.Monotonic(rand.Reader, 0)
	idLastMS  uint64 // the millisecond of the last id made
)

// NewID returns prefix + a ULID: unguessable, and sortable by creation time.
// Within one process ids strictly increase in the order they were made,
// even when callers pass times out of order (two goroutines read the clock,
// then take the lock the other way round; a test passes a fixed time): an
// id never carries a millisecond before the last one's, so the monotonic
// entropy, which starts afresh on each new millisecond, only ever counts up.
func NewID(prefix string, now time.Time) string {
	idMu.Lock()
	defer idMu.Unlock()
	idLastMS = max(idLastMS, ulid.Timestamp(now))
	return prefix + ulid.MustNew(idLastMS, idEntropy).String()
}
