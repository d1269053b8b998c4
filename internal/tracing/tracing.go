// Package tracing is hookd's OpenTelemetry tracing: a tracer provider that
// exports over OTLP when the standard OTEL_EXPORTER_OTLP_* variables say
// where (off otherwise), and the W3C trace context hookd carries in its
// River jobs' metadata so one trace follows an event from its publish
// through its fanout to each delivery attempt.
package tracing

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
)

// Name is the instrumentation scope of hookd's own spans.
const Name = "github.com/hookd/hookd"

// FromEnv returns a tracer provider exporting to OTLP over HTTP when
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set
// (the exporter reads the other standard variables: headers, timeout,
// TLS), and nil when neither is: tracing off. Shut it down to flush.
func FromEnv(ctx context.Context, version string) (*sdktrace.TracerProvider, error) {
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return nil, nil
	}
	proto := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if proto != "" && proto != "http/protobuf" {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q: hookd exports traces over http/protobuf only (point it at the collector's HTTP port, 4318)", proto)
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewWithAttributes(semconv.SchemaURL,
		semconv.ServiceName(serviceName()), semconv.ServiceVersion(version)))
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}

func serviceName() string {
	if s := os.Getenv("OTEL_SERVICE_NAME"); s != "" {
		return s
	}
	return "hookd"
}

// Propagator is the W3C trace context: what rides in job metadata and what
// the API accepts from callers. Set on outgoing webhook requests only for
// an endpoint that opted in (trace_context).
var Propagator = propagation.TraceContext{}

// metaKey is the metadata key of an event's own trace context on a deliver
// job. otelriver puts the inserting span under "traceparent"; a fanout
// that took other events along inserts their jobs from its own span, so
// each event's context travels under this key as well.
const metaKey = "hookd_trace"

// Carrier returns ctx's trace context as a map (empty if ctx has none).
func Carrier(ctx context.Context) map[string]string {
	c := propagation.MapCarrier{}
	Propagator.Inject(ctx, c)
	return c
}

// FromMetadata returns ctx with the remote span context found in a job's
// metadata: hookd's own key first, then otelriver's top-level traceparent.
// Without either, ctx is returned unchanged.
func FromMetadata(ctx context.Context, metadata []byte) context.Context {
	if len(metadata) == 0 {
		return ctx
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(metadata, &m) != nil {
		return ctx
	}
	c := propagation.MapCarrier{}
	if raw, ok := m[metaKey]; ok {
		_ = json.Unmarshal(raw, &c)
	}
	if c["traceparent"] == "" {
		for _, k := range []string{"traceparent", "tracestate"} {
			var v string
			if raw, ok := m[k]; ok && json.Unmarshal(raw, &v) == nil && v != "" {
				c[k] = v
			}
		}
	}
	if c["traceparent"] == "" {
		return ctx
	}
	sc := trace.SpanContextFromContext(Propagator.Extract(context.Background(), c))
	if !sc.IsValid() {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}

// MetaKey is the JSON key under which a deliver job carries its event's
// trace context (see FromMetadata).
func MetaKey() string { return metaKey }
