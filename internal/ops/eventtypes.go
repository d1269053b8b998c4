package ops

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/store"
)

// PutEventTypeIn registers or changes one of the owner's event types.
type PutEventTypeIn struct {
	Name        string          `json:"name" path:"type" jsonschema:"the event type, e.g. invoice.paid"`
	Exposure    string          `json:"exposure,omitempty" jsonschema:"webhook (fans out to endpoints) or internal (default: never leaves hookd)"`
	Scoped      bool            `json:"scoped,omitempty" jsonschema:"judge events of this type for scope: an endpoint with a grant gets them as the grant allows, one without only when published or was_published (default false: every subscribed endpoint gets them)"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty" jsonschema:"a JSON Schema (draft 2020-12) that every published event's data must match; a publish that does not is refused with 422 naming the field; omit for none (any object)"`
	Example     json.RawMessage `json:"example,omitempty" jsonschema:"an example data payload; it must match schema"`
}

// EventTypeRef names one event type.
type EventTypeRef struct {
	Name string `json:"name" path:"type" jsonschema:"the event type, e.g. invoice.paid"`
}

func (s *Service) eventTypeOps() []*Op {
	return []*Op{
		define(Op{Name: "event_types.put", Audit: "event_type", Summary: "Register an event type or change its exposure, whether it is scoped, and the JSON Schema its events' data must match.", Method: http.MethodPut, Path: "/api/admin/event_types/{type}", Status: 200, Role: owner.Admin, OwnerScoped: true}, s.putEventType),
		define(Op{Name: "event_types.get", Summary: "Get one event type the owner has registered or inherits, with its exposure, schema and example.", Method: http.MethodGet, Path: "/api/admin/event_types/{type}", Status: 200, Role: owner.Admin, OwnerScoped: true}, s.getEventType),
		define(Op{Name: "event_types.list", Summary: "List every event type the owner has registered or inherits, with its exposure, schema and example.", Method: http.MethodGet, Path: "/api/admin/event_types", Status: 200, Role: owner.Admin, OwnerScoped: true}, s.listEventTypes),
	}
}

func (s *Service) putEventType(ctx context.Context, p Principal, in *PutEventTypeIn) (*event.Type, error) {
	if err := event.ValidateTypeName(in.Name); err != nil {
		return nil, err
	}
	if strings.HasPrefix(in.Name, delivery.OwnTypePrefix) {
		// A schema or an internal exposure would silence hookd's own
		// notifications of this owner's failing endpoints.
		return nil, invalid("type %q: hookd.endpoint.* are hookd's own failure notifications, built in; an owner subscribes to them but cannot redefine them", in.Name)
	}
	exp, err := event.ParseExposure(in.Exposure)
	if err != nil {
		return nil, err
	}
	if len(in.Description) > 1024 {
		return nil, invalid("description is %d bytes; at most 1024", len(in.Description))
	}
	t := &event.Type{OwnerID: p.OwnerID, Name: in.Name, Exposure: exp, Scoped: in.Scoped, Description: in.Description, Schema: in.Schema, Example: in.Example, CreatedAt: s.now()}
	sch, err := t.CheckSchema()
	if err != nil {
		return nil, err
	}
	if err := s.DB.InTx(ctx, store.TxOptions{}, func(q *store.Q) error { return q.PutEventType(ctx, t) }); err != nil {
		return nil, err
	}
	// Other processes compile it at their next publish of the type: they
	// read its new hash with the type.
	s.Delivery.KeepSchema(t.SchemaHash, sch)
	return t, nil
}

func (s *Service) getEventType(ctx context.Context, p Principal, in *EventTypeRef) (*event.Type, error) {
	if err := event.ValidateTypeName(in.Name); err != nil {
		return nil, err
	}
	return s.DB.Q().GetEventType(ctx, p.OwnerID, in.Name)
}

func (s *Service) listEventTypes(ctx context.Context, p Principal, _ *Empty) (*EventTypeList, error) {
	ts, err := s.DB.Q().ListEventTypes(ctx, p.OwnerID)
	if err != nil {
		return nil, err
	}
	if ts == nil {
		ts = []*event.Type{}
	}
	return &EventTypeList{Data: ts}, nil
}
