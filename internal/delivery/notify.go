package delivery

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/profile"
	"github.com/hookd/hookd/internal/store"
)

// Failure notifications (Svix's "operational webhooks"): when an endpoint
// starts failing, is disabled or recovers, hookd publishes one of these
// built-in, webhook-exposed types into the owner's own stream, in the
// transaction that moves the endpoint's health. They go to the owner's
// other endpoints that subscribe to them, never to the endpoint they are
// about (its id is the event's subject: see AboutEndpoint).
const (
	Failing   = "hookd.endpoint.failing"
	Disabled  = "hookd.endpoint.disabled"
	Recovered = "hookd.endpoint.recovered"
)

// NotificationTypes are the failure notifications' event types, registered
// for every owner at start.
var NotificationTypes = []event.Type{
	{Name: Failing, Exposure: event.Webhook, Description: "One of your endpoints stopped answering 2xx: {endpoint_id, failing_since, last_status, last_error}. Sent to your other endpoints that subscribe."},
	{Name: Disabled, Exposure: event.Webhook, Description: "One of your endpoints was disabled after failing continuously: {endpoint_id, failing_since, reason}. Sent to your other endpoints that subscribe."},
	{Name: Recovered, Exposure: event.Webhook, Description: "One of your failing endpoints answered 2xx again: {endpoint_id, failing_since, recovered_at}. Sent to your other endpoints that subscribe."},
}

// BuiltinTypes are the types every start of hookd shares, whatever its
// catalogs: the failure notifications, offered to every owner, and each
// profile's own types (Profile set), offered to that profile's owners.
func BuiltinTypes(profiles *profile.Registry) []event.Type {
	out := slices.Clone(NotificationTypes)
	for _, p := range profiles.All() {
		for _, t := range p.Catalog() {
			t.Profile = p.Name()
			out = append(out, t)
		}
	}
	return out
}

const endpointSubject = "hookd://endpoints/"

// AboutEndpoint returns the endpoint a failure notification is about ("" for
// any other event): fanout never offers the notification to it.
func AboutEndpoint(ev *event.Event) string {
	if !strings.HasPrefix(ev.Type, OwnTypePrefix) {
		return ""
	}
	return strings.TrimPrefix(ev.Subject, endpointSubject)
}

// transition is one change of an endpoint's health.
type transition struct {
	kind       string // Failing, Disabled or Recovered
	since      time.Time
	lastStatus int
	lastError  string
	reason     string // Disabled
}

// notificationData is a failure notification's data: ids and reasons, no
// URL (it may carry a token) and no secret.
type notificationData struct {
	EndpointID   string     `json:"endpoint_id"`
	Description  string     `json:"description,omitempty"`
	FailingSince time.Time  `json:"failing_since"`
	LastStatus   int        `json:"last_status,omitempty"`
	LastError    string     `json:"last_error,omitempty"`
	Reason       string     `json:"reason,omitempty"`
	RecoveredAt  *time.Time `json:"recovered_at,omitempty"`
}

// notify publishes ts as failure notifications in q's transaction.
func (s *Service) notify(ctx context.Context, q *store.Q, ep *endpoint.Endpoint, ts []transition, now time.Time) error {
	evs := make([]*event.Event, 0, len(ts))
	for _, t := range ts {
		d := notificationData{EndpointID: ep.ID, Description: ep.Description, FailingSince: t.since, LastStatus: t.lastStatus, LastError: t.lastError, Reason: t.reason}
		if t.kind == Recovered {
			d.RecoveredAt = &now
		}
		data, err := json.Marshal(d)
		if err != nil {
			return fmt.Errorf("notification %s: %w", t.kind, err)
		}
		evs = append(evs, &event.Event{OwnerID: ep.OwnerID, Type: t.kind, Subject: endpointSubject + ep.ID, Data: data})
	}
	if _, err := s.publishIn(ctx, q, evs, "", byHookd); err != nil {
		return fmt.Errorf("publish failure notifications of endpoint %s: %w", ep.ID, err)
	}
	return nil
}

// logTransition logs a change of an endpoint's health: WARN when it starts
// failing or is disabled, INFO when it recovers.
func (s *Service) logTransition(ep *endpoint.Endpoint, t transition) {
	switch t.kind {
	case Failing:
		s.log.Warn("endpoint failing", "endpoint", ep.ID, "owner", ep.OwnerID, "status", t.lastStatus, "error", t.lastError)
	case Disabled:
		if t.reason == ReceiverAskedToStop {
			s.log.Warn("endpoint disabled: its receiver asked to stop", "endpoint", ep.ID, "owner", ep.OwnerID, "status", t.lastStatus)
			return
		}
		s.log.Warn("endpoint disabled after continuous failure", "endpoint", ep.ID, "owner", ep.OwnerID, "failing_since", t.since, "error", t.lastError)
	case Recovered:
		s.log.Info("endpoint recovered", "endpoint", ep.ID, "owner", ep.OwnerID, "failing_since", t.since)
	}
}
