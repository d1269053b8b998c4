package ops

import (
	"context"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/store"
)

// Events list limits.
const (
	EventsDefaultLimit = 50
	EventsMaxLimit     = 200
)

// EventsListIn is events.list's input: every filter optional.
type EventsListIn struct {
	Type          string `json:"type,omitempty" query:"type" jsonschema:"only events whose type matches this glob, e.g. invoice.* ('*' any run of characters)"`
	SubjectPrefix string `json:"subject_prefix,omitempty" query:"subject_prefix" jsonschema:"only events whose subject starts with this, e.g. invoice://inv_12"`
	Since         string `json:"since,omitempty" query:"since" jsonschema:"RFC 3339: only events published at or after this time"`
	Until         string `json:"until,omitempty" query:"until" jsonschema:"RFC 3339: only events published before this time (default now)"`
	Limit         int    `json:"limit,omitempty" query:"limit" jsonschema:"at most this many (default 50, max 200)"`
	Cursor        string `json:"cursor,omitempty" query:"cursor" jsonschema:"the next_cursor of the previous page"`
}

// EventSummary is one event of a list: events.get gives its data.
type EventSummary struct {
	ID          string    `json:"id"`
	Type        string    `json:"type"`
	Subject     string    `json:"subject,omitempty"`
	OccurredAt  time.Time `json:"occurred_at"`
	PublishedAt time.Time `json:"published_at" jsonschema:"when hookd took the event: the time the window filters"`
	// Test: a test event, sent to one endpoint only.
	Test bool `json:"test,omitempty"`
}

// EventList is a page of events, newest first.
type EventList struct {
	Data []EventSummary `json:"data"`
	// NextCursor pages on to older events; absent on the last page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// ResendIn is events.resend's input.
type ResendIn struct {
	ID          string   `json:"id" path:"id" jsonschema:"the event id (evt_…)"`
	EndpointIDs []string `json:"endpoint_ids,omitempty" jsonschema:"only these endpoints (the owner's, each one the event went to or one subscribed to its type now); default every endpoint it went to"`
}

func (s *Service) eventSearchOps() []*Op {
	return []*Op{
		define(Op{Name: "events.list", Summary: "The owner's events, newest first, filtered by type glob, subject prefix and publish-time window; a cursor pages on.", Method: http.MethodGet, Path: "/api/v1/events", Status: 200, Role: owner.Admin, OwnerScoped: true}, s.listEvents),
		define(Op{Name: "events.resend", Audit: "event", Summary: "Send one event again to the endpoints it went to (or the ones named): finished deliveries are re-enqueued with a fresh attempt budget, pending ones left be.", Method: http.MethodPost, Path: "/api/v1/events/{id}/resend", Status: 202, Role: owner.Admin, OwnerScoped: true}, s.resend),
	}
}

func (s *Service) listEvents(ctx context.Context, p Principal, in *EventsListIn) (*EventList, error) {
	f := store.EventFilter{OwnerID: p.OwnerID, Limit: in.Limit, SubjectPrefix: in.SubjectPrefix, TypeGlob: strings.TrimSpace(in.Type)}
	switch {
	case f.Limit == 0:
		f.Limit = EventsDefaultLimit
	case f.Limit < 0 || f.Limit > EventsMaxLimit:
		return nil, invalid("limit %d: give 1 to %d", f.Limit, EventsMaxLimit)
	}
	if f.TypeGlob != "" {
		if err := event.ValidateGlob(f.TypeGlob); err != nil {
			return nil, apperr.New(apperr.Invalid, "type: %s", apperr.MessageOf(err)).Keyed("events.type_glob")
		}
	}
	if len(f.SubjectPrefix) > 1024 {
		return nil, invalid("subject_prefix is %d bytes long: keep it within 1024", len(f.SubjectPrefix))
	}
	since, err := parseTime("since", in.Since)
	if err != nil {
		return nil, err
	}
	until, err := parseTime("until", in.Until)
	if err != nil {
		return nil, err
	}
	if until.IsZero() {
		until = s.now().Add(time.Second) // what was published this instant too
	}
	if !since.IsZero() && !since.Before(until) {
		return nil, apperr.New(apperr.Invalid, "since (%s) must be before until (%s)", since.Format(time.RFC3339), until.Format(time.RFC3339)).Keyed("window.order")
	}
	f.Since, f.Until = since.UnixMicro(), until.UnixMicro()
	if since.IsZero() {
		f.Since = 0
	}
	if in.Cursor != "" {
		if f.BeforeAt, f.BeforeID, err = parseEventCursor(in.Cursor); err != nil {
			return nil, err
		}
	}
	f.Limit++ // one more says whether a next page exists
	evs, err := s.DB.Q().ListEvents(ctx, f)
	if err != nil {
		return nil, err
	}
	out := &EventList{Data: make([]EventSummary, 0, len(evs))}
	if len(evs) == f.Limit {
		evs = evs[:len(evs)-1]
		last := evs[len(evs)-1]
		out.NextCursor = eventCursor(last.CreatedAt, last.ID)
	}
	for _, e := range evs {
		out.Data = append(out.Data, EventSummary{ID: e.ID, Type: e.Type, Subject: e.Subject, OccurredAt: e.OccurredAt, PublishedAt: e.CreatedAt, Test: e.EndpointID != ""})
	}
	return out, nil
}

// eventCursor is a page's last event, opaque to callers: its publish
// time (unix µs) and id.
func eventCursor(at time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(at.UnixMicro(), 10) + "/" + id))
}

func parseEventCursor(c string) (int64, string, error) {
	bad := invalid("cursor %q is not a cursor of events.list: pass next_cursor as it was answered, or leave it out to start over", c)
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, "", bad
	}
	at, id, ok := strings.Cut(string(b), "/")
	n, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || !strings.HasPrefix(id, "evt_") {
		return 0, "", bad
	}
	return n, id, nil
}

func (s *Service) resend(ctx context.Context, p Principal, in *ResendIn) (*delivery.Resent, error) {
	if len(in.EndpointIDs) > 100 {
		return nil, invalid("endpoint_ids has %d entries: name at most 100", len(in.EndpointIDs))
	}
	return s.Delivery.Resend(ctx, p.OwnerID, in.ID, in.EndpointIDs)
}
