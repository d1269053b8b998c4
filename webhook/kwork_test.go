package webhook

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/kworkref"
)

const kworkSecret = "kw_secret_3f9a"

var kworkBody = []byte(`{"id":"evt_01JBCDEF0123456789ABCDEF01","type":"app.installed","createdAt":"2026-10-28T12:00:00Z","apiVersion":"2026-10-28","tenant":"acme_corp","environment":"live","app":"shop-sync","data":{"version":"1.0.0","scopes":["tables.base:read","platform:ping"]}}`)

// hexOf returns the v1 part of a kwork header.
func hexOf(header string) string {
	_, v1, _ := strings.Cut(header, ",v1=")
	return v1
}

func TestSignKworkAgainstSeedReference(t *testing.T) {
	t.Parallel()
	now := time.Now().Unix()
	valid := SignKwork(kworkSecret, now, kworkBody)
	ts := strconv.FormatInt(now, 10)
	flipped := []byte(hexOf(valid))
	flipped[0] ^= 1
	tests := []struct {
		name   string
		body   []byte
		header string
		secret string
		want   error
	}{
		{"valid", kworkBody, valid, kworkSecret, nil},
		{"parts reordered", kworkBody, "v1=" + hexOf(valid) + ",t=" + ts, kworkSecret, nil},
		{"unknown part ignored", kworkBody, valid + ",v0=dead", kworkSecret, nil},
		{"repeated v1: last wins (valid last)", kworkBody, "t=" + ts + ",v1=00,v1=" + hexOf(valid), kworkSecret, nil},
		{"repeated v1: last wins (valid first)", kworkBody, valid + ",v1=00", kworkSecret, ErrNoMatchingSignature},
		{"tampered body", append(bytes.Clone(kworkBody[:len(kworkBody)-2]), ` }`...), valid, kworkSecret, ErrNoMatchingSignature},
		{"tampered timestamp", kworkBody, "t=" + strconv.FormatInt(now-1, 10) + ",v1=" + hexOf(valid), kworkSecret, ErrNoMatchingSignature},
		{"tampered signature", kworkBody, "t=" + ts + ",v1=" + string(flipped), kworkSecret, ErrNoMatchingSignature},
		{"uppercase hex", kworkBody, "t=" + ts + ",v1=" + strings.ToUpper(hexOf(valid)), kworkSecret, ErrNoMatchingSignature},
		{"wrong secret", kworkBody, valid, "kw_other", ErrNoMatchingSignature},
		{"expired", kworkBody, SignKwork(kworkSecret, now-301, kworkBody), kworkSecret, ErrTimestampTooOld},
		{"long expired", kworkBody, SignKwork(kworkSecret, now-86400, kworkBody), kworkSecret, ErrTimestampTooOld},
		// (30 s past the tolerance: a loaded test run may take a second or more
		// between reading now and verifying, which a 1 s margin did not survive.)
		{"too new", kworkBody, SignKwork(kworkSecret, now+330, kworkBody), kworkSecret, ErrTimestampTooNew},
		{"empty header", kworkBody, "", kworkSecret, ErrMissingHeader},
		{"no t", kworkBody, "v1=" + hexOf(valid), kworkSecret, ErrMalformedHeader},
		{"no v1", kworkBody, "t=" + ts, kworkSecret, ErrMalformedHeader},
		{"t not a number", kworkBody, "t=now,v1=" + hexOf(valid), kworkSecret, ErrMalformedHeader},
		{"space after comma", kworkBody, "t=" + ts + ", v1=" + hexOf(valid), kworkSecret, ErrMalformedHeader},
		{"empty v1", kworkBody, "t=" + ts + ",v1=", kworkSecret, ErrNoMatchingSignature},
		{"signed but not an event", []byte(`[1,2]`), SignKwork(kworkSecret, now, []byte(`[1,2]`)), kworkSecret, ErrMalformedBody},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ev, err := VerifyWebhook(tt.body, tt.header, tt.secret, 300*time.Second)
			checkErr(t, "VerifyWebhook", err, tt.want)
			// The reference has no notion of an event: a valid signature over a
			// non-event body is accepted there and ErrMalformedBody here.
			refWant := tt.want == nil || errors.Is(tt.want, ErrMalformedBody)
			if ref := kworkref.VerifyPlainHMAC(tt.body, tt.header, tt.secret, 300*time.Second); ref != refWant {
				t.Errorf("seed reference verifyPlainHMAC = %v, want %v", ref, refWant)
			}
			if tt.want == nil && (ev.ID != "evt_01JBCDEF0123456789ABCDEF01" || ev.Tenant != "acme_corp" ||
				ev.APIVersion != "2026-10-28" || ev.Environment != "live" || ev.App != "shop-sync" ||
				!ev.CreatedAt.Equal(time.Date(2026, 10, 28, 12, 0, 0, 0, time.UTC))) {
				t.Errorf("event = %+v", ev)
			}
		})
	}
}

func TestVerifyWebhookAtBoundaries(t *testing.T) {
	t.Parallel()
	const ts = int64(1793188800)
	header := SignKwork(kworkSecret, ts, kworkBody)
	signed := time.Unix(ts, 0)
	tests := []struct {
		name string
		now  time.Time
		want error
	}{
		{"same second", signed, nil},
		{"exactly 300s old", signed.Add(300 * time.Second), nil},
		{"300s and 1ns old", signed.Add(300*time.Second + 1), ErrTimestampTooOld},
		{"exactly 300s early", signed.Add(-300 * time.Second), nil},
		{"300s and 1ns early", signed.Add(-300*time.Second - 1), ErrTimestampTooNew},
	}
	for _, tt := range tests {
		_, err := VerifyWebhookAt(kworkBody, header, kworkSecret, 300*time.Second, tt.now)
		checkErr(t, tt.name, err, tt.want)
		if ref := kworkref.VerifyPlainHMACAt(kworkBody, header, kworkSecret, 300*time.Second, tt.now); ref != (tt.want == nil) {
			t.Errorf("%s: reference = %v, want %v", tt.name, ref, tt.want == nil)
		}
	}
}

func TestKworkVerifier(t *testing.T) {
	t.Parallel()
	const ts = int64(1793188800)
	v, err := NewKworkVerifier(kworkSecret, WithClock(func() time.Time { return time.Unix(ts+10, 0) }), WithTolerance(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	if _, err := v.Verify(h, kworkBody); !errors.Is(err, ErrMissingHeader) {
		t.Errorf("no header: %v, want ErrMissingHeader", err)
	}
	h.Set(HeaderKworkSignature, SignKwork(kworkSecret, ts, kworkBody))
	if _, err := v.Verify(h, kworkBody); !errors.Is(err, ErrTimestampTooOld) {
		t.Errorf("10s old with 5s tolerance: %v, want ErrTimestampTooOld", err)
	}
	h.Set(HeaderKworkSignature, SignKwork(kworkSecret, ts+8, kworkBody))
	if ev, err := v.Verify(h, kworkBody); err != nil || ev.Type != "app.installed" {
		t.Errorf("valid: %+v, %v", ev, err)
	}
	if _, err := NewKworkVerifier(""); !errors.Is(err, ErrInvalidSecret) {
		t.Errorf("empty secret: %v, want ErrInvalidSecret", err)
	}
	if _, err := VerifyWebhook(kworkBody, h.Get(HeaderKworkSignature), "", time.Hour); !errors.Is(err, ErrInvalidSecret) {
		t.Errorf("VerifyWebhook with an empty secret: %v, want ErrInvalidSecret", err)
	}
}

func TestKworkSignerAllocations(t *testing.T) {
	// Not parallel: testing.AllocsPerRun counts every goroutine's allocations.
	s, err := NewKworkSigner(kworkSecret)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Sign(1793188800, kworkBody), SignKwork(kworkSecret, 1793188800, kworkBody); got != want {
		t.Fatalf("Sign = %s, SignKwork = %s", got, want)
	}
	if raceEnabled {
		t.Skip("allocation counts are meaningless under -race (sync.Pool drops items)")
	}
	buf := make([]byte, 0, 96)
	if n := testing.AllocsPerRun(100, func() { buf = s.AppendSign(buf[:0], 1793188800, kworkBody) }); n != 0 {
		t.Errorf("AppendSign allocates %v times, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = s.Sign(1793188800, kworkBody) }); n > 1 {
		t.Errorf("Sign allocates %v times, want at most 1", n)
	}
}

func BenchmarkKworkSign(b *testing.B) {
	s, err := NewKworkSigner(kworkSecret)
	if err != nil {
		b.Fatal(err)
	}
	body := bytes.Repeat([]byte("a"), 1024)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		_ = s.Sign(1793188800, body)
	}
}

// TestHeaderNames: the headers are named as the profiles put them on the
// wire (a receiver looks them up by these names, not by our constants).
func TestHeaderNames(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ got, want string }{
		{HeaderID, "webhook-id"},
		{HeaderTimestamp, "webhook-timestamp"},
		{HeaderSignature, "webhook-signature"},
		{HeaderKworkSignature, "X-Kwork-Signature"},
		{HeaderKworkEvent, "X-Kwork-Event"},
		{HeaderKworkDelivery, "X-Kwork-Delivery"},
	} {
		if c.got != c.want {
			t.Errorf("header %q, want %q", c.got, c.want)
		}
	}
}
