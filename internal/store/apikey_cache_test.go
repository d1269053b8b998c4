package store

import (
	"fmt"
	"testing"

	"github.com/hookd/hookd/internal/owner"
)

// TestKeyCacheBound: the key cache never holds more than keyCacheMax keys
// (past the bound it starts over), so a flood of distinct keys cannot grow
// a process's memory without end.
func TestKeyCacheBound(t *testing.T) {
	t.Parallel()
	var c keyCache
	for i := range keyCacheMax + 10 {
		c.remember(fmt.Appendf(nil, "hash-%d", i), owner.APIKey{ID: fmt.Sprint("key_", i)})
		if n := len(c.keys); n > keyCacheMax {
			t.Fatalf("%d keys remembered after %d; the bound is %d", n, i+1, keyCacheMax)
		}
	}
	if _, ok := c.keys[fmt.Sprintf("hash-%d", keyCacheMax+9)]; !ok {
		t.Fatal("the newest key is not remembered")
	}
}
