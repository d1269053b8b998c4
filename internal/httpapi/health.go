package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/version"
)

// Health answers GET /healthz: the process is alive (it asks nothing of the
// database; /readyz does), with the build's version and VCS revision
// (commit time and modified flag when known; else revision says unknown).
func Health(engine string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := version.Get()
		out := map[string]any{"ok": true, "version": v.Version, "revision": v.RevisionText(), "engine": engine}
		if v.Revision != "" {
			out["modified"] = v.Modified
			if v.Time != "" {
				out["vcs_time"] = v.Time
			}
		}
		writeJSON(w, http.StatusOK, out)
	}
}

// Readiness answers GET /readyz: 200 when ready (nil) says so, else 503
// unavailable with the reason and Retry-After. It asks again on every call,
// so it turns 200 again once the database is back, without a restart.
func Readiness(ready func(context.Context) error, log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if ready != nil {
			if err := ready(ctx); err != nil {
				apperr.Write(w, r, log, apperr.New(apperr.Unavailable, "not ready: %v", err))
				return
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"ready": true})
	}
}
