package bench

import (
	"context"
	"fmt"
	"net/http"
	"sync"
)

// setupEndpoints registers each owner's event type as webhook and creates
// the plan's endpoints through the admin API, each subscribed to "*" and
// pointing at its own path on the receiver, which learns every secret.
func setupEndpoints(ctx context.Context, api *client, p *plan, rcv *receiver, dest *consumer) error {
	for k := range p.owners {
		in := map[string]string{"exposure": "webhook", "description": "bench"}
		if err := api.call(ctx, http.MethodPut, "/api/admin/event_types/"+p.eventType(k), p.keys[k], in, http.StatusOK, nil); err != nil {
			return fmt.Errorf("register event type: %w", err)
		}
	}
	p.endpointIDs = make([]string, p.endpoints)
	return forEach(ctx, p.endpoints, 8, func(ctx context.Context, j int) error {
		k := j % p.owners
		url := rcv.endpointURL(j)
		if dest != nil {
			url = dest.url(j)
		}
		in := map[string]any{"url": url, "event_types": []string{"*"}, "description": fmt.Sprintf("bench endpoint %d", j)}
		var out struct {
			ID     string `json:"id"`
			Secret string `json:"secret"`
		}
		if err := api.call(ctx, http.MethodPost, "/api/admin/webhooks", p.keys[k], in, http.StatusCreated, &out); err != nil {
			return fmt.Errorf("create endpoint %d: %w", j, err)
		}
		p.endpointIDs[j] = out.ID // each goroutine its own j
		return rcv.register(j, out.Secret)
	})
}

// forEach runs fn(0..n-1) on at most par goroutines and returns the first
// error (the rest are cancelled).
func forEach(ctx context.Context, n, par int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(par, n) {
		wg.Go(func() {
			for i := range next {
				if err := fn(ctx, i); err != nil {
					cancel(err)
				}
			}
		})
	}
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(next)
	wg.Wait()
	return context.Cause(ctx)
}
