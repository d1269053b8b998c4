package webhook

import (
	"errors"
	"fmt"
)

// Errors returned by the verify functions, always wrapped with context
// (which header, how old); test them with errors.Is.
var (
	// ErrMissingHeader: a required header is absent or empty.
	ErrMissingHeader = errors.New("webhook: missing header")
	// ErrMalformedHeader: a header is present but cannot be parsed
	// (a timestamp that is not an integer, a kwork header without t= or v1=).
	ErrMalformedHeader = errors.New("webhook: malformed header")
	// ErrNoMatchingSignature: no signature in the header matches the body.
	ErrNoMatchingSignature = errors.New("webhook: no matching signature")
	// ErrTimestampTooOld: the signed timestamp is further in the past than the tolerance.
	ErrTimestampTooOld = errors.New("webhook: timestamp too old")
	// ErrTimestampTooNew: the signed timestamp is further in the future than the tolerance.
	ErrTimestampTooNew = errors.New("webhook: timestamp too new")
	// ErrMalformedBody: the signature is valid but the body is not a JSON
	// object that decodes into an Event.
	ErrMalformedBody = errors.New("webhook: malformed body")
	// ErrInvalidSecret: a secret is empty or, for Standard Webhooks, not base64.
	ErrInvalidSecret = errors.New("webhook: invalid secret")
)

// maxQuoted bounds how much of an untrusted header value goes into an error.
const maxQuoted = 40

// quoteShort quotes an untrusted value for an error message, truncated so a
// hostile header cannot blow up logs.
func quoteShort(s string) string {
	if len(s) > maxQuoted {
		return fmt.Sprintf("%q...", s[:maxQuoted])
	}
	return fmt.Sprintf("%q", s)
}
