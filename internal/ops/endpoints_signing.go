package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/profile"
	"github.com/hookd/hookd/internal/store"
)

// Rotation overlaps: how long a rotated-out key keeps signing beside the new
// one (Svix's numbers: a day by default, a week at most).
const (
	DefaultOverlap = 24 * time.Hour
	MaxOverlap     = 7 * 24 * time.Hour
)

// RotateSecretIn is webhooks.rotate_secret's input.
type RotateSecretIn struct {
	ID string `json:"id" path:"id" jsonschema:"the endpoint id (ep_…)"`
	// Overlap is how long the old key keeps signing beside the new one.
	Overlap *Overlap `json:"overlap,omitempty" jsonschema:"how long deliveries carry the old key's signature too: a duration such as 24h, 90m or 7d, or 0 for none; default 24h, at most 7d (the kwork profile signs with one key: 0 only)"`
}

// Overlap is a duration as a user writes it: "24h", "90m", "7d", "0". A
// JSON number is taken as seconds.
type Overlap string

// UnmarshalJSON takes a duration string, or a JSON number of seconds.
func (o *Overlap) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] != '"' && !bytes.Equal(b, []byte("null")) {
		if _, err := strconv.ParseFloat(string(b), 64); err != nil {
			return fmt.Errorf("overlap must be a duration string such as \"24h\" or a number of seconds")
		}
		*o = Overlap(string(b) + "s")
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*o = Overlap(s)
	return nil
}

// duration parses o; a trailing "d" counts days.
func (o Overlap) duration() (time.Duration, error) {
	s := strings.TrimSpace(string(o))
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(days, 64)
		if err != nil {
			return 0, err
		}
		return time.Duration(n * float64(24*time.Hour)), nil
	}
	return time.ParseDuration(s)
}

// overlapFor resolves a rotation's overlap for prof: the default when none
// is given, and a 422 saying what to send when the value cannot be used.
func overlapFor(prof profile.Profile, o *Overlap) (time.Duration, error) {
	canOverlap := profile.SigningOf(prof).Overlap
	if o == nil {
		if canOverlap {
			return DefaultOverlap, nil
		}
		return 0, nil
	}
	d, err := o.duration()
	switch {
	case err != nil:
		return 0, apperr.New(apperr.Invalid, "overlap %q is not a duration: write it like \"24h\", \"90m\" or \"7d\", or \"0\" for no overlap", string(*o))
	case d < 0:
		return 0, apperr.New(apperr.Invalid, "overlap %q is negative: give 0 (the old secret stops at once) up to 7d", string(*o))
	case d > MaxOverlap:
		return 0, apperr.New(apperr.Invalid, "overlap %q is longer than the maximum of 7 days (168h)", string(*o))
	case d > 0 && !canOverlap:
		return 0, apperr.New(apperr.Invalid, "the %s profile signs every delivery with one key (its receivers read one v1= entry), so a rotation takes effect at once: send overlap 0 or leave it out", prof.Name())
	}
	return d, nil
}

// schemeFor resolves an endpoint's signature scheme for prof ("": the
// profile's default).
func schemeFor(prof profile.Profile, scheme string) (string, error) {
	schemes := profile.SigningOf(prof).Schemes
	if scheme == "" {
		return schemes[0], nil
	}
	if !slices.Contains(schemes, scheme) {
		return "", apperr.New(apperr.Invalid, "signature %q is not offered by the %s profile: use one of %s", scheme, prof.Name(), strings.Join(schemes, ", "))
	}
	return scheme, nil
}

func (s *Service) signingOps() []*Op {
	const base = "/api/admin/webhooks"
	return []*Op{
		define(Op{Name: "webhooks.rotate_secret", Audit: "endpoint", Summary: "Give the endpoint new keys; a new secret is shown in this answer only. The old keys keep signing beside the new ones for the overlap (default 24h, at most 7d, 0 for none).", Method: http.MethodPost, Path: base + "/{id}/rotate_secret", Status: 200, Role: owner.Admin, OwnerScoped: true}, s.rotateSecret),
		define(Op{Name: "webhooks.expire_old_secrets", Audit: "endpoint", Summary: "End a rotation's overlap now: deliveries stop carrying the old keys' signatures.", Method: http.MethodPost, Path: base + "/{id}/expire_old_secrets", Status: 200, Role: owner.Admin, OwnerScoped: true}, s.expireOldSecrets),
	}
}

// newEndpointKeys makes and seals the keys of a new endpoint.
func (s *Service) newEndpointKeys(prof profile.Profile, scheme string) (endpoint.Keys, []byte, error) {
	scheme, err := schemeFor(prof, scheme)
	if err != nil {
		return endpoint.Keys{}, nil, err
	}
	current, err := profile.NewKeys(prof, scheme)
	if err != nil {
		return endpoint.Keys{}, nil, err
	}
	keys := endpoint.Keys{Current: current}
	sealed, err := s.sealKeys(keys)
	return keys, sealed, err
}

func (s *Service) sealKeys(keys endpoint.Keys) ([]byte, error) {
	text, err := keys.Encode()
	if err != nil {
		return nil, err
	}
	return s.Sealer.Seal(text)
}

func (s *Service) openKeys(e *endpoint.Endpoint) (endpoint.Keys, error) {
	text, err := s.Sealer.Open(e.SecretSealed)
	if err != nil {
		return endpoint.Keys{}, fmt.Errorf("endpoint %s: %w", e.ID, err)
	}
	return endpoint.ParseKeys(text)
}

// setKeys seals keys into e and refreshes e's public signing record.
func (s *Service) setKeys(e *endpoint.Endpoint, keys endpoint.Keys, now time.Time) error {
	sealed, err := s.sealKeys(keys)
	if err != nil {
		return err
	}
	e.SecretSealed, e.Signing, e.UpdatedAt = sealed, keys.Signing(now), now
	return nil
}

// changeScheme switches e to scheme within an update. Keys the new scheme
// still uses are kept; missing ones are made; the ones it drops keep
// signing for the default overlap, so receivers have a day to switch over
// (expire_old_secrets ends that early). It returns a new symmetric secret
// to show once, if one was made.
func (s *Service) changeScheme(prof profile.Profile, e *endpoint.Endpoint, scheme string, now time.Time) (string, error) {
	scheme, err := schemeFor(prof, scheme)
	if err != nil || scheme == e.Signature {
		return "", err
	}
	keys, err := s.openKeys(e)
	if err != nil {
		return "", err
	}
	fresh, err := profile.NewKeys(prof, scheme)
	if err != nil {
		return "", err
	}
	next, shown := fresh, fresh.Secret
	if fresh.Secret != "" && keys.Current.Secret != "" {
		next.Secret, shown = keys.Current.Secret, ""
	}
	if fresh.SigningKey != "" && keys.Current.SigningKey != "" {
		next.SigningKey, next.PublicKey = keys.Current.SigningKey, keys.Current.PublicKey
	}
	overlap, err := overlapFor(prof, nil)
	if err != nil {
		return "", err
	}
	return shown, s.setKeys(e, keys.Rotate(next, now, overlap), now)
}

// rekey replaces the keys of one of p's endpoints with what change makes of
// them at now, in one transaction, and returns the endpoint as written.
func (s *Service) rekey(ctx context.Context, p Principal, id string, change func(keys endpoint.Keys, now time.Time) (endpoint.Keys, error)) (*endpoint.Endpoint, error) {
	var out *endpoint.Endpoint
	err := s.DB.InTx(ctx, store.TxOptions{}, func(q *store.Q) error {
		e, err := q.GetEndpoint(ctx, p.OwnerID, id)
		if err != nil {
			return err
		}
		keys, err := s.openKeys(e)
		if err != nil {
			return err
		}
		now := s.now()
		if keys, err = change(keys, now); err != nil {
			return err
		}
		if err := s.setKeys(e, keys, now); err != nil {
			return err
		}
		out = e
		return q.UpdateEndpoint(ctx, e)
	})
	return out, err
}

func (s *Service) rotateSecret(ctx context.Context, p Principal, in *RotateSecretIn) (*EndpointView, error) {
	_, prof, err := s.ownerProfile(ctx, p.OwnerID)
	if err != nil {
		return nil, err
	}
	overlap, err := overlapFor(prof, in.Overlap)
	if err != nil {
		return nil, err
	}
	var next endpoint.KeySet
	e, err := s.rekey(ctx, p, in.ID, func(keys endpoint.Keys, now time.Time) (endpoint.Keys, error) {
		if next, err = profile.NewKeys(prof, keys.Current.Scheme()); err != nil {
			return keys, err
		}
		return keys.Rotate(next, now, overlap), nil
	})
	if err != nil {
		return nil, err
	}
	v := s.view(e)
	v.Secret = next.Secret
	return v, nil
}

func (s *Service) expireOldSecrets(ctx context.Context, p Principal, in *EndpointRef) (*EndpointView, error) {
	e, err := s.rekey(ctx, p, in.ID, func(keys endpoint.Keys, _ time.Time) (endpoint.Keys, error) {
		return keys.ExpireOld(), nil
	})
	if err != nil {
		return nil, err
	}
	return s.view(e), nil
}
