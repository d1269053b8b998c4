package endpoint

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Signature schemes an endpoint can be signed with (standard profile).
const (
	SignHMAC    = "hmac"    // v1: HMAC-SHA256 with a whsec_ secret
	SignEd25519 = "ed25519" // v1a: Ed25519, hookd keeps whsk_, the receiver holds whpk_
	SignBoth    = "both"    // v1 and v1a
)

// MaxPreviousKeys is how many rotations' outgoing keys keep signing at once.
const MaxPreviousKeys = 3

// KeySet is one generation of an endpoint's signing keys.
type KeySet struct {
	// Secret is the symmetric secret (whsec_…; kwork: used as its bytes).
	Secret string `json:"secret,omitempty"`
	// SigningKey is the Ed25519 signing key, whsk_….
	SigningKey string `json:"signing_key,omitempty"`
	// PublicKey is SigningKey's public half, whpk_….
	PublicKey string `json:"public_key,omitempty"`
}

// Scheme names what the set signs with.
func (k KeySet) Scheme() string {
	switch {
	case k.Secret != "" && k.SigningKey != "":
		return SignBoth
	case k.SigningKey != "":
		return SignEd25519
	}
	return SignHMAC
}

// OldKeySet is a rotated-out generation that keeps signing until Until.
type OldKeySet struct {
	KeySet
	Until time.Time `json:"until"`
}

// Keys is everything an endpoint signs with: sealed at rest as one blob, so
// the old keys of a rotation are protected exactly like the current ones.
type Keys struct {
	Current KeySet      `json:"current"`
	Old     []OldKeySet `json:"old,omitempty"`
	// Auth is how hookd authenticates to the receiver (auth.go): a
	// credential, so it is sealed with the keys; rotations keep it.
	Auth *Auth `json:"auth,omitempty"`
}

// Encode returns the text Sealer.Seal protects. A lone secret is written as
// itself, the form endpoints had before key sets existed; anything else is
// JSON (which never starts a whsec_ secret).
func (k Keys) Encode() (string, error) {
	if len(k.Old) == 0 && k.Current.SigningKey == "" && k.Auth == nil {
		return k.Current.Secret, nil
	}
	b, err := json.Marshal(k)
	if err != nil {
		return "", fmt.Errorf("encode endpoint keys: %w", err)
	}
	return string(b), nil
}

// ParseKeys reads what Encode wrote.
func ParseKeys(s string) (Keys, error) {
	if !strings.HasPrefix(s, "{") {
		return Keys{Current: KeySet{Secret: s}}, nil
	}
	var k Keys
	if err := json.Unmarshal([]byte(s), &k); err != nil {
		return Keys{}, fmt.Errorf("decode endpoint keys: %w", err)
	}
	return k, nil
}

// Active returns the old generations still signing at now, newest first.
func (k Keys) Active(now time.Time) []OldKeySet {
	var out []OldKeySet
	for _, o := range k.Old {
		if now.Before(o.Until) {
			out = append(out, o)
		}
	}
	return out
}

// Rotate makes next the current generation. With overlap > 0 the keys of
// the outgoing one that next does not keep go on signing until
// now+overlap, next to the old generations still active (at most
// MaxPreviousKeys, the newest kept); with overlap 0 every old key stops at
// once.
func (k Keys) Rotate(next KeySet, now time.Time, overlap time.Duration) Keys {
	if overlap <= 0 {
		return Keys{Current: next, Auth: k.Auth}
	}
	out := k.Current
	if out.Secret == next.Secret {
		out.Secret = ""
	}
	if out.SigningKey == next.SigningKey {
		out.SigningKey, out.PublicKey = "", ""
	}
	old := k.Active(now)
	if out != (KeySet{}) {
		old = append([]OldKeySet{{KeySet: out, Until: now.Add(overlap)}}, old...)
	}
	if len(old) > MaxPreviousKeys {
		old = old[:MaxPreviousKeys]
	}
	return Keys{Current: next, Old: old, Auth: k.Auth}
}

// ExpireOld stops every old generation now.
func (k Keys) ExpireOld() Keys { return Keys{Current: k.Current, Auth: k.Auth} }

// Signing is the public side of an endpoint's keys, shown in its record:
// nothing here is secret.
type Signing struct {
	// Signature is the scheme deliveries are signed with: hmac, ed25519 or both.
	Signature string `json:"signature"`
	// PublicKey verifies the v1a entries (ed25519 and both): whpk_….
	PublicKey string `json:"public_key,omitempty"`
	// OldKeysExpireAt is when the keys a rotation replaced stop signing;
	// until then deliveries carry their signatures too. Absent when no
	// old key signs.
	OldKeysExpireAt *time.Time `json:"old_keys_expire_at,omitempty"`
	// OldPublicKeys are the rotated-out public keys still signing.
	OldPublicKeys []string `json:"old_public_keys,omitempty"`
	// Auth is the public side of how hookd authenticates to the receiver
	// (absent: the signature alone).
	Auth *AuthInfo `json:"auth,omitempty"`
}

// Signing describes k at now for the endpoint's record.
func (k Keys) Signing(now time.Time) Signing {
	s := Signing{Signature: k.Current.Scheme(), PublicKey: k.Current.PublicKey, Auth: k.Auth.Info()}
	for _, o := range k.Active(now) {
		if s.OldKeysExpireAt == nil || o.Until.After(*s.OldKeysExpireAt) {
			until := o.Until.UTC()
			s.OldKeysExpireAt = &until
		}
		if o.PublicKey != "" {
			s.OldPublicKeys = append(s.OldPublicKeys, o.PublicKey)
		}
	}
	return s
}

// At returns s as it reads at now: once the old keys' overlap has ended,
// they are no longer shown.
func (s Signing) At(now time.Time) Signing {
	if s.Signature == "" {
		s.Signature = SignHMAC
	}
	if s.OldKeysExpireAt != nil && !now.Before(*s.OldKeysExpireAt) {
		s.OldKeysExpireAt, s.OldPublicKeys = nil, nil
	}
	return s
}
