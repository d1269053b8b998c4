package delivery

// Fast path of recording a drained delivery's success (deliver_drain.go).
// The plain path is settle.go's settle, a relaxed transaction per
// attempt; here the process's recorder records the successes of every
// drain in groups, many per statement.

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookd/hookd/internal/store"
)

// recorder records the drains' successes in the background, for the
// whole process (group commit): whatever every drain added while the
// previous flush ran goes in the next one, so drains keep sending and each
// flush carries as many as arrived meanwhile.
type recorder struct {
	s       *Service
	mu      sync.Mutex
	queue   []recorded
	running bool
}

type recorded struct {
	d     store.Delivered
	jobID int64
	by    *drainRecords
}

// drainRecords is one drain's share of the recorder: what it waits for.
type drainRecords struct {
	rec     *recorder
	pending sync.WaitGroup
	failed  atomic.Bool
}

// maxFlush bounds one flush's statement (two placeholders a delivery).
const maxFlush = 500

func (r *recorder) forDrain() *drainRecords { return &drainRecords{rec: r} }

func (dr *drainRecords) add(d store.Delivered, jobID int64) {
	dr.pending.Add(1)
	r := dr.rec
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queue = append(r.queue, recorded{d, jobID, dr})
	if !r.running {
		r.running = true
		go r.loop()
	}
}

// wait returns once everything this drain added is recorded (or given up
// on): false if any of it was given up on.
func (dr *drainRecords) wait() bool {
	dr.pending.Wait()
	return !dr.failed.Load()
}

func (r *recorder) loop() {
	for {
		r.mu.Lock()
		items := r.queue[:min(len(r.queue), maxFlush)]
		r.queue = r.queue[len(items):]
		if len(items) == 0 {
			r.queue, r.running = nil, false
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		ok := r.flush(items)
		for _, it := range items {
			if !ok {
				it.by.failed.Store(true)
			}
			it.by.pending.Done()
		}
	}
}

// flush records one group, retrying for a while: the sends happened, so a
// dropped connection must not turn them into re-sends.
func (r *recorder) flush(items []recorded) bool {
	done := make([]store.Delivered, len(items))
	jobs := make([]int64, len(items))
	for i, it := range items {
		done[i], jobs[i] = it.d, it.jobID
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for try := 0; ; try++ {
		err := r.s.db.RecordDrained(ctx, done, jobs, r.s.now().UnixMicro())
		if err == nil {
			return true
		}
		select {
		case <-ctx.Done():
			r.s.log.Warn("recording drained deliveries failed; their own jobs will send them again", "deliveries", len(done), "error", err)
			return false
		case <-time.After(time.Duration(50<<min(try, 5)) * time.Millisecond):
		}
	}
}
