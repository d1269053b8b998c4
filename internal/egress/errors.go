package egress

import (
	"errors"
	"fmt"
)

// ErrBlocked is matched (with errors.Is) by every error reporting that the
// egress policy refused a destination: a blocked address, a non-canonical
// numeric host or a redirect to a scheme other than http or https.
var ErrBlocked = errors.New("egress blocked")

// ErrInvalidURL is matched (with errors.Is) by errors reporting a malformed
// endpoint URL.
var ErrInvalidURL = errors.New("invalid endpoint URL")

// allowHint tells an operator how to let a blocked address through.
const allowHint = "to allow it, add it to --egress-allow or HOOKD_EGRESS_ALLOW"

// BlockedError describes one refusal by the egress policy. It matches
// [ErrBlocked] with errors.Is; use errors.As to read the details.
type BlockedError struct {
	// Addr is the address or host that was refused, as seen by the policy.
	Addr string
	// Reason says why, e.g. "loopback address (127.0.0.0/8)".
	Reason string
	// fix tells the operator what to do about it; empty if nothing applies.
	fix string
}

// Error implements error.
func (e *BlockedError) Error() string {
	msg := fmt.Sprintf("%s: %s: %s", ErrBlocked, e.Addr, e.Reason)
	if e.fix != "" {
		msg += "; " + e.fix
	}
	return msg
}

// Is reports whether target is [ErrBlocked].
func (e *BlockedError) Is(target error) bool { return target == ErrBlocked }

// blockedAddr builds the refusal for an address the allow-list could admit.
func blockedAddr(addr, reason, prefix string) *BlockedError {
	return &BlockedError{
		Addr:   addr,
		Reason: reason,
		fix:    fmt.Sprintf("%s (e.g. %s)", allowHint, prefix),
	}
}

// ErrHandshake is matched by an error that came while a TLS handshake
// with the receiver was under way (it has not answered the handshake in
// time, or refused it): the request was never sent.
var ErrHandshake = errors.New("TLS handshake with the receiver not finished")

// handshakeError is an error that came during a TLS handshake: it matches
// ErrHandshake and still what it wraps (a timeout stays a timeout).
type handshakeError struct{ err error }

func (e *handshakeError) Error() string   { return ErrHandshake.Error() + ": " + e.err.Error() }
func (e *handshakeError) Unwrap() []error { return []error{ErrHandshake, e.err} }
