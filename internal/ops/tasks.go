package ops

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/owner"
)

// TaskView is a River job as the delivery log links it
// (/admin/tasks?job=<id>): its attempts and errors, and the delivery it
// serves.
type TaskView struct {
	ID          int64           `json:"id"`
	Kind        string          `json:"kind"`
	State       string          `json:"state"`
	Attempt     int             `json:"attempt"`
	MaxAttempts int             `json:"max_attempts"`
	Args        json.RawMessage `json:"args"`
	Errors      []TaskError     `json:"errors"`
	CreatedAt   time.Time       `json:"created_at"`
	ScheduledAt time.Time       `json:"scheduled_at"`
	FinalizedAt *time.Time      `json:"finalized_at,omitempty"`
	EndpointID  string          `json:"endpoint_id"`
	EventID     string          `json:"event_id"`
	DeliveryID  string          `json:"delivery_id"`
}

// TaskError is one failed attempt of a River job.
type TaskError struct {
	At      time.Time `json:"at"`
	Attempt int       `json:"attempt"`
	Error   string    `json:"error"`
}

// TaskRef names one River job.
type TaskRef struct {
	Job int64 `json:"job" path:"job" jsonschema:"the River job id (the delivery log's job_id)"`
}

func (s *Service) taskOps() []*Op {
	return []*Op{
		define(Op{Name: "tasks.get", Summary: "One River job of the owner's deliveries: kind, state, attempt, errors, schedule and the delivery it serves. Another owner's job is not found.", Method: http.MethodGet, Path: "/api/admin/tasks/{job}", Status: 200, Role: owner.Admin, OwnerScoped: true}, s.task)}
}

// task shows one deliver job of the caller's owner. Finished jobs are
// deleted by River after a while; the delivery record stays.
func (s *Service) task(ctx context.Context, p Principal, in *TaskRef) (*TaskView, error) {
	notFound := apperr.New(apperr.NotFound, "job %d not found (finished jobs are removed after a while; the delivery record remains)", in.Job)
	if in.Job <= 0 || s.Jobs == nil {
		return nil, notFound
	}
	job, err := s.Jobs.JobGet(ctx, in.Job)
	if err != nil {
		return nil, notFound
	}
	// Only the caller's deliveries' jobs: the job's arguments name the
	// delivery, whose record says whose it is and which job is its own.
	var args delivery.DeliverArgs
	if job.Kind != args.Kind() || json.Unmarshal(job.EncodedArgs, &args) != nil {
		return nil, notFound
	}
	ok, err := s.DB.Q().OwnsJob(ctx, p.OwnerID, in.Job, args.EndpointID, args.EventID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, notFound
	}
	d, err := s.DB.Q().FindDelivery(ctx, args.EndpointID, args.EventID)
	if err != nil {
		return nil, err
	}
	v := &TaskView{ID: job.ID, Kind: job.Kind, State: string(job.State), Attempt: job.Attempt, MaxAttempts: job.MaxAttempts,
		Args: job.EncodedArgs, Errors: []TaskError{}, CreatedAt: job.CreatedAt, ScheduledAt: job.ScheduledAt, FinalizedAt: job.FinalizedAt,
		EndpointID: args.EndpointID, EventID: args.EventID, DeliveryID: d.ID}
	for _, e := range job.Errors {
		v.Errors = append(v.Errors, TaskError{At: e.At, Attempt: e.Attempt, Error: e.Error})
	}
	return v, nil
}
