package openapi

import (
	"testing"

	"github.com/hookd/hookd/internal/ops"
)

// TestConflictsNameOps: the 409 table names declared ops only, so renaming
// an op cannot silently drop its documented 409.
func TestConflictsNameOps(t *testing.T) {
	t.Parallel()
	s := &ops.Service{}
	for name := range conflicts {
		if s.Op(name) == nil {
			t.Errorf("conflicts names %q, which no op declares", name)
		}
	}
}
