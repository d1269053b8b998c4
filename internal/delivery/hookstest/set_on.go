//go:build hookdtest

package hookstest

import (
	"testing"

	"github.com/hookd/hookd/internal/delivery"
)

// Set installs h (nil: none) in svc.
func Set(_ testing.TB, svc *delivery.Service, h *delivery.Hooks) { svc.SetHooks(h) }
