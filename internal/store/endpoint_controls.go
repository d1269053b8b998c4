package store

import (
	"encoding/json"
	"fmt"

	"github.com/hookd/hookd/internal/endpoint"
)

// scanHeaders decodes an endpoint's custom headers column. The common
// case, none, costs no decoding and no allocation (Headers stays nil).
func scanHeaders(e *endpoint.Endpoint, raw string) error {
	if raw == "" || raw == "{}" {
		return nil
	}
	if err := json.Unmarshal([]byte(raw), &e.Headers); err != nil {
		return fmt.Errorf("endpoint %s headers: %w", e.ID, err)
	}
	return nil
}

func headersJSON(h map[string]string) string {
	if len(h) == 0 {
		return "{}"
	}
	b, _ := json.Marshal(h) // a map of strings always encodes
	return string(b)
}
