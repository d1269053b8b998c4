package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"github.com/hookd/hookd/internal/egress"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/profile"
)

// Verdict is what happens to a delivery after one attempt (the standard profile's
// delivery diagram).
type Verdict int

const (
	// Complete is a 2xx: delivered.
	Complete Verdict = iota
	// Retry is a 5xx, 408, 429 (without Retry-After, or past the
	// profile's free snoozes), any status the profile does not give up on
	// (kwork: every non-2xx), timeout, connection failure: again per the
	// profile's schedule, spending an attempt.
	Retry
	// Snooze is a 429/503 with Retry-After, within the profile's free
	// snoozes: again after that long, no attempt spent.
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
	Status  int    // HTTP status, 0 if none
	Error   string // why it did not succeed ("" on success)
	// Wait is the receiver's Retry-After: a Snooze's wait; a Retry's when
	// it is longer than the schedule's backoff, which it then replaces (0:
	// the backoff).
	Wait time.Duration
	// Control is the receiver's webhook-delivery header, lower-cased
	// ("" without one): ControlDisable and ControlAbort act, any other
	// value is carried only to be counted and logged (control.go).
	Control string
}

// Classify turns an attempt's response or error into an outcome under
// profile p's rules: GivesUpOn for a non-2xx status, WholeAnswer for an
// answer not read to its end in time, and for a 429/503 with Retry-After
// a snooze of the receiver's wait, no shorter than the schedule's Floor and
// no longer than maxWait. Whether that snooze is free is spend's to say.
func Classify(resp egress.Response, err error, now time.Time, maxWait time.Duration, p profile.Profile) Outcome {
	if err != nil {
		switch {
		case errors.Is(err, egress.ErrBlocked):
			return Outcome{Verdict: Discard, Error: "egress blocked: " + err.Error()}
		case errors.Is(err, egress.ErrToken):
			return Outcome{Verdict: Retry, Error: err.Error()} // names the token server's answer
		case isTimeout(err) && errors.Is(err, egress.ErrHandshake):
			// Said apart: a receiver (or a machine) too slow to finish
			// the handshake never had the request.
			return Outcome{Verdict: Retry, Error: "timeout: the TLS handshake did not finish in time"}
		case isTimeout(err):
			return Outcome{Verdict: Retry, Error: "timeout: no complete answer in time"}
		}
		return Outcome{Verdict: Retry, Error: "connection failed: " + err.Error()}
	}
	return controlled(classifyAnswer(resp, now, maxWait, p), resp.Header)
}

// classifyAnswer is Classify of an answer, before the receiver's
// webhook-delivery control.
func classifyAnswer(resp egress.Response, now time.Time, maxWait time.Duration, p profile.Profile) Outcome {
	s := resp.StatusCode
	if resp.Unfinished != nil && p.WholeAnswer() {
		// The receiver has not finished answering: whatever the status,
		// the send failed.
		if isTimeout(resp.Unfinished) {
			return Outcome{Verdict: Retry, Status: s, Error: fmt.Sprintf("timeout: HTTP %d, but its body did not end in time", s)}
		}
		return Outcome{Verdict: Retry, Status: s, Error: fmt.Sprintf("connection failed: HTTP %d, but its body was cut short: %v", s, resp.Unfinished)}
	}
	switch {
	case s >= 200 && s < 300:
		return Outcome{Verdict: Complete, Status: s}
	case s == http.StatusTooManyRequests || s == http.StatusServiceUnavailable:
		if wait, ok := retryAfter(resp.Header.Get("Retry-After"), now); ok {
			wait = min(max(wait, p.Retry().Floor()), maxWait)
			return Outcome{Verdict: Snooze, Status: s, Wait: wait, Error: fmt.Sprintf("HTTP %d %s: waiting %s", s, retryAfterNote, wait)}
		}
		return Outcome{Verdict: Retry, Status: s, Error: fmt.Sprintf("HTTP %d", s)}
	case p.GivesUpOn(s):
		return Outcome{Verdict: Discard, Status: s, Error: fmt.Sprintf("HTTP %d: permanent failure (4xx other than 408/429, or an unfollowed redirect)", s)}
	}
	return Outcome{Verdict: Retry, Status: s, Error: fmt.Sprintf("HTTP %d", s)}
}

// spend settles whether a snooze is free. The delivery's receiver has
// already held it back snoozed times; r.FreeSnoozes is the budget (kwork:
// 0, every send counts). Past it the snooze spends the attempt (the job's
// attempt-th, 1-based) as a Retry: the next send then waits the longer of
// the backoff and the receiver's wait, so a Retry-After may push it later
// but never adds a send.
func (o Outcome) spend(r profile.Retry, snoozed, attempt int) Outcome {
	if o.Verdict != Snooze || snoozed < r.FreeSnoozes {
		return o
	}
	o.Verdict = Retry
	if o.Wait <= r.After(attempt) {
		o.Error = fmt.Sprintf("HTTP %d (its Retry-After of %s is within the backoff)", o.Status, o.Wait)
		o.Wait = 0
		return o
	}
	o.Error = fmt.Sprintf("HTTP %d %s: waiting %s%s", o.Status, retryAfterNote, o.Wait, spentNote)
	return o
}

// spentNote marks a recorded Retry-After error that spent an attempt.
const spentNote = ", an attempt spent"

// snoozedFree says whether d's receiver held it back with a Retry-After
// that spent no attempt. (A redelivered delivery has no attempt either,
// but its last error is that of its failure, which a free snooze never
// is.)
func snoozedFree(d *endpoint.Delivery) bool {
	return d.Attempts == 0 && strings.Contains(d.LastError, retryAfterNote) && !strings.Contains(d.LastError, spentNote)
}

// snoozesKey is the deliver job's metadata key that counts the Retry-After
// snoozes it spent no attempt on (a redelivery's new job starts at 0).
const snoozesKey = "hookd_retry_after_snoozes"

// budget applies the profile's Retry-After budget (spend) to the outcome
// of a deliver job's attempt of d, and counts a free snooze in the job's
// metadata (River merges it when the job ends). A snooze a drain recorded
// before the job ever ran counts too.
func (s *Service) budget(ctx context.Context, out Outcome, p profile.Profile, d *endpoint.Delivery, job *river.Job[DeliverArgs]) Outcome {
	if out.Verdict != Snooze {
		return out
	}
	var m struct {
		Snoozes int `json:"hookd_retry_after_snoozes"`
	}
	if err := json.Unmarshal(job.Metadata, &m); err != nil {
		s.log.Warn("deliver job's metadata unreadable; its Retry-After snoozes count from 0", "job", job.ID, "error", err)
	}
	if m.Snoozes == 0 && snoozedFree(d) {
		m.Snoozes = 1 // a drain's
	}
	out = out.spend(p.Retry(), m.Snoozes, job.Attempt)
	if out.Verdict == Snooze {
		if err := river.MetadataSet(ctx, snoozesKey, m.Snoozes+1); err != nil {
			s.log.Warn("could not count a Retry-After snooze; the delivery may get one more free", "job", job.ID, "error", err)
		}
	}
	return out
}

// retryAfterNote marks a recorded error whose wait is the receiver's, not
// the profile's backoff (preflight honours it).
const retryAfterNote = "with Retry-After"

// retryAfter parses a Retry-After header: delta-seconds or an HTTP date. A
// date already past is a wait of 0 (the floor applies); a negative number
// or anything else is no Retry-After at all.
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
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// isTimeout says whether err is the deadline: the context's, or a network
// timeout.
func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &t) && t.Timeout()
}
