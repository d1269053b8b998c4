package webhook

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"hash"
	"sync"
)

// macPool hands out HMAC-SHA256 states keyed once, so the signing hot path
// neither re-derives the key pads nor allocates a hash per call.
type macPool struct {
	pool sync.Pool
}

// macState is one pooled HMAC plus the scratch space for the signed prefix
// ("<id>.<ts>." or "<ts>.") and the sum.
type macState struct {
	mac    hash.Hash
	prefix []byte
	sum    [sha256.Size]byte
}

// maxPooledPrefix keeps a hostile, very long webhook-id from pinning a large
// buffer in the pool.
const maxPooledPrefix = 1 << 10

func newMACPool(key []byte) *macPool {
	key = bytes.Clone(key)
	p := &macPool{}
	p.pool.New = func() any {
		return &macState{mac: hmac.New(sha256.New, key), prefix: make([]byte, 0, 64)}
	}
	return p
}

// get returns a state whose prefix is empty; the caller appends the signed
// prefix, calls finish, and returns the state with put.
func (p *macPool) get() *macState {
	st := p.pool.Get().(*macState)
	st.prefix = st.prefix[:0]
	return st
}

func (p *macPool) put(st *macState) {
	if cap(st.prefix) > maxPooledPrefix {
		st.prefix = make([]byte, 0, 64)
	}
	p.pool.Put(st)
}

// finish computes HMAC(key, prefix || body) into st.sum.
func (st *macState) finish(body []byte) []byte {
	st.mac.Reset()
	st.mac.Write(st.prefix)
	st.mac.Write(body)
	return st.mac.Sum(st.sum[:0])
}
