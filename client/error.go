package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Code is hookd's error code (the error.code of every error answer).
type Code string

// hookd's error codes and the statuses they come with.
const (
	CodeInvalid      Code = "invalid"      // 422: a value is wrong; Message says which and how to fix it
	CodeBadRequest   Code = "bad_request"  // 400: the body is not JSON
	CodeNotFound     Code = "not_found"    // 404: absent, or another owner's
	CodeConflict     Code = "conflict"     // 409: clashes with the resource's state
	CodeUnauthorized Code = "unauthorized" // 401: missing, unknown or revoked key
	CodeForbidden    Code = "forbidden"    // 403: the key's role may not
	CodeTooLarge     Code = "too_large"    // 413: the body is over the limit
	CodeInternal     Code = "internal"     // 500
	CodeUnavailable  Code = "unavailable"  // 503: retry after Retry-After
)

// Error is hookd's answer to a call that failed: its HTTP status, error
// code and message. Test for it with errors.As, or IsCode.
type Error struct {
	Op      string // the op called, e.g. "webhooks.create"
	Status  int
	Code    Code
	Message string
	// RetryAfter is the answer's Retry-After (429 and 503), 0 if none.
	RetryAfter    time.Duration
	hasRetryAfter bool
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: hookd answered %d %s: %s", e.Op, e.Status, e.Code, e.Message)
}

// IsCode reports whether err is an *Error with code c.
func IsCode(err error, c Code) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == c
}

// errorOf reads an error answer. One that is not hookd's (a proxy's 502
// page) keeps its status, with a code from the status and the body as the
// message.
func errorOf(op string, resp *http.Response, raw []byte) *Error {
	e := &Error{Op: op, Status: resp.StatusCode}
	var body struct {
		Error struct {
			Code    Code   `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &body) == nil && body.Error.Code != "" {
		e.Code, e.Message = body.Error.Code, body.Error.Message
	} else {
		e.Code, e.Message = codeOfStatus(resp.StatusCode), strings.TrimSpace(string(raw))
		if len(e.Message) > 200 {
			e.Message = e.Message[:200] + "…"
		}
	}
	e.RetryAfter, e.hasRetryAfter = retryAfter(resp.Header.Get("Retry-After"), time.Now())
	return e
}

// retryAfter reads a Retry-After: seconds or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

func codeOfStatus(status int) Code {
	switch status {
	case http.StatusUnprocessableEntity:
		return CodeInvalid
	case http.StatusBadRequest:
		return CodeBadRequest
	case http.StatusNotFound:
		return CodeNotFound
	case http.StatusConflict:
		return CodeConflict
	case http.StatusUnauthorized:
		return CodeUnauthorized
	case http.StatusForbidden:
		return CodeForbidden
	case http.StatusRequestEntityTooLarge:
		return CodeTooLarge
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		return CodeUnavailable
	}
	return CodeInternal
}
