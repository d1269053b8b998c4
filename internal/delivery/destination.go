package delivery

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/hookd/hookd/internal/destination"
	"github.com/hookd/hookd/internal/egress"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/profile"
)

// Destinations sends to an endpoint whose url names a broker
// (internal/destination.Pool): raw is the url with its credentials.
type Destinations interface {
	Send(ctx context.Context, raw string, m destination.Message) error
}

// credential is an endpoint's unsealed destination url, as of the
// endpoint's last update.
type credential struct {
	updatedAt time.Time
	url       string
}

// sendDestination is attempt's send when ep's url names a broker: the same
// body and headers (signature included) as a message, the broker's ack
// as the 2xx. body is released by the caller after it returns.
func (s *Service) sendDestination(ctx context.Context, ep *endpoint.Endpoint, ev *event.Event, h http.Header, body []byte, p profile.Profile) (Outcome, time.Duration, error) {
	raw, err := s.destinationURL(ctx, ep)
	if err != nil {
		return Outcome{}, 0, err
	}
	if s.cfg.Destinations == nil {
		return Outcome{Verdict: Retry, Error: "this hookd has no destination pool configured (" + destination.KindOf(ep.URL) + ")"}, 0, nil
	}
	sctx, cancel := context.WithTimeout(ctx, s.cfg.HTTPTimeout) // the same bound as an HTTP attempt
	defer cancel()
	start := time.Now() // the wall clock, not s.now: a duration, not a time
	err = s.cfg.Destinations.Send(sctx, raw, destination.Message{Body: body, Headers: h, EventID: ev.ID, Subject: ev.Subject, Type: ev.Type})
	took := time.Since(start)
	s.cfg.Metrics.Attempt(p.Name(), took)
	return classifySend(err, s.now(), s.cfg.MaxRetryAfter, p), took, nil
}

// classifySend turns a destination's answer into an outcome: an ack is a
// success; a permanent refusal is judged by the profile as the HTTP
// status it stands for (403, 404, 409: standard discards, kwork retries);
// anything else (unreachable, timeout, nack) as a failed connection.
func classifySend(err error, now time.Time, maxWait time.Duration, p profile.Profile) Outcome {
	if err == nil {
		return Outcome{Verdict: Complete}
	}
	if r, ok := destination.AsRefused(err); ok {
		out := classifyAnswer(egress.Response{StatusCode: r.Status}, now, maxWait, p)
		out.Error = fmt.Sprintf("%s; %s", r.Error(), out.Verdict)
		return out
	}
	return Classify(egress.Response{}, err, now, maxWait, p)
}

// destinationURL is ep's url with its password: unsealed from the
// endpoint's credentials when its url shows one masked, remembered until
// the endpoint changes.
func (s *Service) destinationURL(ctx context.Context, ep *endpoint.Endpoint) (string, error) {
	if !destination.HasPassword(ep.URL) {
		return ep.URL, nil
	}
	if c, ok := s.creds.Load(ep.ID); ok && c.(credential).updatedAt.Equal(ep.UpdatedAt) {
		return c.(credential).url, nil
	}
	sealed, err := s.db.Q().EndpointCredentials(ctx, ep.ID)
	if err != nil {
		return "", err
	}
	if sealed == nil {
		return "", fmt.Errorf("endpoint %s: its url's password is not stored", ep.ID)
	}
	raw, err := s.cfg.Sealer.Open(sealed)
	if err != nil {
		return "", fmt.Errorf("endpoint %s credentials: %w", ep.ID, err)
	}
	s.creds.Store(ep.ID, credential{updatedAt: ep.UpdatedAt, url: raw})
	return raw, nil
}
