package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/metrics"
	"github.com/hookd/hookd/internal/ops"
	"github.com/hookd/hookd/internal/tracing"
)

// Server is the REST projection of the ops.
type Server struct {
	Ops *ops.Service
	Log *slog.Logger
	// Extra mounts more handlers (MCP, OpenAPI) on the same mux.
	Extra map[string]http.Handler
	// Console, when set, is the web page: it answers /, /admin/… and
	// GET /admin/tasks for a browser (a request without a bearer key).
	Console http.Handler
	// Ready says why hookd cannot serve now (nil: ready): GET /readyz.
	Ready func(ctx context.Context) error
	// Tracing, when set, gives every request a span (otelhttp), continuing
	// a caller's W3C traceparent.
	Tracing trace.TracerProvider
	// Heartbeat is how often a poll stream (SSE) with nothing to send
	// writes a comment (default 15 s).
	Heartbeat time.Duration
	// Metrics counts the polls (nil: none).
	Metrics *metrics.Metrics
}

// Handler returns the HTTP handler: every op's route, /healthz, /readyz,
// the job page.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, op := range s.Ops.Ops() {
		mux.Handle(op.Method+" "+op.Path, s.opHandler(op))
	}
	mux.HandleFunc("GET /healthz", Health(s.Ops.Engine()))
	mux.HandleFunc("GET /readyz", Readiness(s.Ready, s.Log))
	mux.HandleFunc("GET /admin/tasks", s.tasks)
	mux.HandleFunc("GET /api/admin/webhooks/{id}/deliveries/export", s.export)
	mux.HandleFunc("GET /api/v1/poll/{id}", s.poll)
	mux.HandleFunc("GET /api/v1/poll/{id}/stream", s.stream)
	mux.HandleFunc("POST /api/v1/poll/{id}/ack", s.pollAck)
	mux.HandleFunc("POST /api/v1/poll/{id}/seek", s.pollSeek)
	mux.HandleFunc(jwksPath, s.jwks)
	if s.Console != nil {
		mux.Handle("/admin/", s.Console)
		mux.Handle("/portal/", s.Console)
		mux.Handle("GET /portal.js", s.Console)
		mux.Handle("/{$}", s.Console)
	}
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		apperr.Write(w, r, s.Log, apperr.New(apperr.NotFound, "no route %s %s (see /openapi.json)", r.Method, r.URL.Path))
	})
	for pattern, h := range s.Extra {
		mux.Handle(pattern, h)
	}
	if s.Tracing != nil {
		// A portal page's path holds its session's token: not traced.
		return otelhttp.NewHandler(mux, "hookd.api", otelhttp.WithTracerProvider(s.Tracing), otelhttp.WithPropagators(tracing.Propagator),
			otelhttp.WithFilter(func(r *http.Request) bool { return !strings.Contains(r.URL.Path, "/portal/") }))
	}
	return mux
}

// tasks answers a bearer key with JSON and a browser with the console.
func (s *Server) tasks(w http.ResponseWriter, r *http.Request) {
	if s.Console != nil && r.Header.Get("Authorization") == "" {
		s.Console.ServeHTTP(w, r)
		return
	}
	s.TaskJSON(w, r)
}

func (s *Server) opHandler(op *ops.Op) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := s.authenticate(r.Context(), r.Header.Get("Authorization"), ownerNamed(r), op.ConfirmsKey)
		if err != nil {
			apperr.Write(w, r, s.Log, err)
			return
		}
		p.Actor.Remote = r.RemoteAddr
		in := op.NewInput()
		if err := bind(w, r, in); err != nil {
			apperr.Write(w, r, s.Log, err)
			return
		}
		ctx := r.Context()
		if op.AnswersURL {
			ctx = ops.WithOrigin(ctx, requestOrigin(r))
		}
		out, err := op.Call(ctx, p, in)
		if err != nil {
			apperr.Write(w, r, s.Log, err)
			return
		}
		writeJSON(w, op.Status, out)
	})
}

// requestOrigin is the scheme and host the caller reached hookd at (behind
// a TLS-terminating proxy, its X-Forwarded-Proto says https).
func requestOrigin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func ownerNamed(r *http.Request) string {
	if o := r.Header.Get("Hookd-Owner"); o != "" {
		return o
	}
	return r.URL.Query().Get("owner")
}

// Authenticate resolves a bearer key to a principal. ownerName is the owner
// an operator key acts on (ignored for owner-bound keys unless it names a
// different owner, which is refused).
func (s *Server) Authenticate(ctx context.Context, authorization, ownerName string) (ops.Principal, error) {
	return s.authenticate(ctx, authorization, ownerName, false)
}

// authenticate is Authenticate; cached lets the key come from the key
// cache (ops.Service.Authenticate).
func (s *Server) authenticate(ctx context.Context, authorization, ownerName string, cached bool) (ops.Principal, error) {
	token, ok := strings.CutPrefix(authorization, "Bearer ")
	if !ok {
		token = ""
	}
	return s.Ops.Authenticate(ctx, token, ownerName, cached)
}
