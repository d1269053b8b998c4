package ops

import (
	"errors"
	"strings"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/egress"
	"github.com/hookd/hookd/internal/endpoint"
)

// checkAuth validates an endpoint's auth as given (trimmed type): a 422
// naming the field at fault.
func (s *Service) checkAuth(e *endpoint.Endpoint, a *endpoint.Auth) error {
	a.Type = strings.TrimSpace(a.Type)
	if endpoint.RemovesAuth(a.Type) {
		return nil
	}
	if e.Polled() {
		return apperr.New(apperr.Invalid, "auth: endpoint %s is a polling endpoint; hookd sends it nothing to authenticate (its consumer holds the poll token)", e.ID).Keyed("endpoint.auth_polled")
	}
	err := egress.CheckAuth(a, s.EgressAllow)
	var ae *egress.AuthError
	if errors.As(err, &ae) {
		return apperr.New(apperr.Invalid, "auth.%s %s", ae.Field, ae.Problem).Keyed("endpoint.auth_invalid", "auth."+ae.Field, ae.Problem)
	}
	return err
}

// setAuth seals a with e's keys, replacing any auth e had (type none
// removes it), and refreshes e's public record. a has passed checkAuth.
func (s *Service) setAuth(e *endpoint.Endpoint, a *endpoint.Auth, now time.Time) error {
	keys, err := s.openKeys(e)
	if err != nil {
		return err
	}
	keys.Auth = a
	if endpoint.RemovesAuth(a.Type) {
		keys.Auth = nil
	}
	return s.setKeys(e, keys, now)
}
