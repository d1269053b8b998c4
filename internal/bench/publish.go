package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// batch is one publish request: events (by seq) of one owner.
type batch struct {
	owner int
	seqs  []int
}

type published struct {
	start    time.Time
	duration time.Duration
	// requests are the publish requests' times, send → answer.
	requests []time.Duration
}

// requestTimes collects the publish requests' times.
type requestTimes struct {
	mu  sync.Mutex
	all []time.Duration
}

func (r *requestTimes) add(d time.Duration) {
	r.mu.Lock()
	r.all = append(r.all, d)
	r.mu.Unlock()
}

// publish sends the plan's events from (seq) up to to: as fast as the API
// takes them (closed loop) or at opts.Rate (open loop). With a batch size
// of 1 each event is its own POST /api/v1/events, as most producers
// publish; otherwise POST /api/v1/events/batch.
func publish(ctx context.Context, api *client, p *plan, opts Options, from, to int, times *requestTimes) (published, error) {
	start := time.Now()
	post := api.publisher(opts.Generator == GeneratorNetHTTP)
	var err error
	switch {
	case opts.Rate > 0:
		err = publishOpen(ctx, post, p, opts, times, from, to)
	case opts.Generator == GeneratorLoop:
		err = publishLoop(ctx, api.raw.addr, p, times, closedBatches(p, opts, from, to), opts.Publishers)
	default:
		all := closedBatches(p, opts, from, to)
		err = forEach(ctx, len(all), opts.Publishers, func(ctx context.Context, i int) error {
			return sendBatch(ctx, post, p, times, all[i])
		})
	}
	times.mu.Lock()
	defer times.mu.Unlock()
	return published{start: start, duration: time.Since(start), requests: times.all}, err
}

// closedBatches cuts each owner's events into batches and interleaves the
// owners: the closed loop's requests, in the order they are sent with
// opts.Publishers in flight.
func closedBatches(p *plan, opts Options, from, to int) []batch {
	perOwner := make([][]batch, p.owners)
	for k := range p.owners {
		var cur []int
		for seq := from + (k-from%p.owners+p.owners)%p.owners; seq < to; seq += p.owners {
			cur = append(cur, seq)
			if len(cur) == opts.BatchSize {
				perOwner[k] = append(perOwner[k], batch{owner: k, seqs: cur})
				cur = nil
			}
		}
		if len(cur) > 0 {
			perOwner[k] = append(perOwner[k], batch{owner: k, seqs: cur})
		}
	}
	var all []batch
	for round := 0; ; round++ {
		added := false
		for k := range p.owners {
			if round < len(perOwner[k]) {
				all = append(all, perOwner[k][round])
				added = true
			}
		}
		if !added {
			break
		}
	}
	return all
}

// publishOpen releases events on a 10 ms ticker so that by time t about
// Rate·t were sent, each tick's events grouped by owner into batches sent
// concurrently (a slow answer does not hold the next tick back).
func publishOpen(ctx context.Context, post postFunc, p *plan, opts Options, times *requestTimes, from, to int) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	inFlight := make(chan struct{}, 64*opts.Publishers)
	var wg sync.WaitGroup
	start := time.Now()
	for sent := from; sent < to; {
		select {
		case <-tick.C:
		case <-ctx.Done():
			wg.Wait()
			return context.Cause(ctx)
		}
		due := min(to, from+int(opts.Rate*time.Since(start).Seconds())+1)
		groups := make(map[int][]int)
		for seq := sent; seq < due; seq++ {
			groups[seq%p.owners] = append(groups[seq%p.owners], seq)
		}
		sent = due
		for k, seqs := range groups {
			for len(seqs) > 0 {
				n := min(len(seqs), opts.BatchSize)
				b := batch{owner: k, seqs: seqs[:n]}
				seqs = seqs[n:]
				inFlight <- struct{}{}
				wg.Go(func() {
					defer func() { <-inFlight }()
					if err := sendBatch(ctx, post, p, times, b); err != nil {
						cancel(err)
					}
				})
			}
		}
	}
	wg.Wait()
	return context.Cause(ctx)
}

// sendBatch publishes b, each event's data carrying its seq and the publish
// time: one event alone through POST /api/v1/events, more through the
// batch endpoint. A 5xx or 429 answer rolled the whole batch back: it is
// sent again (a few times) with a fresh time. times gets each successful
// request's time. post sends each request.
func sendBatch(ctx context.Context, post postFunc, p *plan, times *requestTimes, b batch) error {
	for attempt := 1; ; attempt++ {
		sent := time.Now()
		path, body := request(p, b, sent)
		err := post(ctx, path, p.keys[b.owner], body, http.StatusAccepted)
		if err == nil {
			times.add(time.Since(sent))
		}
		var se *statusError
		if err == nil || !errors.As(err, &se) || !retryable(se.status, attempt) {
			if err != nil {
				return fmt.Errorf("publish: %w", err)
			}
			return nil
		}
		select {
		case <-time.After(retryAfter(attempt)):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// request is the path and body that publish b, sent at sent: one event
// alone through POST /api/v1/events, more through the batch endpoint.
func request(p *plan, b batch, sent time.Time) (path string, body []byte) {
	if len(b.seqs) == 1 {
		return "/api/v1/events", eventBody(nil, p.eventType(b.owner), b.seqs[0], sent.UnixNano())
	}
	return "/api/v1/events/batch", batchBody(p, b, sent.UnixNano())
}

// retryable says whether a publish answered status on its attempt'th try
// is sent again: a 5xx or 429 rolled the whole batch back, and a batch
// gets five tries.
func retryable(status, attempt int) bool {
	return (status >= 500 || status == http.StatusTooManyRequests) && attempt < 5
}

// retryAfter is how long a batch waits before its next try.
func retryAfter(attempt int) time.Duration { return time.Duration(attempt) * 100 * time.Millisecond }

// batchBody renders {"events":[{type, subject, tenant, data:{seq, ts}}…]}.
func batchBody(p *plan, b batch, ts int64) []byte {
	typ := p.eventType(b.owner)
	out := make([]byte, 0, 16+len(b.seqs)*(96+len(typ)))
	out = append(out, `{"events":[`...)
	for i, seq := range b.seqs {
		if i > 0 {
			out = append(out, ',')
		}
		out = eventBody(out, typ, seq, ts)
	}
	return append(out, `]}`...)
}

// eventBody appends {type, subject, tenant, data:{seq, ts}} to out.
func eventBody(out []byte, typ string, seq int, ts int64) []byte {
	out = append(out, `{"type":"`...)
	out = append(out, typ...)
	out = append(out, `","subject":"bench://item/`...)
	out = strconv.AppendInt(out, int64(seq), 10)
	out = append(out, `","tenant":"tenant_bench","data":{"seq":`...)
	out = strconv.AppendInt(out, int64(seq), 10)
	out = append(out, `,"ts":`...)
	out = strconv.AppendInt(out, ts, 10)
	return append(out, `}}`...)
}
