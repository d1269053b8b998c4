package delivery

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestPrunerKeepsBatchesInBudget: a table whose deletes cost 40 µs a row
// (a 1,000-row batch takes 40 ms) is pruned in batches that shrink until
// each fits the 10 ms budget, with a rest after each batch as long as the
// batch took, and every row deleted once.
func TestPrunerKeepsBatchesInBudget(t *testing.T) {
	clock := time.Unix(0, 0)
	const perRow = 40 * time.Microsecond
	rows := int64(20_000)
	var batches []int
	var rests []time.Duration
	p := &pruner{
		now:   func() time.Time { return clock },
		rest:  func(_ context.Context, d time.Duration) error { rests = append(rests, d); return nil },
		batch: pruneMaxBatch,
	}
	deleted, err := p.run(context.Background(), func(limit int) (int64, error) {
		n := min(int64(limit), rows)
		rows -= n
		clock = clock.Add(time.Duration(n) * perRow)
		batches = append(batches, limit)
		return n, nil
	})
	if err != nil || deleted != 20_000 || rows != 0 {
		t.Fatalf("deleted %d (%v), %d left; want all 20,000", deleted, err, rows)
	}
	// 1,000 (40 ms), 500 (20 ms), 250 (10 ms: in budget) and 250 from then on.
	if batches[0] != 1000 || batches[1] != 500 || batches[2] != 250 {
		t.Fatalf("batches began %v; want 1000, 500, 250", batches[:3])
	}
	for i, b := range batches[2:] {
		if took := time.Duration(b) * perRow; took > pruneBudget {
			t.Fatalf("batch %d of %d rows took %v, over the %v budget", i+2, b, took, pruneBudget)
		}
	}
	if len(rests) != len(batches)-1 || rests[0] != 40*time.Millisecond || rests[len(rests)-1] != 10*time.Millisecond {
		t.Fatalf("rests %v after %d batches; want one after each full batch, as long as it took", rests, len(batches))
	}
	if p.longest != 40*time.Millisecond {
		t.Fatalf("longest batch %v, want the first's 40ms", p.longest)
	}
}

// TestPrunerGrowsFastBatches: batches that take under half the budget
// double back up to the largest.
func TestPrunerGrowsFastBatches(t *testing.T) {
	clock := time.Unix(0, 0)
	rows := int64(5_000)
	var batches []int
	p := &pruner{now: func() time.Time { return clock }, rest: func(context.Context, time.Duration) error { return nil }, batch: 100}
	if _, err := p.run(context.Background(), func(limit int) (int64, error) {
		n := min(int64(limit), rows)
		rows -= n
		clock = clock.Add(time.Duration(n) * time.Microsecond)
		batches = append(batches, limit)
		return n, nil
	}); err != nil {
		t.Fatal(err)
	}
	// 100+200+400+800+1000 = 2,500; two more full batches, and the last 500.
	if want := []int{100, 200, 400, 800, 1000, 1000, 1000, 1000}; !slices.Equal(batches, want) {
		t.Fatalf("batches %v, want them doubling to 1000: %v", batches, want)
	}
}

// TestPrunerStopsWithContext: a pass stops at its rest when the context
// ends, with what it deleted so far.
func TestPrunerStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := &pruner{now: time.Now, rest: sleep, batch: 10}
	calls := 0
	n, err := p.run(ctx, func(limit int) (int64, error) {
		calls++
		cancel()
		return int64(limit), nil
	})
	if err == nil || calls != 1 || n != 10 {
		t.Fatalf("after a cancel: %d deleted in %d calls, err %v; want 10 in 1 and the context's error", n, calls, err)
	}
}

// TestPruneEvery: retention runs a tenth of its window apart, between
// every 10 s and every hour.
func TestPruneEvery(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ retention, want time.Duration }{
		{DefaultRetention, time.Hour},
		{10 * time.Hour, time.Hour},
		{5 * time.Hour, 30 * time.Minute},
		{2 * time.Minute, 12 * time.Second},
		{time.Minute, 10 * time.Second},
	} {
		if got := pruneEvery(c.retention); got != c.want {
			t.Errorf("pruneEvery(%v) = %v, want %v", c.retention, got, c.want)
		}
	}
}

// TestPruneTimeout: a retention pass may run until the next is due, and
// never less than the job timeout.
func TestPruneTimeout(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ job, retention, want time.Duration }{
		{DefaultJobTimeout, DefaultRetention, time.Hour},
		{DefaultJobTimeout, 5 * time.Hour, 30 * time.Minute},
		{DefaultJobTimeout, time.Minute, DefaultJobTimeout},
		{time.Minute, 2 * time.Minute, time.Minute},
	} {
		if got := pruneTimeout(c.job, c.retention); got != c.want {
			t.Errorf("pruneTimeout(%v, %v) = %v, want %v", c.job, c.retention, got, c.want)
		}
	}
}
