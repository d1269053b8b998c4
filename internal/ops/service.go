package ops

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/profile"
	"github.com/hookd/hookd/internal/store"
)

// Service implements the ops.
type Service struct {
	DB       *store.DB
	Delivery *delivery.Service
	Profiles *profile.Registry
	Sealer   *endpoint.Sealer
	// Jobs reads River's job rows (task pages, per-attempt errors).
	Jobs store.JobClient
	// EgressAllow is passed to URL checks, so a URL that could never be
	// delivered is refused at create time.
	EgressAllow []netip.Prefix
	// Destinations are the kinds of destination owners may create or
	// point endpoints at (destination.Kinds' names; nil: every kind).
	// An endpoint of another kind saved before keeps delivering.
	Destinations []string
	// UserAgent is what deliveries send, shown with a delivery's headers
	// ("": hookd/1, the delivery service's default).
	UserAgent string
	// ForeignGrants: the program answers for grants itself
	// (hookd.Config.Scope), so an endpoint's grant_id is not looked
	// up in hookd's grants store.
	ForeignGrants bool
	// DefaultProfile is given to owners created implicitly.
	DefaultProfile string
	Now            func() time.Time
	Log            *slog.Logger
	ops            []*Op
	// destinations overrides Destinations (SetDestinations).
	destinations atomic.Pointer[[]string]
	// recoverInline overrides RecoverInline (SetRecoverInline).
	recoverInline atomic.Int64
}

// Ops returns every declared op, in a stable order.
func (s *Service) Ops() []*Op {
	if s.ops == nil {
		s.ops = append(s.ops, s.endpointOps()...)
		s.ops = append(s.ops, s.signingOps()...)
		s.ops = append(s.ops, s.pollOps()...)
		s.ops = append(s.ops, s.retryNowOp())
		s.ops = append(s.ops, s.codeOps()...)
		s.ops = append(s.ops, s.grantOps()...)
		s.ops = append(s.ops, s.eventTypeOps()...)
		s.ops = append(s.ops, s.eventOps()...)
		s.ops = append(s.ops, s.eventSearchOps()...)
		s.ops = append(s.ops, s.ownerOps()...)
		s.ops = append(s.ops, s.inFlightOps()...)
		s.ops = append(s.ops, s.recoverOps()...)
		s.ops = append(s.ops, s.exportPageOp())
		s.ops = append(s.ops, s.apiKeyOps()...)
		s.ops = append(s.ops, s.activityOps()...)
		s.ops = append(s.ops, s.deliveryOps()...)
		s.ops = append(s.ops, s.taskOps()...)
		s.ops = append(s.ops, s.portalOps()...)
		s.ops = append(s.ops, s.brandingOps()...)
		s.ops = append(s.ops, s.auditOps()...)
		for _, o := range s.ops {
			if o.Method != http.MethodGet && o.Audit == "" && o.NoAudit == "" {
				panic(fmt.Sprintf("op %s changes state but declares neither Audit (the resource it changes) nor NoAudit (why it writes no audit record)", o.Name))
			}
			o.svc = s
		}
	}
	return s.ops
}

// Op returns an op by name (nil if none).
func (s *Service) Op(name string) *Op {
	for _, o := range s.Ops() {
		if o.Name == name {
			return o
		}
	}
	return nil
}

// ownerProfile loads the acting owner and its profile.
func (s *Service) ownerProfile(ctx context.Context, ownerID string) (*owner.Owner, profile.Profile, error) {
	o, err := s.DB.Q().GetOwner(ctx, ownerID)
	if err != nil {
		return nil, nil, err
	}
	p, err := s.Profiles.Get(o.Profile)
	if err != nil {
		return nil, nil, err
	}
	return o, p, nil
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}
