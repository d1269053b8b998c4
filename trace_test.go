package hookd_test

import (
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/hookd/hookd"
	"github.com/hookd/hookd/internal/dbtest"
)

func TestOneTraceFromPublishToEachAttempt(t *testing.T) {
	forEngine(t, func(t *testing.T, eng dbtest.Engine) {
		spans := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
		b := setup(t, eng, setupOpts{mutate: func(c *hookd.Config) { c.TracerProvider = tp }})
		one, two := newReceiver(t), newReceiver(t)
		b.registerType("t.traced")
		epOne, epTwo := b.endpoint(one.URL, "t.traced"), b.endpoint(two.URL, "t.*")
		id := b.publish("t.traced", `{}`)
		for _, ep := range []string{epOne.ID, epTwo.ID} {
			b.waitDelivery(ep, id, 10*time.Second, func(d deliveryOut) bool { return d.State == "delivered" })
		}
		// The deliver spans end once the jobs return (after the record).
		var publish, fanout sdktrace.ReadOnlySpan
		var deliver []sdktrace.ReadOnlySpan
		ok := eventually(5*time.Second, func() bool {
			publish, fanout, deliver = nil, nil, nil
			for _, s := range spans.GetSpans().Snapshots() {
				switch s.Name() {
				case "hookd.publish":
					publish = s
				case "hookd.fanout":
					fanout = s
				case "hookd.deliver":
					deliver = append(deliver, s)
				}
			}
			return publish != nil && fanout != nil && len(deliver) == 2
		})
		if !ok {
			t.Fatalf("spans: publish %v, fanout %v, %d deliver; want one, one and two", publish != nil, fanout != nil, len(deliver))
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
		// otelriver's work spans are there too, linked to their inserts.
		work := 0
		for _, s := range spans.GetSpans().Snapshots() {
			if s.Name() == "river.work/webhook.deliver" || s.Name() == "river.work/webhook.fanout" {
				work++
			}
		}
		if work < 3 {
			t.Errorf("otelriver work spans: %d, want one per job (3)", work)
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
