// Package event holds hookd's events and event types: an event is an
// immutable fact published once; an event type has an exposure that decides
// whether it may ever leave hookd.
package event

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/hookd/hookd/internal/apperr"
)

// Event is an immutable fact. Two events on one subject are two facts and are
// never merged.
type Event struct {
	ID         string          `json:"id"`
	OwnerID    string          `json:"-"`
	Type       string          `json:"type"`
	Subject    string          `json:"subject,omitempty"`
	OccurredAt time.Time       `json:"occurred_at"`
	Data       json.RawMessage `json:"data"`
	// Tenant is who caused the event on a multi-tenant platform (the kwork
	// profile puts it in its envelope); empty otherwise.
	Tenant string `json:"tenant,omitempty"`
	// EndpointID, when set, limits the event to that one endpoint (test
	// events): fanout never offers it to any other.
	EndpointID     string    `json:"-"`
	IdempotencyKey string    `json:"-"`
	CreatedAt      time.Time `json:"-"`
	// FanoutJob is the River job that fans the event out while it awaits
	// its fanout (0 once fanned out, or for an event that goes nowhere).
	FanoutJob int64 `json:"-"`
}

// Exposure says whether events of a type may leave hookd.
type Exposure string

const (
	// Internal events never leave hookd; it is the default, so a type nobody
	// classified cannot leak.
	Internal Exposure = "internal"
	// Webhook events fan out to subscribed endpoints.
	Webhook Exposure = "webhook"
)

// Type is a registered event type. OwnerID is empty for the catalog shared
// by every owner.
type Type struct {
	OwnerID  string   `json:"-"`
	Name     string   `json:"name"`
	Exposure Exposure `json:"exposure"`
	// Scoped types are judged for scope (the standard profile: only
	// corpus.note.changed): an endpoint with a grant gets them only as the
	// grant allows, one without only from the published slice. Every other
	// type goes to every endpoint subscribed to it.
	Scoped      bool   `json:"scoped"`
	Description string `json:"description,omitempty"`
	// Schema is a JSON Schema (draft 2020-12) every event's data must
	// match (none: any object); Example is a data payload that matches it.
	// Both are compact JSON, set through CheckSchema.
	Schema  json.RawMessage `json:"schema,omitempty"`
	Example json.RawMessage `json:"example,omitempty"`
	// SchemaHash keys the compiled schema (SchemaHash of Schema, "" none).
	SchemaHash string `json:"-"`
	// Profile, on a shared type, limits it to owners of that profile (a
	// profile's own test and lifecycle types); "" offers it to every owner.
	Profile   string    `json:"-"`
	CreatedAt time.Time `json:"created_at"`
}

// ValidateTypeName reports whether name can be an event type: 1–128 of
// [a-z0-9_.-], the first a letter or digit. (Checked byte by byte: every
// publish checks its type, and a regexp's match cost a publish more than
// the rest of its validation.)
func ValidateTypeName(name string) error {
	if !typeNameValid(name) {
		return apperr.New(apperr.Invalid, "event type %q is not valid: use 1-128 lowercase letters, digits, '.', '_' or '-', starting with a letter or digit (e.g. \"invoice.paid\")", name)
	}
	return nil
}

func typeNameValid(name string) bool {
	if len(name) == 0 || len(name) > 128 {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case (c == '_' || c == '.' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

// ParseExposure validates an exposure; empty means Internal.
func ParseExposure(s string) (Exposure, error) {
	switch Exposure(s) {
	case "", Internal:
		return Internal, nil
	case Webhook:
		return Webhook, nil
	}
	return "", apperr.New(apperr.Invalid, "exposure %q is not valid: use \"webhook\" (fans out to endpoints) or \"internal\" (never leaves hookd)", s)
}

// MaxDataBytes bounds one event's data.
const MaxDataBytes = 256 << 10

// Validate checks a new event's caller-supplied fields.
func (e *Event) Validate() error {
	if e.Type == "" {
		return apperr.New(apperr.Invalid, "type is required")
	}
	if err := ValidateTypeName(e.Type); err != nil {
		return err
	}
	if len(e.Subject) > 1024 {
		return apperr.New(apperr.Invalid, "subject is %d bytes; at most 1024", len(e.Subject))
	}
	if len(e.Data) == 0 || string(e.Data) == "null" {
		e.Data = json.RawMessage(`{}`)
	}
	if len(e.Data) > MaxDataBytes {
		return apperr.New(apperr.TooLarge, "data is %d bytes; at most %d", len(e.Data), MaxDataBytes)
	}
	if !json.Valid(e.Data) {
		return apperr.New(apperr.Invalid, "data is not valid JSON")
	}
	if t := bytes.TrimLeft(e.Data, " \t\r\n"); t[0] != '{' {
		return apperr.New(apperr.Invalid, "data must be a JSON object, e.g. {\"invoice_id\": \"inv_1\"}")
	}
	if len(e.IdempotencyKey) > 255 {
		return apperr.New(apperr.Invalid, "Idempotency-Key is %d bytes; at most 255", len(e.IdempotencyKey))
	}
	if len(e.Tenant) > 255 {
		return apperr.New(apperr.Invalid, "tenant is %d bytes; at most 255", len(e.Tenant))
	}
	return nil
}
