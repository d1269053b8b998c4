// Package gctune gives the Go garbage collector a heap floor: while the
// live heap is small, a collection waits until the heap reaches the floor
// instead of starting each time the heap doubles.
//
// With GOGC's default of 100 a collection starts whenever the heap has
// grown by as much as the last one left live. `hookd serve` holds little
// live data while it publishes (about 10 MB), so under load it collected
// hundreds of times a second, and single-event publishes spent a seventh
// of the process's CPU in the collector. A larger fixed GOGC cuts that but
// multiplies the memory of a process whose live heap is large as well. A
// floor raises only a small heap's target: after each collection the next
// is set to start at the floor, or at twice the live heap once that is
// more (GOGC 100 again), so a process whose live heap is past half the
// floor runs as it would without one.
package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// MaxPercent bounds the GOGC a floor sets, so that a nearly empty heap (a
// process just started) does not grow to many times itself.
const MaxPercent = 800

// Percent is the GOGC under which a heap left with live bytes by a
// collection starts the next one at floor bytes: at least 100 (the heap
// doubles), at most MaxPercent.
func Percent(live, floor uint64) int {
	if live == 0 || floor <= 2*live {
		return 100
	}
	return min(MaxPercent, int((floor-live)*100/live))
}

// liveMetric is the heap the last collection left live.
const liveMetric = "/gc/heap/live:bytes"

// Floor keeps a heap floor (see the package) until its Stop.
type Floor struct {
	floor uint64
	// tuned, if set, is told the GOGC set after each collection (tests).
	tuned func(percent int)

	mu      sync.Mutex
	was     int // the GOGC Start found, put back by Stop
	set     int // the GOGC set now
	stopped bool
	sample  []metrics.Sample
}

// Start keeps a heap floor of floor bytes, retuned after every collection,
// over the GOGC it finds (the environment's, or 100): the floor only ever
// raises it. For a floor of 0, or with collection off (GOGC=off), it
// changes nothing and returns nil, whose Stop does nothing.
func Start(floor uint64) *Floor { return start(floor, nil) }

func start(floor uint64, tuned func(int)) *Floor {
	was := debug.SetGCPercent(100)
	debug.SetGCPercent(was)
	if floor == 0 || was < 0 {
		return nil
	}
	f := &Floor{floor: floor, tuned: tuned, was: was, set: was, sample: []metrics.Sample{{Name: liveMetric}}}
	f.tune()
	f.arm()
	return f
}

// Stop puts back the GOGC Start found and tunes no more.
func (f *Floor) Stop() {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.stopped {
		f.stopped = true
		debug.SetGCPercent(f.was)
	}
}

// sentinel is garbage whose finalizer runs once a collection has swept
// it: larger than the tiny allocator's 16-byte blocks, in which it would
// wait for its neighbours too.
type sentinel struct{ _ [32]byte }

// arm has the next collection call tune (in the finalizer goroutine) and
// arm again.
func (f *Floor) arm() {
	runtime.SetFinalizer(&sentinel{}, func(*sentinel) {
		if f.tune() {
			f.arm()
		}
	})
}

// tune sets GOGC for the live heap the last collection left; false once
// stopped.
func (f *Floor) tune() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return false
	}
	metrics.Read(f.sample)
	if f.sample[0].Value.Kind() != metrics.KindUint64 {
		return true
	}
	p := max(f.was, Percent(f.sample[0].Value.Uint64(), f.floor))
	if p != f.set {
		debug.SetGCPercent(p)
		f.set = p
	}
	if f.tuned != nil {
		f.tuned(p)
	}
	return true
}
