package webhook

import (
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

// Signer signs Standard Webhooks messages with one secret. The key is decoded
// once; a Signer is safe for concurrent use and is meant to be kept per
// endpoint secret.
type Signer struct {
	macs *macPool
}

// NewSigner decodes secret ("whsec_" + base64, prefix optional).
func NewSigner(secret string) (*Signer, error) {
	key, err := decodeSecret(secret)
	if err != nil {
		return nil, err
	}
	return &Signer{macs: newMACPool(key)}, nil
}

// Sign returns the webhook-signature header value for one message:
// "v1," + base64(HMAC-SHA256(key, "<msgID>.<ts>.<body>")).
func (s *Signer) Sign(msgID string, ts int64, body []byte) string {
	var buf [64]byte
	return string(s.AppendSign(buf[:0], msgID, ts, body))
}

// AppendSign appends the header value Sign would return to dst; with enough
// capacity in dst it does not allocate.
func (s *Signer) AppendSign(dst []byte, msgID string, ts int64, body []byte) []byte {
	st := s.macs.get()
	st.prefix = appendStandardPrefix(st.prefix, msgID, ts)
	sum := st.finish(body)
	dst = append(dst, signatureVersion+","...)
	dst = base64.StdEncoding.AppendEncode(dst, sum)
	s.macs.put(st)
	return dst
}

// appendStandardPrefix appends "<msgID>.<ts>." — the signed content minus the body.
func appendStandardPrefix(dst []byte, msgID string, ts int64) []byte {
	dst = append(dst, msgID...)
	dst = append(dst, '.')
	dst = strconv.AppendInt(dst, ts, 10)
	return append(dst, '.')
}
