package ops

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/destination"
	"github.com/hookd/hookd/internal/store"
)

// checkDestination checks a url that names a broker (amqp, nats, redis:
// docs/destinations.md), naming the part to fix. The error never repeats
// the password.
func (s *Service) checkDestination(url string) error {
	if _, err := destination.Parse(url, s.EgressAllow); err != nil {
		return destinationInvalid(err)
	}
	return nil
}

// DestinationKinds are the kinds of destination this hookd accepts for a
// new url, in destination.Kinds' order.
func (s *Service) DestinationKinds() []string {
	kinds := s.Destinations
	if p := s.destinations.Load(); p != nil {
		kinds = *p
	}
	if len(kinds) == 0 {
		return destination.Kinds
	}
	return kinds
}

// SetDestinations replaces Destinations while the service runs, as
// restarting with another --destinations would (tests: an endpoint saved
// before its kind was left out). kinds are destination.Kinds' names.
func (s *Service) SetDestinations(kinds []string) { s.destinations.Store(&kinds) }

// checkKind refuses a url of a kind the operator left out (hookd serve
// --destinations), saying which kinds this hookd accepts.
func (s *Service) checkKind(url string) error {
	kind, allowed := destination.KindOf(url), s.DestinationKinds()
	if slices.Contains(allowed, kind) {
		return nil
	}
	list := strings.Join(allowed, ", ")
	return apperr.New(apperr.Invalid, "url: this hookd accepts no %s destination (hookd serve --destinations); it accepts %s", kind, list).Keyed("endpoint.destination_kind", kind, list)
}

func destinationInvalid(err error) error {
	var fe *destination.FieldError
	if !errors.As(err, &fe) {
		return err
	}
	field := "url"
	if fe.Field != "url" {
		field = "url: " + fe.Field
	}
	return apperr.New(apperr.Invalid, "%s: %s", field, fe.Reason).Keyed("endpoint.destination_invalid", fe.Field, fe.Reason)
}

// sealDestination splits an endpoint's url as given into the url kept and
// shown (its password as ***) and the url sealed at rest (nil: no
// password to keep). A password given back as *** keeps the endpoint's
// stored one (an update of the rest of the url), for the same host and
// user only.
func (s *Service) sealDestination(ctx context.Context, q *store.Q, endpointID, raw string) (shown string, sealed []byte, err error) {
	if !destination.Is(raw) || !destination.HasPassword(raw) {
		return raw, nil, nil
	}
	full := raw
	if destination.Redact(raw) == raw { // the password given is ***
		old, err := q.EndpointCredentials(ctx, endpointID)
		if err != nil {
			return "", nil, err
		}
		oldURL := ""
		if old != nil {
			if oldURL, err = s.Sealer.Open(old); err != nil {
				return "", nil, err
			}
		}
		if full, err = destination.Keep(raw, oldURL); err != nil {
			return "", nil, destinationInvalid(err)
		}
	}
	if sealed, err = s.Sealer.Seal(full); err != nil {
		return "", nil, err
	}
	return destination.Redact(full), sealed, nil
}
