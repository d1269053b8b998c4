package webhook

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	vectorPublicKey  = "whpk_1SiA4o9hyqTCpIqC5V9HUakiiaeACeqfZTInDBbOir4="
	vectorSigningKey = "whsk_6Xb/dCcHpPea21PS1N9VY/NZW723CEc77N4rJCubMbfVKIDij2HKpMKkioLlX0dRqSKJp4AJ6p9lMicMFs6Kvg=="
)

func TestNewSigningKeyRoundTrip(t *testing.T) {
	t.Parallel()
	sk, pk, err := NewSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sk, SigningKeyPrefix) || !strings.HasPrefix(pk, PublicKeyPrefix) {
		t.Fatalf("NewSigningKey = %q, %q", sk, pk)
	}
	if got, err := PublicKeyOf(sk); err != nil || got != pk {
		t.Fatalf("PublicKeyOf = %q, %v; want %q", got, err, pk)
	}
	s, err := NewSigner(sk)
	if err != nil || !s.Asymmetric() {
		t.Fatalf("NewSigner(whsk_) = %v, asymmetric %v", err, s != nil && s.Asymmetric())
	}
	sig := s.Sign("msg_1", 100, testBody)
	if !strings.HasPrefix(sig, "v1a,") || len(sig) != len("v1a,")+88 {
		t.Fatalf("Sign = %q, want v1a,<88 base64 chars>", sig)
	}
	if err := VerifyStandard(pk, "msg_1", "100", sig, testBody, time.Unix(100, 0), 0); err != nil {
		t.Fatalf("round trip: %v", err)
	}
	_, other, _ := NewSigningKey()
	if err := VerifyStandard(other, "msg_1", "100", sig, testBody, time.Unix(100, 0), 0); !errors.Is(err, ErrNoMatchingSignature) {
		t.Fatalf("another public key: %v, want ErrNoMatchingSignature", err)
	}
}

func TestSigningKeyFromSeedOnly(t *testing.T) {
	t.Parallel()
	priv, err := decodeSigningKey(vectorSigningKey)
	if err != nil {
		t.Fatal(err)
	}
	seedOnly := SigningKeyPrefix + encodeStd(priv.Seed())
	if pk, err := PublicKeyOf(seedOnly); err != nil || pk != vectorPublicKey {
		t.Fatalf("seed-only key: %q, %v", pk, err)
	}
	// A 64-byte key whose public half is not its seed's is refused.
	bad := append(append([]byte{}, priv.Seed()...), make([]byte, 32)...)
	if _, err := NewSigner(SigningKeyPrefix + encodeStd(bad)); !errors.Is(err, ErrInvalidSecret) {
		t.Fatalf("mismatched whsk_: %v", err)
	}
}

func TestVerifierRejectsSigningKey(t *testing.T) {
	t.Parallel()
	_, err := NewVerifier(vectorSigningKey)
	if !errors.Is(err, ErrInvalidSecret) || !strings.Contains(err.Error(), "whpk_") {
		t.Fatalf("NewVerifier(whsk_) = %v, want ErrInvalidSecret naming whpk_", err)
	}
	if _, err := NewSigner(vectorPublicKey); !errors.Is(err, ErrInvalidSecret) {
		t.Fatalf("NewSigner(whpk_) = %v", err)
	}
}

// TestVerifierSeveralKeys is the receiver's side of a rotation: a verifier
// holding the old and the new key accepts a message signed by either, and by
// both at once; one holding only one key accepts exactly what that key
// signed.
func TestVerifierSeveralKeys(t *testing.T) {
	t.Parallel()
	oldSecret, _ := NewSecret()
	newSecret, _ := NewSecret()
	oldSK, oldPK, _ := NewSigningKey()
	newSK, newPK, _ := NewSigningKey()
	now := time.Unix(testTS, 0)
	clock := WithClock(func() time.Time { return now })
	sign := func(keys ...string) http.Header {
		var entries []string
		for _, k := range keys {
			s, err := NewSigner(k)
			if err != nil {
				t.Fatal(err)
			}
			entries = append(entries, s.Sign(testMsgID, testTS, testBody))
		}
		h := http.Header{}
		h.Set(HeaderID, testMsgID)
		h.Set(HeaderTimestamp, strconv.FormatInt(testTS, 10))
		h.Set(HeaderSignature, strings.Join(entries, " "))
		return h
	}
	type check struct {
		name     string
		verifier *Verifier
		header   http.Header
		ok       bool
	}
	both := mustVerifier(t, newSecret, WithKeys(oldSecret), clock)
	bothPK := mustVerifier(t, newPK, WithKeys(oldPK), clock)
	mixed := mustVerifier(t, oldSecret, WithKeys(newPK), clock)
	for _, c := range []check{
		{"old secret alone, old signs", mustVerifier(t, oldSecret, clock), sign(oldSecret), true},
		{"old secret alone, new signs", mustVerifier(t, oldSecret, clock), sign(newSecret), false},
		{"old secret alone, both sign", mustVerifier(t, oldSecret, clock), sign(newSecret, oldSecret), true},
		{"new secret alone, old signs", mustVerifier(t, newSecret, clock), sign(oldSecret), false},
		{"new secret alone, both sign", mustVerifier(t, newSecret, clock), sign(newSecret, oldSecret), true},
		{"both secrets, old signs", both, sign(oldSecret), true},
		{"both secrets, new signs", both, sign(newSecret), true},
		{"both secrets, a third signs", both, sign(testSecret), false},
		{"both public keys, old signs", bothPK, sign(oldSK), true},
		{"both public keys, new signs", bothPK, sign(newSK), true},
		{"both public keys, hmac signs", bothPK, sign(oldSecret), false},
		{"new public key alone, old signs", mustVerifier(t, newPK, clock), sign(oldSK), false},
		{"secret and public key, v1a signs", mixed, sign(newSK), true},
		{"secret and public key, v1 signs", mixed, sign(oldSecret), true},
	} {
		_, err := c.verifier.Verify(c.header, testBody)
		if c.ok && err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if !c.ok && !errors.Is(err, ErrNoMatchingSignature) {
			t.Errorf("%s: %v, want ErrNoMatchingSignature", c.name, err)
		}
	}
	_, err := both.Verify(sign(testSecret), testBody)
	if err == nil || !strings.Contains(err.Error(), "any of these 2 secrets") {
		t.Errorf("error does not say how many keys were tried: %v", err)
	}
}

// TestVerifierBoundsEd25519Work: a header stuffed with v1a entries costs at
// most maxAsymmetricEntries checks; a valid entry past them is not looked at.
func TestVerifierBoundsEd25519Work(t *testing.T) {
	t.Parallel()
	s, _ := NewSigner(vectorSigningKey)
	good := s.Sign(testMsgID, testTS, testBody)
	junk := "v1a," + strings.Repeat("A", 86) + "=="
	header := strings.Repeat(junk+" ", maxAsymmetricEntries) + good
	err := VerifyStandard(vectorPublicKey, testMsgID, strconv.FormatInt(testTS, 10), header, testBody, time.Unix(testTS, 0), DefaultTolerance)
	if !errors.Is(err, ErrNoMatchingSignature) {
		t.Fatalf("entry past the bound: %v", err)
	}
	header = strings.Repeat(junk+" ", maxAsymmetricEntries-1) + good
	if err := VerifyStandard(vectorPublicKey, testMsgID, strconv.FormatInt(testTS, 10), header, testBody, time.Unix(testTS, 0), DefaultTolerance); err != nil {
		t.Fatalf("entry within the bound: %v", err)
	}
}

func TestKworkVerifierSeveralSecrets(t *testing.T) {
	t.Parallel()
	now := time.Unix(testTS, 0)
	v, err := NewKworkVerifier("kw_new", WithKeys("kw_old"), WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	for secret, ok := range map[string]bool{"kw_new": true, "kw_old": true, "kw_other": false} {
		h := http.Header{HeaderKworkSignature: {SignKwork(secret, testTS, testBody)}}
		_, err := v.Verify(h, testBody)
		if ok != (err == nil) {
			t.Errorf("signed with %s: %v", secret, err)
		}
	}
	if _, err := NewKworkVerifier("kw_new", WithKeys("")); !errors.Is(err, ErrInvalidSecret) {
		t.Errorf("empty extra secret: %v", err)
	}
}

func BenchmarkSignEd25519(b *testing.B) {
	s, err := NewSigner(vectorSigningKey)
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(strings.Repeat("a", 1024))
	buf := make([]byte, 0, 96)
	b.ReportAllocs()
	for b.Loop() {
		buf = s.AppendSign(buf[:0], testMsgID, testTS, body)
	}
}

func BenchmarkVerifyEd25519(b *testing.B) {
	s, _ := NewSigner(vectorSigningKey)
	keys, _ := newStandardKeys([]string{vectorPublicKey})
	body := []byte(strings.Repeat("a", 1024))
	sig := s.Sign(testMsgID, testTS, body)
	now := time.Unix(testTS, 0)
	b.ReportAllocs()
	for b.Loop() {
		if err := verifyStandard(&keys, testMsgID, "1614265330", sig, body, now, DefaultTolerance); err != nil {
			b.Fatal(err)
		}
	}
}

func encodeStd(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
