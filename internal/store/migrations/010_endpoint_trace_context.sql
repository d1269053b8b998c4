-- trace_context: the endpoint's attempts carry the W3C trace context of
-- hookd's deliver span (traceparent, tracestate) while tracing is on. Off
-- by default: no trace headers leave hookd unless an endpoint opts in.
ALTER TABLE hookd_endpoints ADD COLUMN trace_context BOOLEAN NOT NULL DEFAULT FALSE;
