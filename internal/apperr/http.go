package apperr

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
)

// ErrorBody is every error answer: {"error": {"code", "message"}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the code and the caller-facing message of an error answer.
type ErrorDetail struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

// Write maps err to a status and writes it as an ErrorBody; internal
// errors are logged and answered with a plain "internal error", unavailable
// ones carry Retry-After. It is the one writer of hookd's HTTP error answers:
// REST's, and /mcp's before the MCP SDK takes the request.
func Write(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	code := CodeOf(err)
	status := Status(code)
	switch {
	case code == Unavailable:
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
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(BodyOf(err))
}

// BodyOf is the answer err maps to.
func BodyOf(err error) ErrorBody {
	return ErrorBody{Error: ErrorDetail{Code: CodeOf(err), Message: MessageOf(err)}}
}

// RetryAfterSeconds is the Retry-After of every 503 unavailable answer.
const RetryAfterSeconds = "5"
