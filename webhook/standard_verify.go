package webhook

import (
	"crypto/ed25519"
	"crypto/hmac"
	"encoding/base64"
	"fmt"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Verifier checks Standard Webhooks requests signed with any of its keys.
// It is safe for concurrent use.
type Verifier struct {
	keys standardKeys
	cfg  verifierConfig
}

// NewVerifier decodes its keys once: secret plus any given WithKeys. A
// "whsec_" + base64 secret (prefix optional) checks v1 (HMAC-SHA256)
// entries; a "whpk_" + base64 Ed25519 public key checks v1a entries. A
// request passes when any entry matches any key.
func NewVerifier(secret string, opts ...VerifierOption) (*Verifier, error) {
	cfg, err := newVerifierConfig(opts)
	if err != nil {
		return nil, err
	}
	keys, err := newStandardKeys(append([]string{secret}, cfg.more...))
	if err != nil {
		return nil, err
	}
	return &Verifier{keys: keys, cfg: cfg}, nil
}

// Verify checks the webhook-id, webhook-timestamp and webhook-signature
// headers against the raw body, in this order: headers present, timestamp
// parses, timestamp within tolerance, some signature matches some key. Then
// it decodes the body into an Event (ErrMalformedBody if it is not a JSON
// object). The svix-id, svix-timestamp and svix-signature headers are
// accepted in place of missing webhook-* ones.
func (v *Verifier) Verify(h http.Header, body []byte) (Event, error) {
	msgID := headerOr(h, HeaderID, "svix-id")
	timestamp := headerOr(h, HeaderTimestamp, "svix-timestamp")
	sigHeader := headerOr(h, HeaderSignature, "svix-signature")
	err := verifyStandard(&v.keys, msgID, timestamp, sigHeader, body, v.cfg.now(), v.cfg.tolerance)
	if err != nil {
		return Event{}, err
	}
	return parseEvent(body)
}

// VerifyStandard checks one Standard Webhooks message at the given time
// without parsing the body; an empty msgID, timestamp or sigHeader counts as
// a missing header. secret is a whsec_ secret or a whpk_ public key. Keep a
// Verifier instead when verifying many messages.
func VerifyStandard(secret, msgID, timestamp, sigHeader string, body []byte, now time.Time, tolerance time.Duration) error {
	keys, err := newStandardKeys([]string{secret})
	if err != nil {
		return err
	}
	return verifyStandard(&keys, msgID, timestamp, sigHeader, body, now, tolerance)
}

func verifyStandard(keys *standardKeys, msgID, timestamp, sigHeader string, body []byte, now time.Time, tolerance time.Duration) error {
	for _, hdr := range [...]struct{ name, value string }{
		{HeaderID, msgID}, {HeaderTimestamp, timestamp}, {HeaderSignature, sigHeader},
	} {
		if hdr.value == "" {
			return fmt.Errorf("%w: %s", ErrMissingHeader, hdr.name)
		}
	}
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s %s is not a Unix time in seconds", ErrMalformedHeader, HeaderTimestamp, quoteShort(timestamp))
	}
	if err := checkTimestamp(HeaderTimestamp, ts, now, tolerance); err != nil {
		return err
	}
	if !keys.matches(sigHeader, msgID, ts, body) {
		return fmt.Errorf("%w: %s has no %s", ErrNoMatchingSignature, HeaderSignature, keys.describe())
	}
	return nil
}

// standardKeys is what a Verifier accepts: HMAC secrets (v1) and Ed25519
// public keys (v1a).
type standardKeys struct {
	secrets []*Signer
	public  []ed25519.PublicKey
}

func newStandardKeys(keys []string) (standardKeys, error) {
	var ks standardKeys
	for _, key := range keys {
		switch {
		case strings.HasPrefix(key, PublicKeyPrefix):
			pub, err := decodePublicKey(key)
			if err != nil {
				return standardKeys{}, err
			}
			ks.public = append(ks.public, pub)
		case strings.HasPrefix(key, SigningKeyPrefix):
			return standardKeys{}, fmt.Errorf("%w: a %s key is the sender's signing key and must stay with it; verify with its %s public key", ErrInvalidSecret, SigningKeyPrefix, PublicKeyPrefix)
		default:
			s, err := NewSigner(key)
			if err != nil {
				return standardKeys{}, err
			}
			ks.secrets = append(ks.secrets, s)
		}
	}
	return ks, nil
}

// describe says, for an error, which entries the keys look for.
func (ks *standardKeys) describe() string {
	var parts []string
	switch n := len(ks.secrets); {
	case n == 1:
		parts = append(parts, "v1 entry made with this secret")
	case n > 1:
		parts = append(parts, fmt.Sprintf("v1 entry made with any of these %d secrets", n))
	}
	switch n := len(ks.public); {
	case n == 1:
		parts = append(parts, "v1a entry made for this public key")
	case n > 1:
		parts = append(parts, fmt.Sprintf("v1a entry made for any of these %d public keys", n))
	}
	return strings.Join(parts, " and no ")
}

// maxAsymmetricEntries bounds the Ed25519 checks one header can cost: a
// sender signs with at most a few keys, and each check takes tens of µs.
const maxAsymmetricEntries = 8

// matches reports whether some entry of sigHeader is the signature of
// (msgID, ts, body) under one of the keys. An entry is considered only with
// its exact label: v1 for secrets, v1a for public keys.
func (ks *standardKeys) matches(sigHeader, msgID string, ts int64, body []byte) bool {
	for _, s := range ks.secrets {
		if s.matches(sigHeader, msgID, ts, body) {
			return true
		}
	}
	if len(ks.public) == 0 || !strings.Contains(sigHeader, asymmetricVersion+",") {
		return false
	}
	matched := false
	withSignedContent(msgID, ts, body, func(msg []byte) {
		checked := 0
		for label, value := range standardSignatures(sigHeader) {
			if label != asymmetricVersion || len(value) != base64.StdEncoding.EncodedLen(ed25519.SignatureSize) {
				continue
			}
			if checked++; checked > maxAsymmetricEntries {
				return
			}
			var sig [ed25519.SignatureSize]byte
			// Strict: only the canonical encoding of the signature passes.
			n, err := base64.StdEncoding.Strict().Decode(sig[:], []byte(value))
			if err != nil || n != len(sig) {
				continue
			}
			for _, pub := range ks.public {
				if ed25519.Verify(pub, msg, sig[:]) {
					matched = true
					return
				}
			}
		}
	})
	return matched
}

// matches reports whether any entry labelled exactly "v1" in sigHeader is the
// signature of (msgID, ts, body). Values are compared in constant time as
// base64 text, so non-canonical encodings of the right bytes do not pass.
func (s *Signer) matches(sigHeader, msgID string, ts int64, body []byte) bool {
	var buf [64]byte
	want := s.AppendSign(buf[:0], msgID, ts, body)[len(signatureVersion)+1:]
	var got [64]byte
	for label, value := range standardSignatures(sigHeader) {
		if label != signatureVersion || len(value) != len(want) {
			continue
		}
		n := copy(got[:], value)
		if hmac.Equal(got[:n], want) {
			return true
		}
	}
	return false
}

// standardSignatures yields (label, value) for every "label,value" entry of a
// space-delimited webhook-signature header. Entries without a comma are
// skipped; labels are not interpreted here.
func standardSignatures(header string) iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for entry := range strings.SplitSeq(header, " ") {
			label, value, ok := strings.Cut(entry, ",")
			if !ok {
				continue
			}
			if !yield(label, value) {
				return
			}
		}
	}
}

// headerOr returns h's value for name, or for fallback when name is absent.
func headerOr(h http.Header, name, fallback string) string {
	if v := h.Get(name); v != "" {
		return v
	}
	return h.Get(fallback)
}
