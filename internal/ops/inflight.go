package ops

import (
	"context"
	"net/http"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/store"
)

// InFlightIn is owners.in_flight's input.
type InFlightIn struct {
	Limit int `json:"limit,omitempty" query:"limit" jsonschema:"at most this many owners and lanes (default 20, max 100)"`
}

// InFlightList is owners.in_flight's answer: the owners holding the most
// deliveries in flight now, by lane, across every process.
type InFlightList struct {
	At   time.Time             `json:"at"`
	Data []store.OwnerInFlight `json:"data"`
}

func (s *Service) inFlightOps() []*Op {
	return []*Op{
		define(Op{Name: "owners.in_flight", Summary: "The owners holding the most deliveries in flight now, by lane (deliver or deliver_slow), across every process: who holds the workers.",
			Method: http.MethodGet, Path: "/api/admin/in_flight", Status: 200, Role: owner.Operator}, s.inFlight),
	}
}

func (s *Service) inFlight(ctx context.Context, _ Principal, in *InFlightIn) (*InFlightList, error) {
	limit := in.Limit
	switch {
	case limit == 0:
		limit = 20
	case limit < 0 || limit > 100:
		return nil, apperr.New(apperr.Invalid, "limit %d: use 1 to 100, or leave it out for 20", limit)
	}
	now := s.now()
	data, err := s.DB.Q().InFlightByOwner(ctx, now.UnixMicro(), limit)
	if err != nil {
		return nil, err
	}
	return &InFlightList{At: now, Data: data}, nil
}
