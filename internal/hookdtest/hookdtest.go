// Package hookdtest gives this module's tests a Hookd with its internals
// at hand: the public API plus the store, delivery service, ops and River client.
package hookdtest

import (
	"github.com/hookd/hookd"
	"github.com/hookd/hookd/internal/parts"
)

// Hookd is a *hookd.Hookd and its parts.
type Hookd struct {
	*hookd.Hookd
	*parts.Parts
}

// Wrap returns h with its parts.
func Wrap(h *hookd.Hookd) Hookd { return Hookd{h, parts.Of(h)} }
