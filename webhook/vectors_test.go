package webhook

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// vectorFile is testdata/standard-webhooks-vectors.json, a copy of
// shared/testdata (see its "fields" section for what each field means).
type vectorFile struct {
	Cases             []vector `json:"cases"`
	ExtraCases        []vector `json:"extra_cases"`
	LargePayloadCases []vector `json:"large_payload_cases"`
	AsymmetricCases   []vector `json:"asymmetric_cases"`
}

type vector struct {
	Name          string  `json:"name"`
	Secret        string  `json:"secret"`
	PublicKey     string  `json:"public_key"`
	SecretKey     string  `json:"secret_key"`
	MsgID         *string `json:"msg_id"`
	Timestamp     *string `json:"timestamp"`
	Payload       string  `json:"payload"`
	PayloadRepeat *struct {
		Char  string `json:"char"`
		Count int    `json:"count"`
	} `json:"payload_repeat"`
	SignatureHeader *string `json:"signature_header"`
	Now             int64   `json:"now"`
	Expect          string  `json:"expect"`
}

func loadVectors(tb testing.TB) vectorFile {
	tb.Helper()
	raw, err := os.ReadFile("testdata/standard-webhooks-vectors.json")
	if err != nil {
		tb.Fatalf("read vectors: %v", err)
	}
	var f vectorFile
	if err := json.Unmarshal(raw, &f); err != nil {
		tb.Fatalf("decode vectors: %v", err)
	}
	if len(f.Cases) == 0 || len(f.AsymmetricCases) == 0 {
		tb.Fatalf("vectors file has no cases")
	}
	return f
}

func (v vector) body() []byte {
	if v.PayloadRepeat != nil {
		return []byte(strings.Repeat(v.PayloadRepeat.Char, v.PayloadRepeat.Count))
	}
	return []byte(v.Payload)
}

func (v vector) header() http.Header {
	h := http.Header{}
	for name, value := range map[string]*string{
		HeaderID: v.MsgID, HeaderTimestamp: v.Timestamp, HeaderSignature: v.SignatureHeader,
	} {
		if value != nil {
			h.Set(name, *value)
		}
	}
	return h
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// expectedError maps a vector's expect to the sentinel it must produce.
func expectedError(tb testing.TB, expect string) error {
	tb.Helper()
	switch expect {
	case "valid":
		return nil
	case "invalid_signature":
		return ErrNoMatchingSignature
	case "timestamp_too_old":
		return ErrTimestampTooOld
	case "timestamp_too_new":
		return ErrTimestampTooNew
	case "missing_header":
		return ErrMissingHeader
	case "invalid_header": // extra_cases only: a timestamp that is not an integer
		return ErrMalformedHeader
	}
	tb.Fatalf("unknown expect %q: extend expectedError", expect)
	return nil
}

func checkErr(t *testing.T, what string, got, want error) {
	t.Helper()
	if want == nil && got != nil {
		t.Errorf("%s: got %v, want valid", what, got)
	}
	if want != nil && !errors.Is(got, want) {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}

func isJSONObject(body []byte) bool {
	return json.Valid(body) && strings.HasPrefix(strings.TrimSpace(string(body)), "{")
}

func TestStandardVectors(t *testing.T) {
	t.Parallel()
	f := loadVectors(t)
	all := append(append(append([]vector{}, f.Cases...), f.ExtraCases...), f.LargePayloadCases...)
	for _, c := range all {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			want := expectedError(t, c.Expect)
			now := time.Unix(c.Now, 0)
			body := c.body()

			err := VerifyStandard(c.Secret, deref(c.MsgID), deref(c.Timestamp), deref(c.SignatureHeader), body, now, DefaultTolerance)
			checkErr(t, "VerifyStandard", err, want)

			v, err := NewVerifier(c.Secret, WithClock(func() time.Time { return now }))
			if err != nil {
				t.Fatalf("NewVerifier: %v", err)
			}
			_, err = v.Verify(c.header(), body)
			if want == nil && !isJSONObject(body) {
				// The signature is valid, but only a JSON object is an Event.
				want = ErrMalformedBody
			}
			checkErr(t, "Verifier.Verify", err, want)

			sig := deref(c.SignatureHeader)
			if c.Expect == "valid" && strings.HasPrefix(sig, "v1,") && !strings.Contains(sig, " ") {
				signer, err := NewSigner(c.Secret)
				if err != nil {
					t.Fatalf("NewSigner: %v", err)
				}
				ts, err := strconv.ParseInt(*c.Timestamp, 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				if got := signer.Sign(*c.MsgID, ts, body); got != sig {
					t.Errorf("Sign = %s, want %s", got, sig)
				}
			}
		})
	}
}

// TestStandardVectorsAsymmetric: every Ed25519 (v1a) case of the file holds
// for a verifier given the case's whpk_ public key, alone or next to an
// unrelated secret; a signer given the whsk_ key reproduces the signature
// (Ed25519 is deterministic); and a symmetric verifier never accepts a v1a
// entry while still honouring the check order.
func TestStandardVectorsAsymmetric(t *testing.T) {
	t.Parallel()
	f := loadVectors(t)
	symmetricSecret := f.Cases[0].Secret
	for _, c := range f.AsymmetricCases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			now := time.Unix(c.Now, 0)
			body := c.body()
			sig := deref(c.SignatureHeader)
			want := expectedError(t, c.Expect)

			err := VerifyStandard(c.PublicKey, deref(c.MsgID), deref(c.Timestamp), sig, body, now, DefaultTolerance)
			checkErr(t, "VerifyStandard(whpk_)", err, want)
			for name, v := range map[string]*Verifier{
				"public key alone":      mustVerifier(t, c.PublicKey, WithClock(func() time.Time { return now })),
				"secret and public key": mustVerifier(t, testSecret, WithKeys(c.PublicKey), WithClock(func() time.Time { return now })),
			} {
				_, err := v.Verify(c.header(), body)
				checkErr(t, "Verifier.Verify, "+name, err, want)
			}

			if c.Expect == "valid" {
				signer, err := NewSigner(c.SecretKey)
				if err != nil {
					t.Fatalf("NewSigner(whsk_): %v", err)
				}
				ts, _ := strconv.ParseInt(*c.Timestamp, 10, 64)
				got := signer.Sign(*c.MsgID, ts, body)
				if !strings.Contains(" "+sig+" ", " "+got+" ") {
					t.Errorf("Sign(whsk_) = %s, not in %s", got, sig)
				}
				if pk, err := PublicKeyOf(c.SecretKey); err != nil || pk != c.PublicKey {
					t.Errorf("PublicKeyOf = %s, %v; want %s", pk, err, c.PublicKey)
				}
			}

			// A symmetric verifier: v1a entries alone never pass.
			var v1a []string
			for entry := range strings.SplitSeq(sig, " ") {
				if strings.HasPrefix(entry, "v1a,") {
					v1a = append(v1a, entry)
				}
			}
			if len(v1a) > 0 {
				wantSym := ErrNoMatchingSignature
				if c.Expect == "timestamp_too_old" || c.Expect == "timestamp_too_new" {
					wantSym = want
				}
				err := VerifyStandard(symmetricSecret, deref(c.MsgID), deref(c.Timestamp), strings.Join(v1a, " "), body, now, DefaultTolerance)
				checkErr(t, "symmetric verifier, v1a entries only", err, wantSym)
			}
		})
	}
}

func mustVerifier(t *testing.T, key string, opts ...VerifierOption) *Verifier {
	t.Helper()
	v, err := NewVerifier(key, opts...)
	if err != nil {
		t.Fatalf("NewVerifier(%.10s…): %v", key, err)
	}
	return v
}
