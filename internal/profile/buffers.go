package profile

import "sync"

// Buffers recycles request bodies between attempts: a body is about as
// large as its event's data, and making one per attempt was most of the hot
// path's garbage. Get returns an empty buffer; Put takes it back once
// nothing reads it any more (for an HTTP request, once the transport has
// closed the body).
var Buffers bufferPool

type bufferPool struct{ p sync.Pool }

// maxPooledBody keeps an occasional very large body from pinning memory.
const maxPooledBody = 64 << 10

func (bp *bufferPool) Get() *[]byte {
	if b, ok := bp.p.Get().(*[]byte); ok {
		*b = (*b)[:0]
		return b
	}
	b := make([]byte, 0, 2048)
	return &b
}

func (bp *bufferPool) Put(b *[]byte) {
	if cap(*b) > maxPooledBody {
		return
	}
	bp.p.Put(b)
}
