package store

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hookd/hookd/internal/apperr"
)

// errUnavailable is what a caller sees when the database cannot be
// reached: 503 with Retry-After, so clients and their HTTP libraries retry.
var errUnavailable = apperr.New(apperr.Unavailable, "the database is unreachable; nothing was changed: retry shortly")

// unreachableError is a database error that means the database could not
// be reached (refused, reset, closed, shutting down). It keeps the
// driver's error for logs and errors.Is/As, and carries the Unavailable
// application error for the API.
type unreachableError struct{ err error }

func (e *unreachableError) Error() string   { return "database unreachable: " + e.err.Error() }
func (e *unreachableError) Unwrap() []error { return []error{e.err, errUnavailable} }

// Unreachable reports whether err means the database could not be reached.
func Unreachable(err error) bool {
	var u *unreachableError
	return errors.As(err, &u)
}

// classify marks connection failures as unreachable; other errors pass
// unchanged. Only the error path pays for it.
func classify(err error) error {
	if err == nil || errors.Is(err, errNoRows) || Unreachable(err) || !isConnectionError(err) {
		return err
	}
	return &unreachableError{err}
}

func isConnectionError(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false // the caller went away, not the database
	}
	var (
		connect *pgconn.ConnectError
		opErr   *net.OpError
		pgErr   *pgconn.PgError
	)
	switch {
	case errors.As(err, &connect), errors.As(err, &opErr),
		errors.Is(err, pgconn.ErrConnClosed), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return true
	case errors.As(err, &pgErr):
		// Class 08: connection exception; 57P01-57P03: the server is
		// shutting down, crashed or not yet accepting connections.
		c := pgErr.Code
		return len(c) == 5 && (c[:2] == "08" || c == "57P01" || c == "57P02" || c == "57P03")
	}
	return false
}
