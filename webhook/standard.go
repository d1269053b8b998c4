package webhook

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
)

// Standard Webhooks header names (https://www.standardwebhooks.com).
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SecretPrefix starts every secret made by NewSecret. It is optional on input:
// the HMAC key is the base64 decoding of what follows it.
const SecretPrefix = "whsec_"

// signatureVersion labels an HMAC-SHA256 entry in webhook-signature.
const signatureVersion = "v1"

// NewSecret returns a fresh Standard Webhooks secret:
// "whsec_" + base64 of 32 random bytes.
func NewSecret() (string, error) {
	var key [32]byte
	if _, err := rand.Read(key[:]); err != nil {
		return "", fmt.Errorf("webhook: new secret: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(key[:]), nil
}

// decodeSecret turns a "whsec_<base64>" (or bare base64) secret into the HMAC key.
func decodeSecret(secret string) ([]byte, error) {
	encoded := strings.TrimPrefix(secret, SecretPrefix)
	if encoded == "" {
		return nil, fmt.Errorf("%w: empty", ErrInvalidSecret)
	}
	key, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return nil, fmt.Errorf("%w: not %s + base64: %w", ErrInvalidSecret, SecretPrefix, err)
	}
	return key, nil
}

// Signer signs Standard Webhooks messages with one key: a symmetric secret
// (v1, HMAC-SHA256) or an Ed25519 signing key (v1a). The key is decoded
// once; a Signer is safe for concurrent use and is meant to be kept per
// endpoint key.
type Signer struct {
	macs *macPool           // whsec_: v1
	ed   ed25519.PrivateKey // whsk_: v1a
}

// NewSigner decodes secret: "whsec_" + base64 (prefix optional) signs v1
// entries, "whsk_" + base64 (an Ed25519 signing key, see NewSigningKey)
// signs v1a entries.
func NewSigner(secret string) (*Signer, error) {
	switch {
	case strings.HasPrefix(secret, SigningKeyPrefix):
		priv, err := decodeSigningKey(secret)
		if err != nil {
			return nil, err
		}
		return &Signer{ed: priv}, nil
	case strings.HasPrefix(secret, PublicKeyPrefix):
		return nil, fmt.Errorf("%w: a %s public key verifies but cannot sign; sign with its %s signing key", ErrInvalidSecret, PublicKeyPrefix, SigningKeyPrefix)
	}
	key, err := decodeSecret(secret)
	if err != nil {
		return nil, err
	}
	return &Signer{macs: newMACPool(key)}, nil
}

// Asymmetric reports whether s signs v1a (Ed25519) rather than v1 (HMAC).
func (s *Signer) Asymmetric() bool { return s.ed != nil }

// Sign returns the webhook-signature header value for one message:
// "v1," + base64(HMAC-SHA256(key, "<msgID>.<ts>.<body>")) for a secret, or
// "v1a," + base64(Ed25519(key, "<msgID>.<ts>.<body>")) for a signing key.
func (s *Signer) Sign(msgID string, ts int64, body []byte) string {
	var buf [96]byte
	return string(s.AppendSign(buf[:0], msgID, ts, body))
}

// AppendSign appends the header value Sign would return to dst; with enough
// capacity in dst (47 bytes for v1, 92 for v1a) it does not allocate for v1.
func (s *Signer) AppendSign(dst []byte, msgID string, ts int64, body []byte) []byte {
	if s.ed != nil {
		return s.appendEd25519(dst, msgID, ts, body)
	}
	st := s.macs.get()
	st.prefix = appendStandardPrefix(st.prefix, msgID, ts)
	sum := st.finish(body)
	dst = append(dst, signatureVersion+","...)
	dst = base64.StdEncoding.AppendEncode(dst, sum)
	s.macs.put(st)
	return dst
}

func (s *Signer) appendEd25519(dst []byte, msgID string, ts int64, body []byte) []byte {
	dst = append(dst, asymmetricVersion+","...)
	withSignedContent(msgID, ts, body, func(msg []byte) {
		dst = base64.StdEncoding.AppendEncode(dst, ed25519.Sign(s.ed, msg))
	})
	return dst
}

// appendStandardPrefix appends "<msgID>.<ts>." — the signed content minus the body.
func appendStandardPrefix(dst []byte, msgID string, ts int64) []byte {
	dst = append(dst, msgID...)
	dst = append(dst, '.')
	dst = strconv.AppendInt(dst, ts, 10)
	return append(dst, '.')
}
