package ops

import (
	"context"
	"encoding/base64"
	"strings"
	"time"

	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/webhook"
)

// JWKS is a JSON Web Key Set (RFC 7517 §5): the public keys that verify
// the v1a (Ed25519) signatures of one owner's endpoints.
type JWKS struct {
	Keys []JWK `json:"keys"`
}

// JWK is one Ed25519 public key (RFC 8037: kty OKP, crv Ed25519, x the
// base64url key). Kid is its RFC 7638 thumbprint, which a verifier
// computes from the key itself; EndpointID lets a receiver take only its
// endpoint's keys, and ExpiresAt marks a rotated-out key that still signs
// until then.
type JWK struct {
	Kty        string     `json:"kty"`
	Crv        string     `json:"crv"`
	X          string     `json:"x"`
	Kid        string     `json:"kid"`
	Use        string     `json:"use"`
	Alg        string     `json:"alg"`
	EndpointID string     `json:"endpoint_id"`
	ExpiresAt  *time.Time `json:"expires_at,omitempty"`
}

// JWKSOf returns the key set of ownerID's endpoints that sign with
// Ed25519, the old keys of a rotation's overlap included. An owner without
// such endpoints (or unknown) has an empty set: the document is public,
// and says nothing about whether the owner exists.
func (s *Service) JWKSOf(ctx context.Context, ownerID string) (*JWKS, error) {
	eps, err := s.DB.Q().ListEndpoints(ctx, ownerID, false)
	if err != nil {
		return nil, err
	}
	out := &JWKS{Keys: []JWK{}}
	now := s.now()
	for _, e := range eps {
		sg := e.Signing.At(now)
		if sg.PublicKey != "" {
			out.Keys = appendJWK(out.Keys, e, sg.PublicKey, nil)
		}
		for _, pk := range sg.OldPublicKeys {
			out.Keys = appendJWK(out.Keys, e, pk, sg.OldKeysExpireAt)
		}
	}
	return out, nil
}

func appendJWK(keys []JWK, e *endpoint.Endpoint, whpk string, until *time.Time) []JWK {
	kid, err := webhook.JWKThumbprint(whpk)
	if err != nil {
		return keys // not a key hookd wrote; never published half-read
	}
	raw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(whpk, webhook.PublicKeyPrefix)) // JWKThumbprint decoded it
	return append(keys, JWK{Kty: "OKP", Crv: "Ed25519", X: base64.RawURLEncoding.EncodeToString(raw), Kid: kid,
		Use: "sig", Alg: "EdDSA", EndpointID: e.ID, ExpiresAt: until})
}
