package webhook

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// jwkOf is the JWK hookd publishes for a whpk_ key.
func jwkOf(t *testing.T, pk, endpointID string) map[string]string {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(pk, PublicKeyPrefix))
	if err != nil {
		t.Fatal(err)
	}
	kid, err := JWKThumbprint(pk)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{"kty": "OKP", "crv": "Ed25519", "x": base64.RawURLEncoding.EncodeToString(raw), "kid": kid, "use": "sig", "alg": "EdDSA", "endpoint_id": endpointID}
}

// keySetServer serves a key set that the test changes, counting fetches.
type keySetServer struct {
	*httptest.Server
	mu      sync.Mutex
	keys    []map[string]string
	fetches int
}

func newKeySetServer(t *testing.T, keys ...map[string]string) *keySetServer {
	s := &keySetServer{keys: keys}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.fetches++
		w.Header().Set("Content-Type", "application/jwk-set+json")
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": s.keys})
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *keySetServer) set(keys ...map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = keys
}

func (s *keySetServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fetches
}

// signedRequest is a v1a-signed message's headers at now.
func signedRequest(t *testing.T, sk, id string, now time.Time, body []byte) http.Header {
	t.Helper()
	s, err := NewSigner(sk)
	if err != nil {
		t.Fatal(err)
	}
	ts := now.Unix()
	return http.Header{"Webhook-Id": {id}, "Webhook-Timestamp": {strconv.FormatInt(ts, 10)}, "Webhook-Signature": {s.Sign(id, ts, body)}}
}

// TestJWKSVerifier: verifies with the set's keys, caches the set, refetches
// once when a rotation's new key signs, keeps to one endpoint's keys when
// told, and keeps the last set when the sender cannot be reached.
func TestJWKSVerifier(t *testing.T) {
	t.Parallel()
	oldSK, oldPK, _ := NewSigningKey()
	newSK, newPK, _ := NewSigningKey()
	otherSK, otherPK, _ := NewSigningKey()
	srv := newKeySetServer(t, jwkOf(t, oldPK, "ep_1"), jwkOf(t, otherPK, "ep_2"))
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	v, err := NewJWKSVerifier(JWKSConfig{URL: srv.URL, EndpointID: "ep_1", CacheFor: time.Minute, MinRefetch: 10 * time.Second}, WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := v.Verify(signedRequest(t, oldSK, "msg_"+strconv.Itoa(i), now, testBody), testBody); err != nil {
			t.Fatalf("old key: %v", err)
		}
	}
	if n := srv.count(); n != 1 {
		t.Fatalf("5 verifications fetched the set %d times, want 1", n)
	}
	if _, err := v.Verify(signedRequest(t, otherSK, "msg_o", now, testBody), testBody); !errors.Is(err, ErrNoMatchingSignature) {
		t.Fatalf("another endpoint's key: %v, want ErrNoMatchingSignature", err)
	}

	srv.set(jwkOf(t, newPK, "ep_1"), jwkOf(t, oldPK, "ep_1"))
	now = now.Add(11 * time.Second) // past MinRefetch since the refused one above
	if _, err := v.Verify(signedRequest(t, newSK, "msg_n", now, testBody), testBody); err != nil {
		t.Fatalf("rotated key: %v", err)
	}
	before := srv.count()
	if _, err := v.Verify(signedRequest(t, otherSK, "msg_o2", now, testBody), testBody); !errors.Is(err, ErrNoMatchingSignature) || srv.count() != before {
		t.Fatalf("unknown key within MinRefetch: %v, %d fetches (want none)", err, srv.count()-before)
	}

	srv.Close() // the sender is down: the cached set still verifies, past CacheFor too
	now = now.Add(2 * time.Minute)
	if _, err := v.Verify(signedRequest(t, newSK, "msg_late", now, testBody), testBody); err != nil {
		t.Fatalf("with the set unreachable: %v", err)
	}
}

func TestJWKThumbprintVector(t *testing.T) {
	t.Parallel()
	// RFC 8037 appendix A.3: the thumbprint of its Ed25519 example key.
	raw, _ := base64.RawURLEncoding.DecodeString("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")
	got, err := JWKThumbprint(PublicKeyPrefix + base64.StdEncoding.EncodeToString(raw))
	if err != nil || got != "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k" {
		t.Fatalf("JWKThumbprint = %q, %v; want RFC 8037's kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k", got, err)
	}
}
