package webhook

import (
	"crypto/hmac"
	"fmt"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Verifier checks Standard Webhooks requests signed with one secret.
// It is safe for concurrent use.
type Verifier struct {
	signer *Signer
	cfg    verifierConfig
}

// NewVerifier decodes secret ("whsec_" + base64, prefix optional) once.
func NewVerifier(secret string, opts ...VerifierOption) (*Verifier, error) {
	signer, err := NewSigner(secret)
	if err != nil {
		return nil, err
	}
	cfg, err := newVerifierConfig(opts)
	if err != nil {
		return nil, err
	}
	return &Verifier{signer: signer, cfg: cfg}, nil
}

// Verify checks the webhook-id, webhook-timestamp and webhook-signature
// headers against the raw body, in this order: headers present, timestamp
// parses, timestamp within tolerance, some v1 signature matches. Then it
// decodes the body into an Event (ErrMalformedBody if it is not a JSON
// object). The svix-id, svix-timestamp and svix-signature headers are
// accepted in place of missing webhook-* ones.
func (v *Verifier) Verify(h http.Header, body []byte) (Event, error) {
	msgID := headerOr(h, HeaderID, "svix-id")
	timestamp := headerOr(h, HeaderTimestamp, "svix-timestamp")
	sigHeader := headerOr(h, HeaderSignature, "svix-signature")
	err := verifyStandard(v.signer, msgID, timestamp, sigHeader, body, v.cfg.now(), v.cfg.tolerance)
	if err != nil {
		return Event{}, err
	}
	return parseEvent(body)
}

// VerifyStandard checks one Standard Webhooks message at the given time
// without parsing the body; an empty msgID, timestamp or sigHeader counts as
// a missing header. Keep a Verifier instead when verifying many messages.
func VerifyStandard(secret, msgID, timestamp, sigHeader string, body []byte, now time.Time, tolerance time.Duration) error {
	signer, err := NewSigner(secret)
	if err != nil {
		return err
	}
	return verifyStandard(signer, msgID, timestamp, sigHeader, body, now, tolerance)
}

func verifyStandard(s *Signer, msgID, timestamp, sigHeader string, body []byte, now time.Time, tolerance time.Duration) error {
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
	if !s.matches(sigHeader, msgID, ts, body) {
		return fmt.Errorf("%w: %s has no v1 entry made with this secret", ErrNoMatchingSignature, HeaderSignature)
	}
	return nil
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
