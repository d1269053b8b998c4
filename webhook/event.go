package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Event is a delivered event: the union of the standard envelope
// {id, type, subject, occurred_at, data} and the kwork envelope
// {id, type, createdAt, apiVersion, tenant, environment, app, data}.
// Fields the sender's profile does not use are left zero.
//
// Deduplicate on ID: it is identical on every retry of a delivery.
type Event struct {
	ID   string `json:"id"`
	Type string `json:"type"`

	// Standard profile.
	Subject    string    `json:"subject,omitempty"`
	OccurredAt time.Time `json:"occurred_at,omitzero"`

	// Kwork profile.
	CreatedAt   time.Time `json:"createdAt,omitzero"`
	APIVersion  string    `json:"apiVersion,omitempty"`
	Tenant      string    `json:"tenant,omitempty"`
	Environment string    `json:"environment,omitempty"`
	App         string    `json:"app,omitempty"`

	// Data is the event-type specific payload, exactly as sent.
	Data json.RawMessage `json:"data"`
}

// parseEvent decodes a verified body. Only a JSON object is an event:
// null, arrays, scalars and an empty body are ErrMalformedBody.
func parseEvent(body []byte) (Event, error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return Event{}, fmt.Errorf("%w: not a JSON object", ErrMalformedBody)
	}
	var ev Event
	if err := json.Unmarshal(body, &ev); err != nil {
		return Event{}, fmt.Errorf("%w: %w", ErrMalformedBody, err)
	}
	return ev, nil
}
