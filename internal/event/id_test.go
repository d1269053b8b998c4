package event_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/event"
)

// TestNewIDIncreases: ids made one after another sort in the order they
// were made, also when the times passed go back and forth (lists order by
// created_at, then id, so two rows of one time must keep their order).
// Unclamped, each change of millisecond drew fresh entropy: an id made at
// t0 after one made at t1 sorted before it, and before the earlier t0 id
// half the time.
func TestNewIDIncreases(t *testing.T) {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	t1 := t0.Add(time.Hour)
	prev := event.NewID("ep_", t0)
	for i := range 200 {
		at := t0
		if i%2 == 0 {
			at = t1
		}
		id := event.NewID("ep_", at)
		if !strings.HasPrefix(id, "ep_") || len(id) != len("ep_")+26 {
			t.Fatalf("id %q: want ep_ and 26 characters", id)
		}
		if id <= prev {
			t.Fatalf("id %d (%s) = %s, not after %s", i, at.Format(time.TimeOnly), id, prev)
		}
		prev = id
	}
}
