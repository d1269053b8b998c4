// Package httpapi projects hookd's ops onto REST: one route per op, bearer
// key authentication, JSON in and out, and one error mapping.
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/hookd/hookd/internal/apperr"
)

// ErrorBody is every error answer: {"error": {"code", "message"}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the code and the caller-facing message of an error answer.
type ErrorDetail struct {
	Code    apperr.Code `json:"code"`
	Message string      `json:"message"`
}

// WriteError maps err to a status and writes it as an ErrorBody; internal
// errors are logged and answered with a plain "internal error", unavailable
// ones carry Retry-After. It is the one writer of hookd's HTTP error answers:
// REST's, and /mcp's before the MCP SDK takes the request.
func WriteError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	code := apperr.CodeOf(err)
	status := apperr.Status(code)
	switch {
	case code == apperr.Unavailable:
		// The database is unreachable (or hookd not ready): nothing was
		// written; tell clients to retry.
		w.Header().Set("Retry-After", RetryAfterSeconds)
		log.Warn("request unavailable", "method", r.Method, "path", r.URL.Path, "error", err)
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// The client closed the connection before its answer: nothing
		// failed in hookd (what the request wrote rolled back with it),
		// and nobody reads the answer. Not an error to page anyone for.
		log.Info("request abandoned by the client", "method", r.Method, "path", r.URL.Path, "error", err)
	case status >= 500:
		log.Error("request failed", "method", r.Method, "path", r.URL.Path, "error", err)
	}
	writeJSON(w, status, ErrorBodyOf(err))
}

// ErrorBodyOf is the answer err maps to.
func ErrorBodyOf(err error) ErrorBody {
	return ErrorBody{Error: ErrorDetail{Code: apperr.CodeOf(err), Message: apperr.MessageOf(err)}}
}

// RetryAfterSeconds is the Retry-After of every 503 unavailable answer.
const RetryAfterSeconds = "5"

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
