package main

// Scale-out, proven with real processes: one `hookd serve --role api` and
// several `--role worker` processes of the built binary on one PostgreSQL
// schema, delivering to a local receiver that verifies every signature and
// watches per-endpoint concurrency. PostgreSQL only; skipped with -short.

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// scaleHeavy makes the tests that run several hookd processes flat out take
// turns: together (race-instrumented) they would starve each other of CPU
// on a small CI machine. The light tests still run beside them.
var scaleHeavy sync.Mutex

const (
	scaleEndpoints = 5
	scaleEvents    = 2000
	scaleBatch     = 1000
	scaleWorkers   = 4  // --workers of each worker process
	drainBatch     = 32 // the delivery engine's DrainBatch default
	// scaleDeadline bounds the wait for every (event, endpoint) pair.
	scaleDeadline = 3 * time.Minute
)

// TestScaleOut: 1 API + 3 worker processes deliver 2,000 events to 5
// endpoints (10,000 pairs); one worker is killed with SIGKILL mid-run. Every
// pair arrives, duplicates stay within what the dead worker had in flight,
// no endpoint ever has two deliveries in flight, every signature verifies.
func TestScaleOut(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process scale-out test skipped with -short")
	}
	t.Parallel()
	scaleHeavy.Lock()
	defer scaleHeavy.Unlock()
	c := newScaleCluster(t)
	began := time.Now()
	api := c.start(t, "api", "--role", "api", "--addr", "127.0.0.1:0")
	var workers []*scaleProc
	for i := range 3 {
		workers = append(workers, c.start(t, fmt.Sprintf("worker%d", i+1), "--role", "worker"))
	}
	t.Logf("processes up in %v", time.Since(began).Round(time.Millisecond))

	rcv := newScaleReceiver(t)
	client := c.client(t, api)
	rcv.register(t, client, scaleEndpoints)

	start := time.Now()
	client.publish(t, 0, scaleEvents)
	t.Logf("published %d events in %v", scaleEvents, time.Since(start).Round(time.Millisecond))

	// Kill one worker once deliveries are flowing (a fifth of the pairs).
	rcv.waitFor(t, scaleEvents*scaleEndpoints/5, scaleDeadline, c.alive(workers...))
	victim := workers[0]
	victim.kill(t)
	killedAt := time.Now()
	before := rcv.snapshot()
	t.Logf("killed %s (pid %d) with SIGKILL after %v, %d pairs delivered", victim.name, victim.pid(), killedAt.Sub(start).Round(time.Millisecond), before.unique)

	rcv.waitFor(t, scaleEvents*scaleEndpoints, scaleDeadline-time.Since(start), c.alive(append([]*scaleProc{api}, workers[1:]...)...))
	done := time.Since(start)
	s := rcv.snapshot()
	t.Logf("all %d pairs delivered in %v (%.0f/s); %v after the kill; %d requests, %d duplicates",
		s.unique, done.Round(time.Millisecond), float64(s.unique)/done.Seconds(), time.Since(killedAt).Round(time.Millisecond), s.requests, s.requests-s.unique)
	// Sent again after the kill: what the dead worker had sent but not yet
	// recorded, on the endpoints whose leases it held (at most its
	// --workers). That is one request in flight per endpoint, plus a lease
	// drain's successes still waiting for the recorder's group commit; a
	// drain waits for its records before it reads its next batch, so at
	// most one batch (32) per endpoint (docs/design.md, "The lease drain").
	// Usually one or two: 0-5 in all were seen.
	rcv.check(t, scaleEvents, min(scaleWorkers, scaleEndpoints)*drainBatch)
	c.stopAll(t)
}

// TestScaleOutPostgresRestart: while deliveries run, every PostgreSQL
// connection of the hookd processes is terminated (what a database restart
// or failover does to them). Without restarting hookd, the API keeps
// accepting events and the workers deliver every pair.
func TestScaleOutPostgresRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process scale-out test skipped with -short")
	}
	t.Parallel()
	scaleHeavy.Lock()
	defer scaleHeavy.Unlock()
	c := newScaleCluster(t)
	api := c.start(t, "api", "--role", "api", "--addr", "127.0.0.1:0")
	workers := []*scaleProc{
		c.start(t, "worker1", "--role", "worker"),
		c.start(t, "worker2", "--role", "worker"),
	}
	all := c.alive(append([]*scaleProc{api}, workers...)...)
	rcv := newScaleReceiver(t)
	client := c.client(t, api)
	rcv.register(t, client, scaleEndpoints)

	const events = scaleEvents / 2
	start := time.Now()
	half := events / 2
	client.publish(t, 0, half)
	rcv.waitFor(t, half*scaleEndpoints/4, scaleDeadline, all)
	n := c.terminateBackends(t)
	if n == 0 {
		t.Fatal("no hookd backend to terminate: is application_name in the URL?")
	}
	t.Logf("terminated %d PostgreSQL backends of hookd after %v, %d pairs delivered", n, time.Since(start).Round(time.Millisecond), rcv.snapshot().unique)

	// The API's pooled connections are dead: publishing must still work.
	client.publish(t, half, events)
	rcv.waitFor(t, half*scaleEndpoints+half*scaleEndpoints/4, scaleDeadline-time.Since(start), all)
	n = c.terminateBackends(t)
	t.Logf("terminated %d backends again after %v, %d pairs delivered", n, time.Since(start).Round(time.Millisecond), rcv.snapshot().unique)

	rcv.waitFor(t, events*scaleEndpoints, scaleDeadline-time.Since(start), all)
	s := rcv.snapshot()
	t.Logf("all %d pairs delivered in %v; %d requests, %d duplicates", s.unique, time.Since(start).Round(time.Millisecond), s.requests, s.requests-s.unique)
	// A delivery whose settle failed on a dead connection is sent again:
	// at most one in flight per endpoint, per termination.
	rcv.check(t, events, 2*scaleEndpoints)
	c.stopAll(t)
}

// TestScaleOutLostCompletion: River records job completions in batches
// (every 50–250 ms). A worker killed after hookd recorded a delivery as
// delivered, but before River flushed that job's completion, leaves the job
// "running"; the rescuer retries it. The delivery must not be sent again:
// hookd's own record says it was delivered. The test puts finished deliver
// jobs into exactly the state such a SIGKILL leaves (TestScaleOut hits the
// same window only by chance).
func TestScaleOutLostCompletion(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process scale-out test skipped with -short")
	}
	t.Parallel()
	const events = 3
	c := newScaleCluster(t)
	api := c.start(t, "api", "--role", "api", "--addr", "127.0.0.1:0")
	worker := c.start(t, "worker", "--role", "worker")
	alive := c.alive(api, worker)
	rcv := newScaleReceiver(t)
	client := c.client(t, api)
	rcv.register(t, client, 1)
	client.publish(t, 0, events)
	rcv.waitFor(t, events, time.Minute, alive)

	db := c.open(t)
	deliverJobs := func(states string) int {
		t.Helper()
		n, err := db.Count(context.Background(), `SELECT count(*) FROM river_job WHERE kind = 'webhook.deliver' AND state IN (`+states+`)`)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Deliveries sent by the endpoint's lease drain have their jobs deleted
	// unrun (or, if River had fetched them, completed without sending).
	waitUntil(t, time.Minute, alive, "River records the deliver jobs completed", func() bool {
		return deliverJobs("'available', 'scheduled', 'running', 'retryable', 'pending'") == 0
	})
	jobs := deliverJobs("'completed'")
	if jobs < 1 || jobs > events {
		t.Fatalf("%d completed deliver jobs for %d events", jobs, events)
	}

	// A SIGKILL before the completer's flush leaves: running, attempted long
	// ago (so past --rescue-after), not finalized.
	_, err := db.Pool().Exec(context.Background(), `UPDATE river_job SET state = 'running', finalized_at = NULL, attempted_at = now() - interval '1 hour'
		WHERE kind = 'webhook.deliver'`)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	// The leader's rescuer (every 30 s) makes them retryable, the scheduler
	// makes them available, a worker runs them again.
	waitUntil(t, 2*time.Minute, alive, "the rescued jobs run to completion", func() bool {
		return deliverJobs("'completed', 'cancelled', 'discarded'") == jobs
	})
	t.Logf("rescued and re-run in %v", time.Since(began).Round(time.Millisecond))
	if s := rcv.snapshot(); s.requests != events {
		t.Errorf("the receiver got %d requests for %d delivered events: rescued jobs re-sent deliveries already recorded as delivered", s.requests, events)
	}
	c.stopAll(t)
}
