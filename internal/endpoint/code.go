package endpoint

// Code is an endpoint's own code, run by internal/transform. The zero
// value runs nothing.
type Code struct {
	// Filter is a CEL expression over the event (type, subject,
	// occurred_at, data) that must be true for the event to reach the
	// endpoint; asked at fanout, so an event it refuses has no delivery.
	Filter string `json:"filter"`
	// Transformation is a JavaScript function handler(webhook) that may
	// reshape each attempt's request (payload, headers, the URL's path and
	// query) or cancel the delivery, before it is signed.
	Transformation string `json:"transformation"`
}
