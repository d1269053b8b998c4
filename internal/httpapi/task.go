package httpapi

import (
	"net/http"
	"strconv"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/ops"
)

// TaskJSON answers GET /admin/tasks?job=<id> for a bearer key: the
// tasks.get op as JSON (the console answers the same URL for a browser).
func (s *Server) TaskJSON(w http.ResponseWriter, r *http.Request) {
	p, err := s.Authenticate(r.Context(), r.Header.Get("Authorization"), ownerNamed(r))
	if err != nil {
		apperr.Write(w, r, s.Log, err)
		return
	}
	id, err := strconv.ParseInt(r.URL.Query().Get("job"), 10, 64)
	if err != nil {
		apperr.Write(w, r, s.Log, apperr.New(apperr.Invalid, "query parameter job must be a job id"))
		return
	}
	out, err := s.Ops.Op("tasks.get").Call(r.Context(), p, &ops.TaskRef{Job: id})
	if err != nil {
		apperr.Write(w, r, s.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}
