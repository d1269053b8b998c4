package transform

import (
	"errors"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/dop251/goja"
)

// Why a run was stopped (the value goja's InterruptedError carries).
var (
	ErrTimeLimit = errors.New("stopped: the script ran longer than its time limit")
	ErrHeapLimit = errors.New("stopped: hookd's heap grew past the transformation's memory bound while the script ran")
)

// heapMetric is the Go heap's objects, live and not yet swept: what a
// script's allocations grow, whoever else allocates too.
const heapMetric = "/memory/classes/heap/objects:bytes"

// watchdog interrupts runs that outlive their deadline or during which the
// heap grew by more than heapLimit. goja has no heap limit of its own, so
// the heap is watched from outside: every tick (1 ms) while runs are in
// flight, and not at all otherwise (the goroutine ends after a quiet
// spell). What this bounds and what it does not is in
// docs/transformations.md ("Limits").
type watchdog struct {
	heapLimit uint64
	tick      time.Duration

	mu      sync.Mutex
	runs    map[*run]struct{}
	running bool
	sample  []metrics.Sample
}

// run is one guarded stretch of a runtime's work.
type run struct {
	vm       *goja.Runtime
	deadline time.Time
	heap0    uint64 // the heap when the watchdog first saw it (0: not yet)
	stopped  error
}

func newWatchdog(heapLimit uint64) *watchdog {
	return &watchdog{heapLimit: heapLimit, tick: time.Millisecond, runs: map[*run]struct{}{},
		sample: []metrics.Sample{{Name: heapMetric}}}
}

// guard starts watching vm until the returned stop is called; stop says
// why the watchdog interrupted it (nil: it did not). After stop the
// runtime's interrupt flag is clear, so it can run again.
func (w *watchdog) guard(vm *goja.Runtime, limit time.Duration) (stop func() error) {
	r := &run{vm: vm, deadline: time.Now().Add(limit)}
	w.mu.Lock()
	w.runs[r] = struct{}{}
	if !w.running {
		w.running = true
		go w.loop()
	}
	w.mu.Unlock()
	return func() error {
		w.mu.Lock()
		delete(w.runs, r)
		stopped := r.stopped
		w.mu.Unlock()
		vm.ClearInterrupt() // under no lock: the watchdog no longer sees r
		return stopped
	}
}

func (w *watchdog) loop() {
	t := time.NewTicker(w.tick)
	defer t.Stop()
	quiet := 0
	for now := range t.C {
		w.mu.Lock()
		if len(w.runs) == 0 {
			if quiet++; quiet > 200 {
				w.running = false
				w.mu.Unlock()
				return
			}
			w.mu.Unlock()
			continue
		}
		quiet = 0
		metrics.Read(w.sample)
		heap := w.sample[0].Value.Uint64()
		for r := range w.runs {
			if r.stopped != nil {
				continue
			}
			if r.heap0 == 0 {
				r.heap0 = heap
			}
			switch {
			case now.After(r.deadline):
				r.stopped = ErrTimeLimit
			case heap > r.heap0 && heap-r.heap0 > w.heapLimit:
				r.stopped = ErrHeapLimit
			default:
				continue
			}
			r.vm.Interrupt(r.stopped)
		}
		w.mu.Unlock()
	}
}
