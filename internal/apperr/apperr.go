// Package apperr is hookd's one application error type: a small set of
// codes, each mapped to an HTTP status in one table (Status). Every layer
// returns these for client mistakes; anything else is an internal error that
// is logged and answered with a plain "internal error".
package apperr

import (
	"errors"
	"fmt"
	"net/http"
)

// Code classifies an application error.
type Code string

// The codes, each with the HTTP status Status maps it to.
const (
	Invalid      Code = "invalid"      // a value is wrong (422)
	BadRequest   Code = "bad_request"  // the request cannot be parsed (400)
	NotFound     Code = "not_found"    // absent, or not the caller's (404)
	Conflict     Code = "conflict"     // clashes with current state (409)
	Unauthorized Code = "unauthorized" // missing or invalid credentials (401)
	Forbidden    Code = "forbidden"    // authenticated, but the role may not (403)
	TooLarge     Code = "too_large"    // body over the limit (413)
	Internal     Code = "internal"     // our fault (500)
	Unavailable  Code = "unavailable"  // not ready, or the database unreachable: retry (503, Retry-After)
)

// Error is an application error with a code and a message meant for the
// caller: it says what is wrong and how to fix it.
type Error struct {
	Code    Code
	Message string
	// Key names the message for the pages' catalog (the console looks
	// up "err.<Key>" with Args, and shows Message where it has none):
	// the API speaks English, the pages the reader's language.
	Key  string
	Args []any
}

// Keyed names e's message in the pages' catalog, with its arguments.
func (e *Error) Keyed(key string, args ...any) *Error {
	e.Key, e.Args = key, args
	return e
}

// KeyOf returns the catalog key and arguments of the first *Error in
// err's chain ("" for none).
func KeyOf(err error) (string, []any) {
	var e *Error
	if errors.As(err, &e) {
		return e.Key, e.Args
	}
	return "", nil
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// New returns an *Error with a formatted message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// CodeOf returns the code of the first *Error in err's chain, or Internal.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// MessageOf returns the caller-facing message: the *Error's message, or
// "internal error" for anything else (internal details never leak).
func MessageOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// IsNotFound reports whether err is a NotFound application error.
func IsNotFound(err error) bool { return err != nil && CodeOf(err) == NotFound }

var statuses = map[Code]int{
	Invalid:      http.StatusUnprocessableEntity,
	BadRequest:   http.StatusBadRequest,
	NotFound:     http.StatusNotFound,
	Conflict:     http.StatusConflict,
	Unauthorized: http.StatusUnauthorized,
	Forbidden:    http.StatusForbidden,
	TooLarge:     http.StatusRequestEntityTooLarge,
	Internal:     http.StatusInternalServerError,
	Unavailable:  http.StatusServiceUnavailable,
}

// Status maps a code to its HTTP status.
func Status(c Code) int {
	if s, ok := statuses[c]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Prefix returns err with "prefix: " before its caller-facing message,
// keeping its code (e.g. to name which item of a batch was wrong).
func Prefix(prefix string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return &Error{Code: e.Code, Message: prefix + ": " + e.Message, Key: e.Key, Args: e.Args}
	}
	return fmt.Errorf("%s: %w", prefix, err)
}
