package delivery

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/riverqueue/river"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/store"
	"github.com/hookd/hookd/internal/tracing"
)

// startSpan starts one of hookd's spans when tracing is on. parent, when
// non-nil, is a job's metadata: the span continues the trace it carries
// (the event's), linked to the job's own river.work span in ctx. With
// tracing off it returns ctx and a span that records nothing (never the
// caller's own span, which it must not end).
func (s *Service) startSpan(ctx context.Context, name string, parent []byte, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if s.cfg.Tracer == nil {
		return ctx, noop.Span{}
	}
	opts := []trace.SpanStartOption{trace.WithAttributes(attrs...)}
	if parent != nil {
		if work := trace.SpanContextFromContext(ctx); work.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: work}))
		}
		ctx = tracing.FromMetadata(ctx, parent)
	}
	return s.cfg.Tracer.Start(ctx, name, opts...)
}

// endSpan records err (if any) on span and ends it.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// eventTrace returns the metadata of deliver jobs of one event: the
// profile, and (tracing on) the event's trace context from ctx.
func (s *Service) eventTrace(ctx context.Context, base jobMeta, plain []byte) []byte {
	if s.cfg.Tracer == nil {
		return plain
	}
	base.Trace = tracing.Carrier(ctx)
	b, _ := json.Marshal(base)
	return b
}

// traceMetadata is a fanout job's metadata carrying its event's trace
// context c, which the fanout continues (see tracing.FromMetadata).
func traceMetadata(c map[string]string) []byte {
	b, _ := json.Marshal(map[string]map[string]string{tracing.MetaKey(): c})
	return b
}

// fanoutTraces returns, for the i-th event of a fanout (0: the job's own,
// then others), the metadata of its deliver jobs. With tracing on, each
// event taken along gets a hookd.fanout span of its own, continuing the
// trace its fanout job carried; endOthers ends them. With tracing off
// every event shares plain.
func (s *Service) fanoutTraces(ctx context.Context, q interface {
	JobMetadata(context.Context, []int64) (map[int64][]byte, error)
}, others []*event.Event, otherJobs []int64, base jobMeta, plain []byte) (metaOf func(int) []byte, endOthers func(), err error) {
	if s.cfg.Tracer == nil {
		return func(int) []byte { return plain }, func() {}, nil
	}
	metas := make([][]byte, 1+len(others))
	metas[0] = s.eventTrace(ctx, base, plain)
	var spans []trace.Span
	if len(others) > 0 {
		jobMeta, err := q.JobMetadata(ctx, otherJobs)
		if err != nil {
			return nil, nil, err
		}
		primary := trace.SpanContextFromContext(ctx)
		for i, e := range others {
			octx, span := s.startSpan(ctx, "hookd.fanout", jobMeta[otherJobs[i]],
				attribute.String("hookd.event", e.ID), attribute.String("hookd.event_type", e.Type), attribute.Bool("hookd.taken_along", true))
			span.AddLink(trace.Link{SpanContext: primary})
			spans = append(spans, span)
			metas[i+1] = s.eventTrace(octx, base, plain)
		}
	}
	return func(i int) []byte { return metas[i] }, func() {
		for _, sp := range spans {
			sp.End()
		}
	}, nil
}

// drainTraces returns, with tracing on, the metadata of the jobs of a
// drain's batch by job id: each drained delivery's span continues its own
// event's trace (linked to the holder's attempt), not the holder's. Nil
// with tracing off; on a read error the drained spans fall back to the
// holder's trace.
func (s *Service) drainTraces(ctx context.Context, q *store.Q, batch []*store.AttemptInput) map[int64][]byte {
	if s.cfg.Tracer == nil || len(batch) == 0 {
		return nil
	}
	ids := make([]int64, 0, len(batch))
	for _, a := range batch {
		if a.Delivery.JobID != 0 {
			ids = append(ids, a.Delivery.JobID)
		}
	}
	m, err := q.JobMetadata(ctx, ids)
	if err != nil {
		s.log.Debug("drained deliveries' trace context unread; their spans join the holder's trace", "error", err)
		return nil
	}
	return m
}

// realError is err unless it is one of River's control errors (snooze,
// cancel): those are outcomes, not span errors.
func realError(err error) error {
	var snooze *river.JobSnoozeError
	var cancel *river.JobCancelError
	if errors.As(err, &snooze) || errors.As(err, &cancel) {
		return nil
	}
	return err
}
