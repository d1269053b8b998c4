package webhook

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// JWKS caching defaults: a fetched key set is used this long, and a
// signature that no cached key verifies refetches it at most this often
// (a rotation's new key is published before it signs).
const (
	DefaultJWKSCacheFor   = 5 * time.Minute
	DefaultJWKSMinRefetch = 30 * time.Second
)

// JWKSConfig says where a JWKSVerifier gets its keys.
type JWKSConfig struct {
	// URL is the sender's key set, e.g.
	// https://hookd.example.com/.well-known/hookd/acme/jwks.json.
	URL string
	// EndpointID, when set, takes only the keys of that endpoint (the
	// endpoint_id member hookd puts on each key); else every key in the
	// set verifies.
	EndpointID string
	// Client fetches the set (nil: a client with a 10 s timeout).
	Client *http.Client
	// CacheFor and MinRefetch: zero means the defaults above.
	CacheFor, MinRefetch time.Duration
}

// JWKSVerifier checks Standard Webhooks v1a (Ed25519) signatures with the
// public keys a sender publishes as a JSON Web Key Set (RFC 7517; Ed25519
// keys as in RFC 8037), fetched and cached. It implements RequestVerifier
// and is safe for concurrent use. During a rotation the set holds the old
// key and the new one, so both verify.
type JWKSVerifier struct {
	src JWKSConfig
	cfg verifierConfig

	mu      sync.Mutex
	keys    standardKeys
	fetched time.Time // zero: never
	tried   time.Time
}

// NewJWKSVerifier returns a verifier for src; opts set the tolerance and
// clock as for NewVerifier (WithKeys adds whpk_ keys beside the set's).
// Nothing is fetched until the first Verify.
func NewJWKSVerifier(src JWKSConfig, opts ...VerifierOption) (*JWKSVerifier, error) {
	if src.URL == "" {
		return nil, errors.New("webhook: JWKS URL is empty")
	}
	cfg, err := newVerifierConfig(opts)
	if err != nil {
		return nil, err
	}
	if _, err := newStandardKeys(cfg.more); err != nil {
		return nil, err
	}
	if src.Client == nil {
		src.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if src.CacheFor <= 0 {
		src.CacheFor = DefaultJWKSCacheFor
	}
	if src.MinRefetch <= 0 {
		src.MinRefetch = DefaultJWKSMinRefetch
	}
	return &JWKSVerifier{src: src, cfg: cfg}, nil
}

// Verify is VerifyContext with a background context.
func (v *JWKSVerifier) Verify(h http.Header, body []byte) (Event, error) {
	return v.VerifyContext(context.Background(), h, body)
}

// VerifyContext checks a request as Verifier.Verify does, with the keys of
// the set: cached, fetched when the cache is older than CacheFor, and
// fetched again (at most every MinRefetch) when no cached key matches.
func (v *JWKSVerifier) VerifyContext(ctx context.Context, h http.Header, body []byte) (Event, error) {
	msgID := headerOr(h, HeaderID, "svix-id")
	timestamp := headerOr(h, HeaderTimestamp, "svix-timestamp")
	sigHeader := headerOr(h, HeaderSignature, "svix-signature")
	keys, err := v.current(ctx, false)
	if err != nil {
		return Event{}, err
	}
	err = verifyStandard(&keys, msgID, timestamp, sigHeader, body, v.cfg.now(), v.cfg.tolerance)
	if errors.Is(err, ErrNoMatchingSignature) {
		if fresh, ferr := v.current(ctx, true); ferr == nil {
			err = verifyStandard(&fresh, msgID, timestamp, sigHeader, body, v.cfg.now(), v.cfg.tolerance)
		}
	}
	if err != nil {
		return Event{}, err
	}
	return parseEvent(body)
}

// current returns the cached keys, fetching when they are stale or, with
// missed, when the last fetch is older than MinRefetch.
func (v *JWKSVerifier) current(ctx context.Context, missed bool) (standardKeys, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	now := v.cfg.now()
	stale := v.fetched.IsZero() || now.Sub(v.fetched) >= v.src.CacheFor
	if missed {
		stale = now.Sub(v.tried) >= v.src.MinRefetch
	}
	if !stale {
		return v.keys, nil
	}
	v.tried = now
	keys, err := v.fetch(ctx)
	if err != nil {
		if !v.fetched.IsZero() {
			return v.keys, nil // the sender's set is unreachable: keep verifying with what we had
		}
		return standardKeys{}, err
	}
	v.keys, v.fetched = keys, now
	return keys, nil
}

// jwk is the part of a JSON Web Key this verifier reads.
type jwk struct {
	Kty        string `json:"kty"`
	Crv        string `json:"crv"`
	X          string `json:"x"`
	Kid        string `json:"kid"`
	Use        string `json:"use"`
	EndpointID string `json:"endpoint_id"`
}

func (v *JWKSVerifier) fetch(ctx context.Context) (standardKeys, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.src.URL, nil)
	if err != nil {
		return standardKeys{}, fmt.Errorf("webhook: JWKS: %w", err)
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	resp, err := v.src.Client.Do(req)
	if err != nil {
		return standardKeys{}, fmt.Errorf("webhook: JWKS: %w", err)
	}
	defer func() { _ = resp.Body.Close() }() // read to its use below; a failed close loses nothing
	if resp.StatusCode != http.StatusOK {
		return standardKeys{}, fmt.Errorf("webhook: JWKS %s: HTTP %d", v.src.URL, resp.StatusCode)
	}
	var set struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&set); err != nil {
		return standardKeys{}, fmt.Errorf("webhook: JWKS %s: %w", v.src.URL, err)
	}
	keys, err := newStandardKeys(v.cfg.more)
	if err != nil {
		return standardKeys{}, err
	}
	for _, k := range set.Keys {
		if k.Kty != "OKP" || k.Crv != "Ed25519" || (k.Use != "" && k.Use != "sig") {
			continue // not an Ed25519 signing key: some other sender's, skipped
		}
		if v.src.EndpointID != "" && k.EndpointID != v.src.EndpointID {
			continue
		}
		raw, err := base64.RawURLEncoding.DecodeString(k.X)
		if err != nil || len(raw) != ed25519.PublicKeySize {
			continue
		}
		keys.public = append(keys.public, ed25519.PublicKey(raw))
	}
	return keys, nil
}

// JWKThumbprint is the RFC 7638 thumbprint of a whpk_ Ed25519 public key,
// which hookd uses as the key's kid: a receiver that pins keys can compute
// it from the key it holds.
func JWKThumbprint(publicKey string) (string, error) {
	pub, err := decodePublicKey(publicKey)
	if err != nil {
		return "", err
	}
	x := base64.RawURLEncoding.EncodeToString(pub)
	sum := sha256.Sum256([]byte(`{"crv":"Ed25519","kty":"OKP","x":"` + x + `"}`))
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}
