package console

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"riverqueue.com/riverui"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/ops"
)

// TasksPrefix is where River UI is mounted (under the console's prefix).
const TasksPrefix = "/admin/tasks"

// NewRiverUI builds River UI on hookd's River client (either engine: a
// *river.Client[pgx.Tx] or a *river.Client[*sql.Tx]), for
// a console mounted under prefix (Config.Prefix). Its background services
// (job-count caches, a few queries a minute) start at its first request and
// run until ctx ends: a process nobody opens River UI on pays nothing for
// it.
func NewRiverUI(ctx context.Context, client any, prefix string, log *slog.Logger) (http.Handler, error) {
	opts := &riverui.HandlerOpts{Logger: log, Prefix: prefix + TasksPrefix}
	switch c := client.(type) {
	case *river.Client[pgx.Tx]:
		opts.Endpoints = riverui.NewEndpoints(c, nil)
	case *river.Client[*sql.Tx]:
		opts.Endpoints = riverui.NewEndpoints(c, nil)
	default:
		return nil, fmt.Errorf("river ui: unsupported River client %T", c)
	}
	h, err := riverui.NewHandler(opts)
	if err != nil {
		return nil, fmt.Errorf("river ui: %w", err)
	}
	return &lazyStart{ctx: ctx, h: h, log: log}, nil
}

type lazyStart struct {
	ctx  context.Context
	h    *riverui.Handler
	log  *slog.Logger
	once sync.Once
	err  error
}

func (l *lazyStart) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.once.Do(func() {
		if l.err = l.h.Start(l.ctx); l.err != nil {
			l.log.Error("river ui: start", "error", l.err)
		}
	})
	if l.err != nil {
		http.Error(w, "River UI did not start; see the server log", http.StatusInternalServerError)
		return
	}
	l.h.ServeHTTP(w, r)
}

// riverUI serves River UI to operator sessions only: it shows every
// owner's jobs.
func (c *Console) riverUI(w http.ResponseWriter, r *http.Request, s *session) {
	if !s.operator() {
		c.fail(w, r, s, apperr.New(apperr.Forbidden, "River UI shows every owner's jobs, so only operator sessions open it; your delivery log links to each job's own page"))
		return
	}
	if c.cfg.Tasks == nil {
		c.fail(w, r, s, notFound("River UI is not mounted in this process"))
		return
	}
	// River UI routes and links on the full path: give it back the prefix
	// the mount stripped.
	if c.cfg.Prefix != "" {
		r2 := r.Clone(r.Context())
		r2.URL.Path = c.cfg.Prefix + r.URL.Path
		if r.URL.RawPath != "" {
			r2.URL.RawPath = c.cfg.Prefix + r.URL.RawPath
		}
		r = r2
	}
	c.cfg.Tasks.ServeHTTP(w, r)
}

// task is a delivery log's job link: an operator goes to River UI's job
// page, an admin sees hookd's own owner-checked page (tasks.get).
func (c *Console) task(w http.ResponseWriter, r *http.Request, s *session) {
	id, err := strconv.ParseInt(r.URL.Query().Get("job"), 10, 64)
	if err != nil || id <= 0 {
		c.fail(w, r, s, apperr.New(apperr.Invalid, "query parameter job must be a job id, e.g. /admin/tasks?job=42"))
		return
	}
	if s.operator() && c.cfg.Tasks != nil {
		c.redirect(w, r, TasksPrefix+"/jobs/"+strconv.FormatInt(id, 10))
		return
	}
	t, err := callAs[ops.TaskView](r.Context(), c, s, "tasks.get", &ops.TaskRef{Job: id})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.render(w, r, http.StatusOK, "task", s, msg("title.task", id), taskPage{Job: t})
}
