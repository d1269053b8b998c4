package e2e_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/hookd/hookd/internal/app"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/delivery/hookstest"
)

// setupTraced starts hookd with tracing on, its spans going to the
// in-memory exporter it returns.
func setupTraced(t *testing.T, backend dbtest.Backend) (*bundle, *tracetest.InMemoryExporter) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	return setup(t, backend, setupOpts{mutate: func(c *app.Config) { c.TracerProvider = tp }}), spans
}

func TestOneTraceFromPublishToEachAttempt(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b, spans := setupTraced(t, backend)
		one, two := newReceiver(t), newReceiver(t)
		b.registerType("t.traced")
		epOne, epTwo := b.endpoint(one.URL, "t.traced"), b.endpoint(two.URL, "t.*")
		id := b.publish("t.traced", `{}`)
		for _, ep := range []string{epOne.ID, epTwo.ID} {
			b.waitDelivery(ep, id, 10*time.Second, func(d deliveryOut) bool { return d.State == "delivered" })
		}
		// The deliver spans end once the jobs return (after the record).
		// otelriver's work spans end after the jobs return, so they are
		// waited for too: one per job (3), linked to their inserts.
		var publish, fanout sdktrace.ReadOnlySpan
		var deliver []sdktrace.ReadOnlySpan
		work := 0
		ok := eventually(5*time.Second, func() bool {
			publish, fanout, deliver, work = nil, nil, nil, 0
			for _, s := range spans.GetSpans().Snapshots() {
				switch s.Name() {
				case "hookd.publish":
					publish = s
				case "hookd.fanout":
					fanout = s
				case "hookd.deliver":
					deliver = append(deliver, s)
				case "river.work/webhook.deliver", "river.work/webhook.fanout":
					work++
				}
			}
			return publish != nil && fanout != nil && len(deliver) == 2 && work >= 3
		})
		if !ok {
			t.Fatalf("spans: publish %v, fanout %v, %d deliver, %d otelriver work; want one, one, two and one per job (3)", publish != nil, fanout != nil, len(deliver), work)
		}
		traceID := publish.SpanContext().TraceID()
		if fanout.SpanContext().TraceID() != traceID {
			t.Errorf("fanout span in trace %s, publish in %s", fanout.SpanContext().TraceID(), traceID)
		}
		for _, d := range deliver {
			if d.SpanContext().TraceID() != traceID {
				t.Errorf("deliver span in trace %s, publish in %s", d.SpanContext().TraceID(), traceID)
			}
			if d.Parent().SpanID() != fanout.SpanContext().SpanID() {
				t.Errorf("deliver span's parent %s, want the fanout span %s", d.Parent().SpanID(), fanout.SpanContext().SpanID())
			}
		}
		// No trace context leaves hookd in a webhook.
		for _, rc := range []*receiver{one, two} {
			for _, r := range rc.receipts() {
				for _, h := range []string{"Traceparent", "Tracestate", "Baggage"} {
					if v := r.Header.Get(h); v != "" {
						t.Errorf("webhook carried %s: %s", h, v)
					}
				}
			}
		}
	})
}

// An endpoint that opts in (trace_context) gets the W3C trace context of
// the attempt's hookd.deliver span: the publisher's trace id and
// tracestate, and that span as the parent. The one beside it, which did
// not, gets none.
func TestTraceContextOnlyForOptedInEndpoints(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b, spans := setupTraced(t, backend)
		in, out := newReceiver(t), newReceiver(t)
		b.registerType("t.traced")
		var opted struct {
			endpointOut
			TraceContext bool `json:"trace_context"`
		}
		b.must(201, "POST", "/api/admin/webhooks", map[string]any{"url": in.URL, "event_types": []string{"t.*"}, "trace_context": true}, &opted)
		if !opted.TraceContext {
			t.Fatal("create answered trace_context false, asked true")
		}
		plain := b.endpoint(out.URL, "t.*")
		const callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
		id := b.publish("t.traced", `{}`, "Traceparent", "00-"+callerTrace+"-00f067aa0ba902b7-01", "Tracestate", "vendor=abc")
		for _, ep := range []string{opted.ID, plain.ID} {
			b.waitDelivery(ep, id, 10*time.Second, func(d deliveryOut) bool { return d.State == "delivered" })
		}
		got := in.receipts()[0].Header
		tp0 := got.Get("Traceparent")
		parts := strings.Split(tp0, "-")
		if len(parts) != 4 || parts[1] != callerTrace {
			t.Fatalf("opted-in webhook's traceparent %q, want one in the publisher's trace %s", tp0, callerTrace)
		}
		if ts := got.Get("Tracestate"); ts != "vendor=abc" {
			t.Errorf("opted-in webhook's tracestate %q, want the publisher's vendor=abc", ts)
		}
		// The parent it names is the deliver span of that endpoint's attempt.
		var deliver sdktrace.ReadOnlySpan
		if !eventually(5*time.Second, func() bool {
			for _, s := range spans.GetSpans().Snapshots() {
				if s.Name() == "hookd.deliver" && s.SpanContext().SpanID().String() == parts[2] {
					deliver = s
					return true
				}
			}
			return false
		}) {
			t.Fatalf("traceparent's parent %s is no hookd.deliver span", parts[2])
		}
		if !slices.Contains(deliver.Attributes(), attribute.String("hookd.endpoint", opted.ID)) {
			t.Errorf("traceparent names the deliver span of another endpoint: %v", deliver.Attributes())
		}
		for _, h := range []string{"Traceparent", "Tracestate"} {
			if v := out.receipts()[0].Header.Get(h); v != "" {
				t.Errorf("endpoint without trace_context got %s: %s", h, v)
			}
		}
	})
}

// With tracing off there is no deliver span: an endpoint that opted in
// gets no trace context (neither hookd's nor the publisher's), and says
// it opted in.
func TestTraceContextNotSentWithTracingOff(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		rc := newReceiver(t)
		b.registerType("t.traced")
		ep := b.endpoint(rc.URL, "t.*")
		var got struct {
			TraceContext bool `json:"trace_context"`
		}
		b.must(200, "PATCH", "/api/admin/webhooks/"+ep.ID, map[string]any{"trace_context": true}, &got)
		if !got.TraceContext {
			t.Fatal("update answered trace_context false, asked true")
		}
		b.must(200, "GET", "/api/admin/webhooks/"+ep.ID, nil, &got)
		if !got.TraceContext {
			t.Fatal("get answered trace_context false after it was set")
		}
		id := b.publish("t.traced", `{}`, "Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
		b.waitDelivery(ep.ID, id, 10*time.Second, func(d deliveryOut) bool { return d.State == "delivered" })
		for _, h := range []string{"Traceparent", "Tracestate"} {
			if v := rc.receipts()[0].Header.Get(h); v != "" {
				t.Errorf("tracing off, yet the webhook carried %s: %s", h, v)
			}
		}
		var list struct {
			Data []struct {
				TraceContext bool `json:"trace_context"`
			} `json:"data"`
		}
		b.must(200, "GET", "/api/admin/webhooks", nil, &list)
		if len(list.Data) != 1 || !list.Data[0].TraceContext {
			t.Errorf("list: %+v, want the one endpoint with trace_context true", list.Data)
		}
		b.must(200, "PATCH", "/api/admin/webhooks/"+ep.ID, map[string]any{"trace_context": false}, &got)
		if got.TraceContext {
			t.Error("update to false answered trace_context true")
		}
	})
}

// Concurrent single publishes share one transaction (group commit), yet
// each event keeps its own trace: its publish, fanout and deliver spans
// are in the trace of the caller that published it, whichever caller's
// request ran the group, and whichever delivery's job sent it (a lease
// holder's drain sends the others' too).
func TestGroupedPublishesKeepTheirCallersTraces(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b, spans := setupTraced(t, backend)
		rc := newReceiver(t)
		// The first attempt is answered only once every event's delivery
		// exists: its job then holds the endpoint's lease and drains the
		// others' deliveries.
		unblock := make(chan struct{})
		rc.setRespond(func(_ *http.Request, n int) (int, http.Header) {
			if n == 1 {
				<-unblock
			}
			return http.StatusNoContent, nil
		})
		b.registerType("t.grouped")
		ep := b.endpoint(rc.URL, "t.*")
		// The first group waits, before its transaction, until the others
		// have queued: they then go together in the second group.
		const others = 3
		first, release, queued := make(chan struct{}), make(chan struct{}), make(chan int, 100)
		var sizes []int
		hookstest.Set(t, b.h.Delivery, &delivery.Hooks{
			PublishQueued: func(n int) { queued <- n },
			BeforePublishGroup: func(size int) {
				sizes = append(sizes, size) // groups run one at a time
				if len(sizes) == 1 {
					close(first)
					<-release
				}
			},
		})
		traceOf := func(i int) string { return fmt.Sprintf("%032x", 0xabc000+i) }
		ids := make([]string, 1+others)
		var wg sync.WaitGroup
		publish := func(i int) {
			defer wg.Done()
			ids[i] = b.publish("t.grouped", `{}`, "Traceparent", "00-"+traceOf(i)+"-00f067aa0ba902b7-01")
		}
		wg.Add(1)
		go publish(0)
		<-first
		wg.Add(others)
		for i := 1; i <= others; i++ {
			go publish(i)
		}
		for n := 0; n < others; {
			n = <-queued
		}
		close(release)
		wg.Wait()
		if len(sizes) != 2 || sizes[1] != others {
			t.Fatalf("group sizes %v, want [1 %d]: the others did not share a transaction", sizes, others)
		}
		if !eventually(wait, func() bool { return len(b.deliveries(ep.ID)) == 1+others }) {
			t.Fatalf("%d deliveries, want %d", len(b.deliveries(ep.ID)), 1+others)
		}
		close(unblock)
		rc.waitFor(t, 1+others, wait)
		// Every event: one publish, one fanout and one deliver span, all in
		// its caller's trace.
		want := map[string]string{} // event id → caller's trace id
		for i, id := range ids {
			want[id] = traceOf(i)
		}
		type key struct{ name, event string }
		var got map[key][]string
		drained := 0
		ok := eventually(5*time.Second, func() bool {
			got, drained = map[key][]string{}, 0
			for _, s := range spans.GetSpans().Snapshots() {
				for _, a := range s.Attributes() {
					if a.Key == "hookd.event" && strings.HasPrefix(s.Name(), "hookd.") {
						k := key{s.Name(), a.Value.AsString()}
						got[k] = append(got[k], s.SpanContext().TraceID().String())
					}
					if a.Key == "hookd.drained" {
						drained++
					}
				}
			}
			for id := range want {
				for _, name := range []string{"hookd.publish", "hookd.fanout", "hookd.deliver"} {
					if len(got[key{name, id}]) == 0 {
						return false
					}
				}
			}
			return true
		})
		if !ok {
			t.Fatalf("not every event has its publish, fanout and deliver spans: %v", got)
		}
		if drained == 0 {
			t.Error("no delivery was drained by the lease holder: the drain's spans went untested")
		}
		for k, traces := range got {
			for _, tr := range traces {
				if tr != want[k.event] {
					t.Errorf("%s span of %s in trace %s, want its caller's %s", k.name, k.event, tr, want[k.event])
				}
			}
		}
	})
}
