package ops

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/store"
)

// RecoverInline is the most deliveries webhooks.recover re-enqueues in its
// request; a larger window runs in the background as a task.
const RecoverInline = 1000

// SetRecoverInline changes RecoverInline for this service (n ≤ 0: the
// default): tests reach the background path with a small window.
func (s *Service) SetRecoverInline(n int) { s.recoverInline.Store(int64(n)) }

func (s *Service) inlineMost() int {
	if n := s.recoverInline.Load(); n > 0 {
		return int(n)
	}
	return RecoverInline
}

// RecoverIn is webhooks.recover's input.
type RecoverIn struct {
	ID     string   `json:"id" path:"id"`
	Since  string   `json:"since" jsonschema:"RFC 3339: re-send deliveries created at or after this time (within the retention window)"`
	Until  string   `json:"until,omitempty" jsonschema:"RFC 3339: and before this time (default: now)"`
	States []string `json:"states,omitempty" jsonschema:"which deliveries: failed (default) and/or delivered (re-sent though the receiver answered 2xx)"`
}

// Recovered is webhooks.recover's answer: how many deliveries were
// re-enqueued, or, for a large window, the task that re-enqueues them.
type Recovered struct {
	Recovered int    `json:"recovered" jsonschema:"deliveries re-enqueued by this request"`
	Total     int    `json:"total" jsonschema:"deliveries in the window"`
	TaskID    int64  `json:"task_id,omitempty" jsonschema:"a window over 1000 deliveries runs in the background: follow it with webhooks.recovery"`
	Note      string `json:"note,omitempty"`
}

// RecoveryRef names one recovery task of an endpoint.
type RecoveryRef struct {
	ID     string `json:"id" path:"id"`
	TaskID int64  `json:"task_id" path:"task_id" jsonschema:"the task_id webhooks.recover answered"`
}

func (s *Service) recoverOps() []*Op {
	const base = "/api/admin/webhooks"
	return []*Op{
		define(Op{Name: "webhooks.recover", Audit: "endpoint", Summary: "Re-send the endpoint's deliveries created in a time window (failed ones by default) with a fresh attempt budget; a window over 1000 deliveries runs in the background.",
			Method: http.MethodPost, Path: base + "/{id}/recover", Status: 202, Role: owner.Admin, OwnerScoped: true}, s.recover),
		define(Op{Name: "webhooks.recovery", Summary: "A background recovery's progress: its state and how many deliveries it has re-enqueued.",
			Method: http.MethodGet, Path: base + "/{id}/recoveries/{task_id}", Status: 200, Role: owner.Admin, OwnerScoped: true}, s.recovery),
	}
}

func (s *Service) recover(ctx context.Context, p Principal, in *RecoverIn) (*Recovered, error) {
	w, err := s.recoverWindow(in)
	if err != nil {
		return nil, err
	}
	e, prof, err := s.enabledEndpoint(ctx, p, in.ID, "recovering")
	if err != nil {
		return nil, err
	}
	w.EndpointID = e.ID
	total, err := s.DB.Q().CountRecoverable(ctx, w)
	if err != nil {
		return nil, err
	}
	if total > s.inlineMost() {
		id, err := s.Delivery.StartRecovery(ctx, p.OwnerID, w, total)
		if err != nil {
			return nil, err
		}
		return &Recovered{Total: total, TaskID: id, Note: "running in the background: GET /api/admin/webhooks/" + e.ID + "/recoveries/{task_id} shows its progress"}, nil
	}
	n, err := s.Delivery.Recover(ctx, w, prof, nil)
	if err != nil {
		return nil, err
	}
	out := &Recovered{Recovered: n, Total: total}
	if n == 0 {
		out.Note = "no delivery in that window and state: pending ones are on their way (retry_now brings them forward)"
	}
	return out, nil
}

// recoverWindow checks a recovery's window: since given, until after it,
// neither in the future past now, since within the retention window;
// states failed and/or delivered.
func (s *Service) recoverWindow(in *RecoverIn) (store.RecoverWindow, error) {
	var w store.RecoverWindow
	now := s.now()
	since, err := parseTime("since", in.Since)
	if err != nil {
		return w, err
	}
	if since.IsZero() {
		return w, apperr.New(apperr.Invalid, "since is required: the RFC 3339 time the window starts (e.g. %s)", now.Add(-24*time.Hour).Format(time.RFC3339)).Keyed("window.since_required")
	}
	until, err := parseTime("until", in.Until)
	if err != nil {
		return w, err
	}
	if until.IsZero() || until.After(now) {
		until = now
	}
	if !since.Before(until) {
		return w, apperr.New(apperr.Invalid, "since (%s) must be before until (%s)", since.Format(time.RFC3339), until.Format(time.RFC3339)).Keyed("window.order")
	}
	if oldest := now.Add(-s.Delivery.Retention()); since.Before(oldest) {
		return w, apperr.New(apperr.Invalid, "since (%s) is beyond the retention window (%s): deliveries older than %s are deleted; start at or after it", since.Format(time.RFC3339), s.Delivery.Retention(), oldest.Format(time.RFC3339)).Keyed("window.retention", oldest)
	}
	states := in.States
	if len(states) == 0 {
		states = []string{"failed"}
	}
	for i, st := range states {
		st = strings.TrimSpace(st)
		if st != "failed" && st != "delivered" {
			return w, apperr.New(apperr.Invalid, "states[%d] %q: use failed or delivered (pending deliveries are on their way; retry_now brings them forward)", i, st).Keyed("window.states")
		}
		states[i] = st
	}
	slices.Sort(states)
	return store.RecoverWindow{Since: since.UnixMicro(), Until: until.UnixMicro(), States: slices.Compact(states)}, nil
}

func (s *Service) recovery(ctx context.Context, p Principal, in *RecoveryRef) (*delivery.Recovery, error) {
	if _, err := s.DB.Q().GetEndpoint(ctx, p.OwnerID, in.ID); err != nil {
		return nil, err
	}
	return s.Delivery.GetRecovery(ctx, p.OwnerID, in.ID, in.TaskID)
}
