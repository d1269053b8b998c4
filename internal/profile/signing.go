package profile

import (
	"fmt"
	"time"

	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/webhook"
)

// Signing is what a profile's signature header can carry, beyond one HMAC.
type Signing struct {
	// Schemes are the endpoint signature schemes the profile offers; the
	// first is the default.
	Schemes []string
	// Overlap reports whether a rotation's outgoing keys may keep signing
	// beside the new ones (a header with several entries).
	Overlap bool
}

// SigningOf returns p's signing capabilities. A profile that says nothing
// signs with one HMAC secret and rotates at once: kwork, whose receivers
// (kwork's reference verifier) read the last v1= of the header only.
func SigningOf(p Profile) Signing {
	if s, ok := p.(interface{ Signing() Signing }); ok {
		return s.Signing()
	}
	return Signing{Schemes: []string{endpoint.SignHMAC}}
}

// NewKeys makes a fresh key set for scheme: a secret from p for hmac, an
// Ed25519 pair for ed25519, both for both.
func NewKeys(p Profile, scheme string) (endpoint.KeySet, error) {
	var k endpoint.KeySet
	if scheme == endpoint.SignHMAC || scheme == endpoint.SignBoth {
		secret, err := p.NewSecret()
		if err != nil {
			return k, err
		}
		k.Secret = secret
	}
	if scheme == endpoint.SignEd25519 || scheme == endpoint.SignBoth {
		sk, pk, err := webhook.NewSigningKey()
		if err != nil {
			return k, err
		}
		k.SigningKey, k.PublicKey = sk, pk
	}
	return k, nil
}

// keyringSigner signs one message with every key an endpoint signs with at
// a moment: the current generation, then the rotated-out ones still in
// their overlap, newest first.
type keyringSigner struct {
	current []*webhook.Signer
	old     []oldSigners
}

type oldSigners struct {
	signers []*webhook.Signer
	until   int64 // Unix µs: signs while now < until
}

func newKeyringSigner(opened string) (*keyringSigner, error) {
	keys, err := endpoint.ParseKeys(opened)
	if err != nil {
		return nil, err
	}
	current, err := setSigners(keys.Current)
	if err != nil {
		return nil, err
	}
	if len(current) == 0 {
		return nil, fmt.Errorf("endpoint keys: no current key")
	}
	ks := &keyringSigner{current: current}
	for _, o := range keys.Old {
		signers, err := setSigners(o.KeySet)
		if err != nil {
			return nil, fmt.Errorf("old key: %w", err)
		}
		ks.old = append(ks.old, oldSigners{signers: signers, until: o.Until.UnixMicro()})
	}
	return ks, nil
}

func setSigners(k endpoint.KeySet) ([]*webhook.Signer, error) {
	var out []*webhook.Signer
	for _, key := range []string{k.Secret, k.SigningKey} {
		if key == "" {
			continue
		}
		s, err := webhook.NewSigner(key)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// appendSign appends the space-separated webhook-signature entries to dst.
func (ks *keyringSigner) appendSign(dst []byte, msgID string, unix int64, body []byte, now time.Time) []byte {
	start := len(dst)
	add := func(s *webhook.Signer) {
		if len(dst) > start {
			dst = append(dst, ' ')
		}
		dst = s.AppendSign(dst, msgID, unix, body)
	}
	for _, s := range ks.current {
		add(s)
	}
	if len(ks.old) > 0 {
		at := now.UnixMicro()
		for _, o := range ks.old {
			if at < o.until {
				for _, s := range o.signers {
					add(s)
				}
			}
		}
	}
	return dst
}

// currentSecret is the symmetric secret of the current generation: all a
// one-signature profile (kwork) signs with.
func currentSecret(opened string) (string, error) {
	keys, err := endpoint.ParseKeys(opened)
	if err != nil {
		return "", err
	}
	return keys.Current.Secret, nil
}
