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
)

// NewID returns prefix + a ULID: unguessable, and sortable by creation time.
// Within one process ids strictly increase (monotonic entropy), so ids made
// in the same millisecond still sort in the order they were made.
func NewID(prefix string, now time.Time) string {
	idMu.Lock()
	defer idMu.Unlock()
	return prefix + ulid.MustNew(ulid.Timestamp(now), idEntropy).String()
}
