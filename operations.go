package hookd

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"go.opentelemetry.io/otel/trace"

	"github.com/hookd/hookd/internal/tracing"
)

// MetricsHandler serves hookd's Prometheus metrics (docs/operations/
// metrics.md): publishes, delivery outcomes, attempt durations, latency,
// the backlog, endpoints by state, River's queue depth, and the Go and
// process collectors. It needs no key and shows no owner data unless
// Config.MetricsOwnerLabels; mount it where your scraper reaches it.
func (h *Hookd) MetricsHandler() http.Handler { return h.metrics.Handler() }

// Engine names the database hookd runs on: "sqlite" or "postgres" (what
// GET /healthz answers as its engine).
func (h *Hookd) Engine() string { return string(h.db.Backend) }

// Ready reports why hookd cannot serve now (nil: it can): the database
// must answer, hookd's migrations be current, and hookd's own River client
// run (when Config.Work). The API answers it at GET /readyz.
func (h *Hookd) Ready(ctx context.Context) error {
	if err := h.db.Ping(ctx); err != nil {
		return errors.New("database unreachable")
	}
	n, err := h.db.MigrationsPending(ctx)
	if err != nil {
		return errors.New("database unreachable")
	}
	if n > 0 {
		return fmt.Errorf("%d hookd migrations not applied: run `hookd migrate`", n)
	}
	if h.cfg.Work {
		if !h.started.Load() {
			return errors.New("River client not started") //nolint:staticcheck // ST1005: River is a name
		}
		select {
		case <-h.ownRiver.Stopped():
			return errors.New("River client stopped") //nolint:staticcheck // ST1005: River is a name
		default:
		}
	}
	return nil
}

// tracer is hookd's own tracer on tp (nil: tracing off).
func tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return nil
	}
	return tp.Tracer(tracing.Name)
}
