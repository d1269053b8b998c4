package delivery

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hookd/hookd/internal/egress"
)

// Verdict is what happens to a delivery after one attempt (the standard profile's
// delivery diagram).
type Verdict int

const (
	// Complete is a 2xx: delivered.
	Complete Verdict = iota
	// Retry is a 5xx, 408, 429 (without Retry-After), any status the profile
	// does not give up on (kwork: every non-2xx), timeout, connection
	// failure: again per the profile's schedule, spending an attempt.
	Retry
	// Snooze is a 429/503 with Retry-After: again after that long, no attempt
	// spent.
	Snooze
	// Discard is a status the profile gives up on (standard: other 4xx and
	// 3xx), egress blocked: never again.
	Discard
)

func (v Verdict) String() string {
	return [...]string{"complete", "retry", "snooze", "discard"}[v]
}

// Outcome is a classified attempt.
type Outcome struct {
	Verdict Verdict
	Status  int           // HTTP status, 0 if none
	Error   string        // why it did not succeed ("" on success)
	Wait    time.Duration // for Snooze
}

// Classify turns an attempt's response or error into an outcome. maxWait
// caps a Retry-After snooze; givesUpOn is the profile's outcome rule for a
// non-2xx status (profile.Profile.GivesUpOn).
func Classify(resp egress.Response, err error, now time.Time, maxWait time.Duration, givesUpOn func(status int) bool) Outcome {
	if err != nil {
		switch {
		case errors.Is(err, egress.ErrBlocked):
			return Outcome{Verdict: Discard, Error: "egress blocked: " + err.Error()}
		case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
			return Outcome{Verdict: Retry, Error: "timeout: no complete answer in time"}
		}
		return Outcome{Verdict: Retry, Error: "connection failed: " + err.Error()}
	}
	s := resp.StatusCode
	switch {
	case s >= 200 && s < 300:
		return Outcome{Verdict: Complete, Status: s}
	case s == http.StatusTooManyRequests || s == http.StatusServiceUnavailable:
		if wait, ok := retryAfter(resp.Header.Get("Retry-After"), now); ok {
			if wait > maxWait {
				wait = maxWait
			}
			return Outcome{Verdict: Snooze, Status: s, Wait: wait, Error: fmt.Sprintf("HTTP %d %s: waiting %s", s, retryAfterNote, wait)}
		}
		return Outcome{Verdict: Retry, Status: s, Error: fmt.Sprintf("HTTP %d", s)}
	case givesUpOn(s):
		return Outcome{Verdict: Discard, Status: s, Error: fmt.Sprintf("HTTP %d: permanent failure (4xx other than 408/429, or an unfollowed redirect)", s)}
	}
	return Outcome{Verdict: Retry, Status: s, Error: fmt.Sprintf("HTTP %d", s)}
}

// retryAfterNote marks a snooze's recorded error: the wait is the
// receiver's, not the profile's backoff.
const retryAfterNote = "with Retry-After"

// retryAfter parses a Retry-After header: delta-seconds or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		if secs > 1<<31 {
			secs = 1 << 31
		}
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		if d < 0 {
			d = 0
		}
		return d, true
	}
	return 0, false
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
