// Package parts reaches the internals of a *hookd.Hookd from inside this
// module: the hookd command and the tests use the delivery service, the
// ops and the store directly, while the public API keeps them unexported.
package parts

import (
	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/httpapi"
	"github.com/hookd/hookd/internal/ops"
	"github.com/hookd/hookd/internal/store"
)

// Parts are what a Hookd is built from.
type Parts struct {
	DB       *store.DB
	Delivery *delivery.Service
	Ops      *ops.Service
	// Jobs is the River client hookd inserts its jobs with: its own, or
	// the application's after UseRiver.
	Jobs store.JobClient
	API  *httpapi.Server
}

// Of returns the parts of h, a *hookd.Hookd. Package hookd sets it (an
// import of hookd is what gives the caller a Hookd in the first place).
var Of func(h any) *Parts
