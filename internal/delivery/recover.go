package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/store"
)

// RecoverArgs is the webhook.recover job: a recovery too large to run in
// its request (webhooks.recover), run in the background in batches; its
// output is its progress (RecoverProgress).
type RecoverArgs struct {
	OwnerID    string   `json:"owner_id"`
	EndpointID string   `json:"endpoint_id"`
	Since      int64    `json:"since"` // unix µs
	Until      int64    `json:"until"` // unix µs
	States     []string `json:"states"`
	Total      int      `json:"total"` // counted when it was asked for
}

// Kind is the job kind River knows the recovery by.
func (RecoverArgs) Kind() string { return "webhook.recover" }

// RecoverProgress is a recovery job's output: how many deliveries it has
// re-enqueued of the Total counted when it was asked for.
type RecoverProgress struct {
	Recovered int `json:"recovered"`
	Total     int `json:"total"`
}

type recoverWorker struct {
	river.WorkerDefaults[RecoverArgs]
	s *Service
}

// Timeout: a recovery of the whole retention window may take minutes;
// each batch is its own transaction, and a retry starts over past what is
// already pending again.
func (w *recoverWorker) Timeout(*river.Job[RecoverArgs]) time.Duration { return time.Hour }

func (w *recoverWorker) Work(ctx context.Context, job *river.Job[RecoverArgs]) error {
	s, a := w.s, job.Args
	o, err := s.db.Q().GetOwner(ctx, a.OwnerID)
	if apperr.IsNotFound(err) {
		return river.JobCancel(fmt.Errorf("owner %s deleted", a.OwnerID))
	}
	if err != nil {
		return err
	}
	if _, err := s.db.Q().GetEndpoint(ctx, a.OwnerID, a.EndpointID); apperr.IsNotFound(err) {
		return river.JobCancel(fmt.Errorf("endpoint %s deleted", a.EndpointID))
	} else if err != nil {
		return err
	}
	p, err := s.cfg.Profiles.Get(o.Profile)
	if err != nil {
		return river.JobCancel(err)
	}
	progress := func(n int) {
		if s.db.Jobs() == nil {
			return
		}
		if _, err := s.db.Jobs().JobUpdate(ctx, job.ID, &river.JobUpdateParams{Output: RecoverProgress{Recovered: n, Total: a.Total}}); err != nil {
			s.log.Warn("recording a recovery's progress failed; it goes on", "job", job.ID, "error", err)
		}
	}
	n, err := s.Recover(ctx, store.RecoverWindow{EndpointID: a.EndpointID, Since: a.Since, Until: a.Until, States: a.States}, p, progress)
	if err != nil {
		return err
	}
	s.log.Info("recovery done", "endpoint", a.EndpointID, "recovered", n)
	return river.RecordOutput(ctx, RecoverProgress{Recovered: n, Total: a.Total})
}

// StartRecovery enqueues a webhook.recover job for the window w of an
// owner's endpoint (total deliveries counted in it) and returns its id.
func (s *Service) StartRecovery(ctx context.Context, ownerID string, w store.RecoverWindow, total int) (int64, error) {
	var id int64
	err := s.db.InTx(ctx, store.TxOptions{}, func(q *store.Q) error {
		res, err := q.InsertJobs(ctx, []river.InsertManyParams{{
			Args:       RecoverArgs{OwnerID: ownerID, EndpointID: w.EndpointID, Since: w.Since, Until: w.Until, States: w.States, Total: total},
			InsertOpts: &river.InsertOpts{Queue: QueueFanout, MaxAttempts: 3},
		}})
		if err != nil {
			return fmt.Errorf("start recovery: %w", err)
		}
		id = res[0].Job.ID
		return nil
	})
	return id, err
}

// Recovery is a recovery job's state as its owner sees it.
type Recovery struct {
	TaskID    int64     `json:"task_id"`
	State     string    `json:"state"` // River's: available, running, completed, retryable, discarded, cancelled…
	Recovered int       `json:"recovered"`
	Total     int       `json:"total"`
	Since     time.Time `json:"since"`
	Until     time.Time `json:"until"`
	States    []string  `json:"states"`
	Error     string    `json:"error,omitempty"`
}

// GetRecovery reads recovery job id of the owner's endpoint: NotFound
// when it is no such job (another kind, endpoint or owner), or River has
// deleted it (a day after it finished).
func (s *Service) GetRecovery(ctx context.Context, ownerID, endpointID string, id int64) (*Recovery, error) {
	notFound := apperr.New(apperr.NotFound, "no recovery %d of endpoint %s (River forgets a finished one after a day)", id, endpointID)
	if s.db.Jobs() == nil {
		return nil, notFound
	}
	job, err := s.db.Jobs().JobGet(ctx, id)
	if errors.Is(err, river.ErrNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	var a RecoverArgs
	if job.Kind != (RecoverArgs{}).Kind() || json.Unmarshal(job.EncodedArgs, &a) != nil || a.OwnerID != ownerID || a.EndpointID != endpointID {
		return nil, notFound
	}
	r := &Recovery{TaskID: id, State: string(job.State), Total: a.Total, Since: time.UnixMicro(a.Since).UTC(), Until: time.UnixMicro(a.Until).UTC(), States: a.States}
	var prog RecoverProgress
	if out := job.Output(); len(out) > 0 && json.Unmarshal(out, &prog) == nil {
		r.Recovered = prog.Recovered
	}
	if len(job.Errors) > 0 {
		r.Error = job.Errors[len(job.Errors)-1].Error
	}
	return r, nil
}

// Retention is how long finished deliveries and events are kept: a
// recovery reaches no further back.
func (s *Service) Retention() time.Duration { return s.cfg.Retention }
