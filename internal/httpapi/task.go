package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/delivery"
)

// TaskView is a River job as the delivery log links it
// (/admin/tasks?job=<id>): its attempts and errors.
type TaskView struct {
	ID          int64       `json:"id"`
	Kind        string      `json:"kind"`
	State       string      `json:"state"`
	Attempt     int         `json:"attempt"`
	MaxAttempts int         `json:"max_attempts"`
	Args        any         `json:"args"`
	Errors      []TaskError `json:"errors"`
	CreatedAt   time.Time   `json:"created_at"`
	ScheduledAt time.Time   `json:"scheduled_at"`
	FinalizedAt *time.Time  `json:"finalized_at,omitempty"`
}

type TaskError struct {
	At      time.Time `json:"at"`
	Attempt int       `json:"attempt"`
	Error   string    `json:"error"`
}

// task shows one deliver job of the caller's owner. Finished jobs are
// deleted by River after a while; the delivery record stays.
func (s *Server) task(w http.ResponseWriter, r *http.Request) {
	p, err := s.Authenticate(r.Context(), r.Header.Get("Authorization"), ownerNamed(r))
	if err != nil {
		writeError(w, r, s.Log, err)
		return
	}
	id, err := strconv.ParseInt(r.URL.Query().Get("job"), 10, 64)
	if err != nil {
		writeError(w, r, s.Log, apperr.New(apperr.Invalid, "query parameter job must be a job id"))
		return
	}
	job, err := s.Queue.JobGet(r.Context(), id)
	if err != nil {
		writeError(w, r, s.Log, apperr.New(apperr.NotFound, "job %d not found (finished jobs are removed after a while; the delivery record remains)", id))
		return
	}
	// Only the caller's deliveries' jobs: the job's arguments name the
	// delivery, whose record says whose it is and which job is its own.
	var args struct {
		EndpointID string `json:"endpoint_id"`
		EventID    string `json:"event_id"`
	}
	ok := job.Kind == delivery.DeliverArgs{}.Kind() && json.Unmarshal(job.EncodedArgs, &args) == nil
	if ok {
		if ok, err = s.DB.Q().OwnsJob(r.Context(), p.OwnerID, id, args.EndpointID, args.EventID); err != nil {
			writeError(w, r, s.Log, err)
			return
		}
	}
	if !ok {
		writeError(w, r, s.Log, apperr.New(apperr.NotFound, "job %d not found", id))
		return
	}
	v := TaskView{ID: job.ID, Kind: job.Kind, State: string(job.State), Attempt: job.Attempt, MaxAttempts: job.MaxAttempts,
		Args: jsonRaw(job.EncodedArgs), Errors: []TaskError{}, CreatedAt: job.CreatedAt, ScheduledAt: job.ScheduledAt, FinalizedAt: job.FinalizedAt}
	for _, e := range job.Errors {
		v.Errors = append(v.Errors, TaskError{At: e.At, Attempt: e.Attempt, Error: e.Error})
	}
	writeJSON(w, http.StatusOK, v)
}
