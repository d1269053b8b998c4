package ops

import (
	"context"
	"net/http"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/owner"
)

// RetriedNow is retry_now's answer.
type RetriedNow struct {
	// RetriedNow counts the pending deliveries that were waiting (a
	// retry's backoff, a Retry-After, the failing cooldown) and are due now.
	RetriedNow int    `json:"retried_now" jsonschema:"pending deliveries brought forward to now"`
	Note       string `json:"note,omitempty" jsonschema:"what the count covers, when it is 0"`
}

// retryNowOp is the owner's "I fixed my receiver" lever: without it a
// failing endpoint's deliveries wait out their backoff or the cooldown.
func (s *Service) retryNowOp() *Op {
	return define(Op{Name: "webhooks.retry_now", Audit: "endpoint", Summary: "Make every pending delivery of the endpoint due now: retry backoff, Retry-After and the failing cooldown included. Answers how many were brought forward.",
		Method: http.MethodPost, Path: "/api/admin/webhooks/{id}/retry_now", Status: 202, Role: owner.Admin, OwnerScoped: true}, s.retryNow)
}

func (s *Service) retryNow(ctx context.Context, p Principal, in *EndpointRef) (*RetriedNow, error) {
	e, err := s.DB.Q().GetEndpoint(ctx, p.OwnerID, in.ID)
	if err != nil {
		return nil, err
	}
	if !e.Enabled {
		return nil, apperr.New(apperr.Conflict, "endpoint %s is disabled; enable it (PATCH enabled=true) before retrying its deliveries", e.ID)
	}
	n, err := s.DB.RetryNow(ctx, e.ID, s.now().UnixMicro())
	if err != nil {
		return nil, err
	}
	out := &RetriedNow{RetriedNow: n}
	if n == 0 {
		out.Note = "no pending delivery was waiting: retry_now brings forward pending ones only; failed ones (discarded or out of attempts) are re-sent by redeliver"
	}
	return out, nil
}
