// Package httpapi projects hookd's ops onto REST: one route per op, bearer
// key authentication, JSON in and out, and one error mapping.
package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hookd/hookd/internal/apperr"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if v != nil && status != http.StatusNoContent {
		_ = json.NewEncoder(w).Encode(v)
	}
}

// decodeError turns a JSON decoding failure into the right application
// error: 413 too large, 400 malformed, 422 unknown field or wrong type.
func decodeError(err error) error {
	var maxErr *http.MaxBytesError
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	var timeErr *time.ParseError
	switch {
	case errors.As(err, &maxErr):
		return apperr.New(apperr.TooLarge, "request body is over %d bytes", maxErr.Limit)
	case errors.As(err, &syntax):
		return apperr.New(apperr.BadRequest, "malformed JSON at byte %d: %v", syntax.Offset, err)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return apperr.New(apperr.BadRequest, "malformed JSON: the body ends early")
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			return apperr.New(apperr.Invalid, "body must be a JSON object")
		}
		return apperr.New(apperr.Invalid, "field %q must be %s, not %s", field, typeErr.Type.String(), typeErr.Value)
	case errors.As(err, &timeErr):
		return apperr.New(apperr.Invalid, "time %q is not RFC 3339 (e.g. 2026-01-02T15:04:05Z)", timeErr.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return apperr.New(apperr.Invalid, "%s: remove it (see /openapi.json for the fields)", strings.TrimPrefix(err.Error(), "json: "))
	}
	return apperr.New(apperr.BadRequest, "malformed JSON: %v", err)
}
