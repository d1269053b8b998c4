package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"go.opentelemetry.io/otel/trace"

	"github.com/hookd/hookd/internal/tracing"
)

// MetricsHandler serves the Prometheus metrics (hookd.Hookd.MetricsHandler).
func (a *App) MetricsHandler() http.Handler { return a.metrics.Handler() }

// Engine names the database: "sqlite" or "postgres".
func (a *App) Engine() string { return string(a.DB.Backend) }

// Ready reports why hookd cannot serve now (nil: it can): the database
// answers, the migrations are current, and hookd's own River client runs
// (when Config.Work). GET /readyz answers it.
func (a *App) Ready(ctx context.Context) error {
	if err := a.DB.Ping(ctx); err != nil {
		return errors.New("database unreachable")
	}
	n, err := a.DB.MigrationsPending(ctx)
	if err != nil {
		return errors.New("database unreachable")
	}
	if n > 0 {
		return fmt.Errorf("%d hookd migrations not applied: run `hookd migrate`", n)
	}
	if a.cfg.Work {
		if !a.started.Load() {
			return errors.New("River client not started") //nolint:staticcheck // ST1005: River is a name
		}
		select {
		case <-a.ownRiver.Stopped():
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
