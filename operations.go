package hookd

import (
	"context"
	"net/http"
)

// MetricsHandler serves hookd's Prometheus metrics (docs/operations/
// metrics.md): publishes, delivery outcomes, attempt durations, latency,
// the backlog, endpoints by state, River's queue depth, and the Go and
// process collectors. It needs no key and shows no owner data unless
// Config.MetricsOwnerLabels; mount it where your scraper reaches it.
func (h *Hookd) MetricsHandler() http.Handler { return h.a.MetricsHandler() }

// Engine names the database hookd runs on: "sqlite" or "postgres" (what
// GET /healthz answers as its engine).
func (h *Hookd) Engine() string { return h.a.Engine() }

// Ready reports why hookd cannot serve now (nil: it can): the database
// must answer, hookd's migrations be current, and hookd's own River client
// run (when Config.Work). The API answers it at GET /readyz.
func (h *Hookd) Ready(ctx context.Context) error { return h.a.Ready(ctx) }
