package store

import (
	"encoding/json"
	"fmt"

	"github.com/hookd/hookd/internal/endpoint"
)

// encodeSigning is the signing column's text for s.
func encodeSigning(s endpoint.Signing) (string, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return "", fmt.Errorf("encode endpoint signing: %w", err)
	}
	return string(b), nil
}

// decodeSigning reads the signing column of endpoint id (” is an endpoint
// from before the column: hmac, no overlap).
func decodeSigning(id, text string) (endpoint.Signing, error) {
	s := endpoint.Signing{Signature: endpoint.SignHMAC}
	if text == "" {
		return s, nil
	}
	if err := json.Unmarshal([]byte(text), &s); err != nil {
		return endpoint.Signing{}, fmt.Errorf("endpoint %s signing: %w", id, err)
	}
	return s, nil
}
