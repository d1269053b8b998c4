package webhook

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
)

// Asymmetric (Ed25519) keys of Standard Webhooks. The signing key never
// leaves the sender; receivers hold only the public key.
const (
	// SigningKeyPrefix starts an Ed25519 signing key: "whsk_" +
	// base64(32-byte seed || 32-byte public key), as Svix writes it.
	SigningKeyPrefix = "whsk_"
	// PublicKeyPrefix starts an Ed25519 public key: "whpk_" + base64(32 bytes).
	PublicKeyPrefix = "whpk_"
)

// asymmetricVersion labels an Ed25519 entry in webhook-signature.
const asymmetricVersion = "v1a"

// NewSigningKey returns a fresh Ed25519 key pair as (whsk_…, whpk_…).
func NewSigningKey() (signingKey, publicKey string, err error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", "", fmt.Errorf("webhook: new signing key: %w", err)
	}
	return SigningKeyPrefix + base64.StdEncoding.EncodeToString(priv),
		PublicKeyPrefix + base64.StdEncoding.EncodeToString(pub), nil
}

// PublicKeyOf returns the whpk_ public key of a whsk_ signing key.
func PublicKeyOf(signingKey string) (string, error) {
	priv, err := decodeSigningKey(signingKey)
	if err != nil {
		return "", err
	}
	return PublicKeyPrefix + base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey)), nil
}

// decodeSigningKey accepts "whsk_" + base64 of the 64-byte private key (seed
// then public key) or of the 32-byte seed alone.
func decodeSigningKey(key string) (ed25519.PrivateKey, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(key, SigningKeyPrefix))
	if err != nil {
		return nil, fmt.Errorf("%w: not %s + base64: %w", ErrInvalidSecret, SigningKeyPrefix, err)
	}
	switch len(raw) {
	case ed25519.SeedSize:
		return ed25519.NewKeyFromSeed(raw), nil
	case ed25519.PrivateKeySize:
		priv := ed25519.NewKeyFromSeed(raw[:ed25519.SeedSize])
		if !priv.Public().(ed25519.PublicKey).Equal(ed25519.PublicKey(raw[ed25519.SeedSize:])) {
			return nil, fmt.Errorf("%w: %s key's public half does not belong to its seed", ErrInvalidSecret, SigningKeyPrefix)
		}
		return priv, nil
	}
	return nil, fmt.Errorf("%w: %s key decodes to %d bytes; want 64 (seed and public key) or 32 (seed)", ErrInvalidSecret, SigningKeyPrefix, len(raw))
}

// decodePublicKey accepts "whpk_" + base64 of a 32-byte Ed25519 public key.
func decodePublicKey(key string) (ed25519.PublicKey, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(key, PublicKeyPrefix))
	if err != nil {
		return nil, fmt.Errorf("%w: not %s + base64: %w", ErrInvalidSecret, PublicKeyPrefix, err)
	}
	if len(raw) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%w: %s key decodes to %d bytes; want 32", ErrInvalidSecret, PublicKeyPrefix, len(raw))
	}
	return ed25519.PublicKey(raw), nil
}

// signedPool recycles the buffer that holds "<id>.<ts>.<body>": Ed25519
// signs one contiguous message, unlike HMAC which streams.
var signedPool = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// maxPooledSigned keeps an occasional very large body from pinning memory.
const maxPooledSigned = 64 << 10

// withSignedContent calls f with "<msgID>.<ts>.<body>" in a pooled buffer
// that f must not keep.
func withSignedContent(msgID string, ts int64, body []byte, f func(msg []byte)) {
	bp := signedPool.Get().(*[]byte)
	msg := appendStandardPrefix((*bp)[:0], msgID, ts)
	msg = append(msg, body...)
	f(msg)
	if cap(msg) <= maxPooledSigned {
		*bp = msg
		signedPool.Put(bp)
	}
}
