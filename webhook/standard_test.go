package webhook

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	testMsgID  = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	testTS     = int64(1614265330)
	testSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

var testBody = []byte(`{"test": 2432232314}`)

func TestNewSecret(t *testing.T) {
	t.Parallel()
	a, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatalf("two secrets are equal: %s", a)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(a, SecretPrefix))
	if !strings.HasPrefix(a, SecretPrefix) || err != nil || len(key) != 32 {
		t.Fatalf("NewSecret = %q: want whsec_ + base64(32 bytes) (decode err %v, %d bytes)", a, err, len(key))
	}
	signer, err := NewSigner(a)
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyStandard(a, "msg_1", "100", signer.Sign("msg_1", 100, testBody), testBody, time.Unix(100, 0), 0); err != nil {
		t.Fatalf("round trip with a new secret: %v", err)
	}
}

func TestNewSignerRejectsBadSecrets(t *testing.T) {
	t.Parallel()
	for _, secret := range []string{"", "whsec_", "whsec_not base64!", "whpk_AAAA", "whsk_AAAA", "whsk_not base64!"} {
		if _, err := NewSigner(secret); !errors.Is(err, ErrInvalidSecret) {
			t.Errorf("NewSigner(%q) = %v, want ErrInvalidSecret", secret, err)
		}
		if _, err := NewVerifier(secret); !errors.Is(err, ErrInvalidSecret) {
			t.Errorf("NewVerifier(%q) = %v, want ErrInvalidSecret", secret, err)
		}
	}
}

func TestSignerAppendSign(t *testing.T) {
	// Not parallel: testing.AllocsPerRun counts every goroutine's allocations.
	s, err := NewSigner(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	got := s.AppendSign([]byte("v1,other "), testMsgID, testTS, testBody)
	if want := "v1,other " + testSig; string(got) != want {
		t.Fatalf("AppendSign = %s, want %s", got, want)
	}
	if raceEnabled {
		t.Skip("allocation counts are meaningless under -race (sync.Pool drops items)")
	}
	buf := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(100, func() { buf = s.AppendSign(buf[:0], testMsgID, testTS, testBody) }); n != 0 {
		t.Errorf("AppendSign allocates %v times, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = s.Sign(testMsgID, testTS, testBody) }); n > 1 {
		t.Errorf("Sign allocates %v times, want at most 1", n)
	}
}

// TestSignerConcurrent shares one Signer between goroutines (run with -race).
func TestSignerConcurrent(t *testing.T) {
	t.Parallel()
	s, err := NewSigner(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				if got := s.Sign(testMsgID, testTS, testBody); got != testSig {
					t.Errorf("Sign = %s, want %s", got, testSig)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestVerifierOptions(t *testing.T) {
	t.Parallel()
	signed := time.Unix(testTS, 0)
	h := http.Header{}
	h.Set(HeaderID, testMsgID)
	h.Set(HeaderTimestamp, "1614265330")
	h.Set(HeaderSignature, testSig)
	tests := []struct {
		name string
		opts []VerifierOption
		want error
	}{
		{"default tolerance accepts 300s", []VerifierOption{WithClock(func() time.Time { return signed.Add(300 * time.Second) })}, nil},
		{"default tolerance rejects 301s", []VerifierOption{WithClock(func() time.Time { return signed.Add(301 * time.Second) })}, ErrTimestampTooOld},
		{"short tolerance", []VerifierOption{WithTolerance(10 * time.Second), WithClock(func() time.Time { return signed.Add(11 * time.Second) })}, ErrTimestampTooOld},
		{"short tolerance future", []VerifierOption{WithTolerance(10 * time.Second), WithClock(func() time.Time { return signed.Add(-11 * time.Second) })}, ErrTimestampTooNew},
		{"sub-second past tolerance", []VerifierOption{WithClock(func() time.Time { return signed.Add(300*time.Second + time.Millisecond) })}, ErrTimestampTooOld},
		{"zero tolerance same second", []VerifierOption{WithTolerance(0), WithClock(func() time.Time { return signed })}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := NewVerifier(testSecret, tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			_, err = v.Verify(h, testBody)
			checkErr(t, "Verify", err, tt.want)
		})
	}
	if _, err := NewVerifier(testSecret, WithTolerance(-time.Second)); err == nil {
		t.Error("NewVerifier with a negative tolerance: want an error")
	}
}

func TestVerifierReturnsEvent(t *testing.T) {
	t.Parallel()
	s, _ := NewSigner(testSecret)
	now := time.Date(2026, 10, 28, 12, 0, 0, 0, time.UTC)
	body := []byte(`{"id":"evt_1","type":"post.published","subject":"posts/7","occurred_at":"2026-10-28T11:59:00Z","data":{"published":true}}`)
	h := http.Header{}
	h.Set(HeaderID, "msg_1")
	h.Set(HeaderTimestamp, "1793188800")
	h.Set(HeaderSignature, "v1,bogus "+s.Sign("msg_1", now.Unix(), body))
	v, err := NewVerifier(testSecret, WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := v.Verify(h, body)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if ev.ID != "evt_1" || ev.Type != "post.published" || ev.Subject != "posts/7" ||
		!ev.OccurredAt.Equal(now.Add(-time.Minute)) || string(ev.Data) != `{"published":true}` {
		t.Errorf("Verify event = %+v", ev)
	}
}

func TestVerifierSvixHeaders(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	h.Set("svix-id", testMsgID)
	h.Set("svix-timestamp", "1614265330")
	h.Set("svix-signature", testSig)
	v, _ := NewVerifier(testSecret, WithClock(func() time.Time { return time.Unix(testTS, 0) }))
	if _, err := v.Verify(h, testBody); err != nil {
		t.Fatalf("Verify with svix-* headers: %v", err)
	}
}

func TestParseEvent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body string
		ok   bool
	}{
		{`{"id":"evt_1","type":"app.installed","createdAt":"2026-10-28T12:00:00Z","apiVersion":"2026-10-28","tenant":"acme_corp","environment":"live","app":"shop-sync","data":{}}`, true},
		{` {"test": 1}`, true},
		{``, false},
		{`null`, false},
		{`[{"id":"x"}]`, false},
		{`"evt"`, false},
		{`{"id":1}`, false},
		{`{"createdAt":"yesterday"}`, false},
		{`{"id":"x"`, false},
	}
	for _, tt := range tests {
		_, err := parseEvent([]byte(tt.body))
		if tt.ok && err != nil {
			t.Errorf("parseEvent(%s): %v", tt.body, err)
		}
		if !tt.ok && !errors.Is(err, ErrMalformedBody) {
			t.Errorf("parseEvent(%s) = %v, want ErrMalformedBody", tt.body, err)
		}
	}
}

func BenchmarkSign(b *testing.B) {
	s, err := NewSigner(testSecret)
	if err != nil {
		b.Fatal(err)
	}
	body := bytes.Repeat([]byte("a"), 1024)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		_ = s.Sign(testMsgID, testTS, body)
	}
}

func BenchmarkAppendSign(b *testing.B) {
	s, err := NewSigner(testSecret)
	if err != nil {
		b.Fatal(err)
	}
	body := bytes.Repeat([]byte("a"), 1024)
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		buf = s.AppendSign(buf[:0], testMsgID, testTS, body)
	}
}

func BenchmarkVerify(b *testing.B) {
	s, _ := NewSigner(testSecret)
	keys, _ := newStandardKeys([]string{testSecret})
	body := bytes.Repeat([]byte("a"), 1024)
	sig := s.Sign(testMsgID, testTS, body)
	now := time.Unix(testTS, 0)
	b.ReportAllocs()
	for b.Loop() {
		if err := verifyStandard(&keys, testMsgID, "1614265330", sig, body, now, DefaultTolerance); err != nil {
			b.Fatal(err)
		}
	}
}
