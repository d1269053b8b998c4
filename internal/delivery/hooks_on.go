//go:build hookdtest

package delivery

// The test hooks (hooks.go) run in a build with the hookdtest tag only:
// make test and .ci/run pass -tags hookdtest to go test.

import (
	"context"
	"sync/atomic"
)

// hookSet is the Service's installed hooks.
type hookSet struct{ p atomic.Pointer[Hooks] }

// SetHooks installs h (nil: none).
func (s *Service) SetHooks(h *Hooks) { s.hooks.p.Store(h) }

func (s *Service) hook() Hooks {
	if h := s.hooks.p.Load(); h != nil {
		return *h
	}
	return Hooks{}
}

func (s *Service) beforeRelease(endpointID string) {
	if h := s.hook().BeforeRelease; h != nil {
		h(endpointID)
	}
}

func (s *Service) beforeFanoutTx(eventID string) {
	if h := s.hook().BeforeFanoutTx; h != nil {
		h(eventID)
	}
}

func (s *Service) fanoutWaits(eventID string) (onWait func()) {
	if h := s.hook().FanoutWaits; h != nil {
		return func() { h(eventID) }
	}
	return nil
}

func (s *Service) beforeFanoutCommit(deferred []string) {
	if h := s.hook().BeforeFanoutCommit; h != nil {
		h(deferred)
	}
}

func (s *Service) publishQueued() func(queued int) {
	return func(n int) {
		if h := s.hook().PublishQueued; h != nil {
			h(n)
		}
	}
}

func (s *Service) publishGroupHook(size int) error {
	if h := s.hook().PublishGroup; h != nil {
		return h(size)
	}
	return nil
}

func (s *Service) beforePublishGroup(size int) {
	if h := s.hook().BeforePublishGroup; h != nil {
		h(size)
	}
}

func (s *Service) expectedGroup(held bool) {
	if h := s.hook().ExpectedGroup; h != nil {
		h(held)
	}
}

func (s *Service) fanoutWritten(oneTrip bool) {
	if h := s.hook().FanoutWritten; h != nil {
		h(oneTrip)
	}
}

func (s *Service) beforePrune(ctx context.Context) {
	if h := s.hook().BeforePrune; h != nil {
		h(ctx)
	}
}
