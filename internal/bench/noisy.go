package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// The noisy scenario (Options.Noisy): another owner, not in the plan, has
// Noisy endpoints on a receiver that never answers (each attempt holds a
// worker until hookd's 10 s timeout) and NoisyEvents events published to
// them just before the measured run. The run's figures are then the plan's
// owners' beside an outage: their latency against a run without --noisy
// is what isolation buys (docs/performance.md, "Isolation").

// noisyOwner is the scenario's owner id.
const noisyOwner = "bench-noisy"

// deadReceiver holds every request until the client gives up or it
// closes.
type deadReceiver struct {
	srv      *http.Server
	url      string
	done     chan struct{}
	requests atomic.Int64
	hanging  atomic.Int64
}

// startDeadReceiver starts the noisy owner's receiver: with delay 0 it
// never answers; otherwise it answers 200 after delay.
func startDeadReceiver(delay time.Duration) (*deadReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	d := &deadReceiver{url: "http://" + ln.Addr().String(), done: make(chan struct{})}
	d.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read the request first: the server notices a client that hangs
		// up (hookd's timeout) only once the body is read.
		_, _ = io.Copy(io.Discard, r.Body)
		d.requests.Add(1)
		d.hanging.Add(1)
		defer d.hanging.Add(-1)
		var after <-chan time.Time
		if delay > 0 {
			t := time.NewTimer(delay)
			defer t.Stop()
			after = t.C
		}
		select {
		case <-r.Context().Done():
		case <-d.done:
		case <-after:
			w.WriteHeader(http.StatusOK)
		}
	})}
	go func() { _ = d.srv.Serve(ln) }()
	return d, nil
}

func (d *deadReceiver) close() {
	close(d.done)
	_ = d.srv.Close()
}

// startNoisy creates the noisy owner's endpoints on a dead receiver,
// publishes its events, and waits (up to 10 s) until its first attempts
// hang: the measured run then starts with the workers they hold.
func startNoisy(ctx context.Context, api *client, p *plan, o Options) (*deadReceiver, error) {
	dead, err := startDeadReceiver(o.NoisyDelay)
	if err != nil {
		return nil, err
	}
	const typ = "bench.noisy"
	if err := api.call(ctx, http.MethodPut, "/api/admin/event_types/"+typ, p.noisyKey, map[string]string{"exposure": "webhook"}, http.StatusOK, nil); err != nil {
		dead.close()
		return nil, fmt.Errorf("noisy: register event type: %w", err)
	}
	err = forEach(ctx, o.Noisy, 8, func(ctx context.Context, j int) error {
		in := map[string]any{"url": fmt.Sprintf("%s/dead/%d", dead.url, j), "event_types": []string{typ}, "description": "bench noisy"}
		return api.call(ctx, http.MethodPost, "/api/admin/webhooks", p.noisyKey, in, http.StatusCreated, nil)
	})
	if err != nil {
		dead.close()
		return nil, fmt.Errorf("noisy: create endpoint: %w", err)
	}
	events := make([]map[string]any, o.NoisyEvents)
	for i := range events {
		events[i] = map[string]any{"type": typ, "subject": fmt.Sprintf("bench://noisy/%d", i), "data": map[string]int{"n": i}}
	}
	if err := api.call(ctx, http.MethodPost, "/api/v1/events/batch", p.noisyKey, map[string]any{"events": events}, http.StatusAccepted, nil); err != nil {
		dead.close()
		return nil, fmt.Errorf("noisy: publish: %w", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for dead.hanging.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return dead, nil
}
