//go:build !hookdtest

package hookstest

import (
	"os"
	"testing"

	"github.com/hookd/hookd/internal/delivery"
)

// Set ends the test: this build has no hooks to install (see the package
// comment). Under CI it fails, else it skips.
func Set(t testing.TB, _ *delivery.Service, _ *delivery.Hooks) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(why)
	}
	t.Skip(why)
}
