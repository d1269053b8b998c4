package delivery

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/profile"
	"github.com/hookd/hookd/internal/transform"
)

// Code is the process's engine for endpoints' filters and transformations
// (the ops check and try code with it).
func (s *Service) Code() *transform.Engine { return s.cfg.Code }

// filterInput is ev as a filter sees it.
func filterInput(ev *event.Event) *transform.Input {
	return transform.NewInput(transform.Event{Type: ev.Type, Subject: ev.Subject, OccurredAt: ev.OccurredAt, Data: ev.Data})
}

// filterPasses asks ep's filter about ev (in: ev's input, made on first
// use and shared by the event's other endpoints). A filter that fails on
// an event (a field the event lacks, its cost limit) lets it through to
// nobody: false, logged once per endpoint and filter, not per event.
func (s *Service) filterPasses(ep *endpoint.Endpoint, ev *event.Event, in **transform.Input) bool {
	if *in == nil {
		*in = filterInput(ev)
	}
	ok, err := s.cfg.Code.Filters.Eval(ep.Filter, *in)
	if err != nil && s.filterNotes.first(ep.ID, ep.Filter) {
		s.log.Warn("an endpoint's filter failed on an event; it counts as false (logged once per endpoint and filter)",
			"endpoint", ep.ID, "owner", ep.OwnerID, "event", ev.ID, "event_type", ev.Type, "error", err)
	}
	return ok && err == nil
}

// filterNotes remembers which endpoints' filters have had a failure
// logged (by endpoint and filter text: an edited filter is logged anew).
type filterNotes struct {
	mu   sync.Mutex
	seen map[[2]string]bool
}

// first says whether this is the first failure of endpointID's filter.
func (n *filterNotes) first(endpointID, filter string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	k := [2]string{endpointID, filter}
	if n.seen[k] {
		return false
	}
	if n.seen == nil || len(n.seen) >= 10000 {
		n.seen = map[[2]string]bool{} // bounded: a long-lived process forgets old ones
	}
	n.seen[k] = true
	return true
}

// redactHeaders replaces, in a failed run's message, every value of the
// endpoint's custom headers with ***: a script may throw one (a
// receiver's credential rides in them), and the message is recorded on
// the delivery, which its owner reads.
func redactHeaders(msg string, h map[string]string) string {
	for _, v := range h {
		if len(v) >= 4 {
			msg = strings.ReplaceAll(msg, v, "***")
		}
	}
	return msg
}

// transformCancel is an attempt its transformation cancelled.
type transformCancel struct{}

func (transformCancel) Error() string {
	return "cancelled by the endpoint's transformation (webhook.cancel = true): not sent"
}

// transformed runs ep's transformation on the attempt's request: the
// envelope body, the endpoint's URL and custom headers. It returns what
// to send instead; failed is the outcome of a run that failed (the
// script's error and line, under the profile's rule for a permanent
// failure, except a run the watchdog stopped, which is retried); err
// is transformCancel when the script cancelled.
func (s *Service) transformed(ep *endpoint.Endpoint, p profile.Profile, body []byte) (out transform.Result, failed *Outcome, err error) {
	fail := func(msg string) (transform.Result, *Outcome, error) {
		msg = redactHeaders(msg, ep.Headers)
		v := Retry
		if p.GivesUpOn(http.StatusUnprocessableEntity) {
			v = Discard
		}
		return transform.Result{}, &Outcome{Verdict: v, Error: "transformation failed: " + msg}, nil
	}
	if s.cfg.Code.TransformationsOff {
		return fail("transformations are turned off on this server (hookd serve --no-transformations); nothing was sent untransformed")
	}
	in := transform.Webhook{Method: http.MethodPost, URL: ep.URL, Headers: ep.Headers, Payload: body}
	out, err = s.cfg.Code.Scripts.Run(ep.Transformation, in)
	if err == nil {
		err = transform.CheckResult(in, &out)
	}
	var re *transform.RunError
	if errors.As(err, &re) {
		if re.Stopped != nil {
			// The watchdog's limits are the machine's as much as the
			// script's: the time limit is the wall clock's (a starved
			// machine can stop an innocent script), the heap bound the
			// process's (hookd's own allocations count). Retried on the
			// profile's schedule, like a receiver's timeout; a script that
			// always runs over still ends failed when its attempts run out.
			return transform.Result{}, &Outcome{Verdict: Retry, Error: "transformation failed: " + redactHeaders(re.Error(), ep.Headers)}, nil
		}
		return fail(re.Error())
	}
	if err != nil {
		return out, nil, fmt.Errorf("transformation of endpoint %s: %w", ep.ID, err)
	}
	if out.Cancel {
		return out, nil, transformCancel{}
	}
	if out.Headers, err = endpoint.CheckHeaders(out.Headers); err != nil {
		return fail("webhook.headers: " + err.Error())
	}
	return out, nil, nil
}
