package event

import (
	"crypto/rand"
	"time"

	"github.com/oklog/ulid/v2"
)

// NewID returns prefix + a ULID: sortable by creation time, unguessable.
func NewID(prefix string, now time.Time) string {
	return prefix + ulid.MustNew(ulid.Timestamp(now), rand.Reader).String()
}
