package transform

import "sync"

// cache holds compiled code keyed by the code itself (Go's map hashes it
// with a per-process seed, and equal keys are compared in full, so two
// texts never share an entry). An edited filter or script is a new key;
// the old entry goes when the cache is full and is emptied (at most max
// entries: code no endpoint uses any more does not stay forever).
type cache[T any] struct {
	mu  sync.RWMutex
	m   map[string]entry[T]
	max int
}

type entry[T any] struct {
	v   T
	err error
}

func newCache[T any](limit int) cache[T] { return cache[T]{m: map[string]entry[T]{}, max: limit} }

// get returns code's compiled form, compiling it once. A compile error is
// cached too: code that does not compile is asked for again at every
// event until its endpoint is edited.
func (c *cache[T]) get(code string, compile func(string) (T, error)) (T, error) {
	c.mu.RLock()
	e, ok := c.m[code]
	c.mu.RUnlock()
	if ok {
		return e.v, e.err
	}
	v, err := compile(code)
	c.mu.Lock()
	if len(c.m) >= c.max {
		clear(c.m)
	}
	c.m[code] = entry[T]{v, err}
	c.mu.Unlock()
	return v, err
}
