package ops

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/store"
)

// MaxBatch is the most events one batch publish takes.
const MaxBatch = 1000

// PublishIn is one event to publish.
type PublishIn struct {
	Type       string          `json:"type" jsonschema:"a registered event type"`
	Subject    string          `json:"subject,omitempty" jsonschema:"what the event is about, e.g. invoice://inv_123 (raw:// subjects never leave hookd)"`
	Data       json.RawMessage `json:"data,omitempty" jsonschema:"the event's JSON payload"`
	OccurredAt *time.Time      `json:"occurred_at,omitempty" jsonschema:"RFC 3339; default now"`
	// Tenant is put in the kwork envelope: the tenant that caused the event.
	Tenant         string `json:"tenant,omitempty"`
	IdempotencyKey string `json:"idempotency_key,omitempty" header:"Idempotency-Key" jsonschema:"the same key returns the same event id and delivers once"`
}

// BatchIn is events.publish_batch's input: up to MaxBatch events.
type BatchIn struct {
	Events []PublishIn `json:"events"`
}

// BatchOut is what each event of a batch became, in order.
type BatchOut struct {
	Data []delivery.Published `json:"data"`
}

// EventRef names one event.
type EventRef struct {
	ID string `json:"id" path:"id"`
}

func (s *Service) eventOps() []*Op {
	return []*Op{
		define(Op{Name: "events.publish", NoAudit: "publishing is the hot path, not an admin change: the event itself is the record", Summary: "Publish one event; it fans out to every subscribed endpoint.", Method: http.MethodPost, Path: "/api/v1/events", Status: 202, Role: owner.Publisher, OwnerScoped: true, ConfirmsKey: true}, s.publish),
		define(Op{Name: "events.publish_batch", NoAudit: "publishing is the hot path, not an admin change: the events themselves are the record", Summary: "Publish up to 1,000 events in one transaction (all or none).", Method: http.MethodPost, Path: "/api/v1/events/batch", Status: 202, Role: owner.Publisher, OwnerScoped: true}, s.publishBatch),
		define(Op{Name: "events.get", Summary: "Get one published event.", Method: http.MethodGet, Path: "/api/v1/events/{id}", Status: 200, Role: owner.Admin, OwnerScoped: true}, s.getEvent),
	}
}

func (in *PublishIn) event(ownerID string) *event.Event {
	ev := &event.Event{OwnerID: ownerID, Type: in.Type, Subject: in.Subject, Data: in.Data, Tenant: in.Tenant, IdempotencyKey: in.IdempotencyKey}
	if in.OccurredAt != nil {
		ev.OccurredAt = *in.OccurredAt
	}
	return ev
}

// publish shares its transaction with the single publishes in flight
// beside it (the delivery service's group commit): most producers publish one event
// per request, and one commit per event is what bounds them.
func (s *Service) publish(ctx context.Context, p Principal, in *PublishIn) (*delivery.Published, error) {
	var confirm string // the key to read in the group commit
	if p.KeyUnconfirmed {
		confirm = p.KeyID
	}
	out, err := s.Delivery.PublishOneConfirming(ctx, in.event(p.OwnerID), confirm)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

func (s *Service) publishBatch(ctx context.Context, p Principal, in *BatchIn) (*BatchOut, error) {
	switch {
	case len(in.Events) == 0:
		return nil, invalid("events is empty: send 1 to %d events", MaxBatch)
	case len(in.Events) > MaxBatch:
		return nil, invalid("events has %d entries; at most %d per batch", len(in.Events), MaxBatch)
	}
	evs := make([]*event.Event, len(in.Events))
	keys := make(map[string]int, len(in.Events))
	for i := range in.Events {
		evs[i] = in.Events[i].event(p.OwnerID)
		if k := evs[i].IdempotencyKey; k != "" {
			if j, dup := keys[k]; dup {
				return nil, invalid("events[%d] and events[%d] share idempotency_key %q", j, i, k)
			}
			keys[k] = i
		}
	}
	out, err := s.publishAll(ctx, evs)
	if err != nil {
		return nil, err
	}
	return &BatchOut{Data: out}, nil
}

func (s *Service) publishAll(ctx context.Context, evs []*event.Event) ([]delivery.Published, error) {
	var out []delivery.Published
	err := s.DB.InTx(ctx, store.TxOptions{}, func(q *store.Q) error {
		var err error
		out, err = s.Delivery.Publish(ctx, q, evs)
		return err
	})
	return out, err
}

func (s *Service) getEvent(ctx context.Context, p Principal, in *EventRef) (*event.Event, error) {
	return s.DB.Q().GetEvent(ctx, p.OwnerID, in.ID)
}

func invalid(format string, args ...any) error {
	return apperr.New(apperr.Invalid, format, args...)
}
