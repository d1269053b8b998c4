package webhook

import (
	"crypto/hmac"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// KworkVerifier checks kwork requests (X-Kwork-Signature) signed with one
// of its secrets. It is safe for concurrent use.
type KworkVerifier struct {
	signers []*KworkSigner
	cfg     verifierConfig
}

// NewKworkVerifier keys a verifier with secret's bytes as given, and with
// any secrets given WithKeys (a receiver holding the old and the new secret
// while it switches over).
func NewKworkVerifier(secret string, opts ...VerifierOption) (*KworkVerifier, error) {
	cfg, err := newVerifierConfig(opts)
	if err != nil {
		return nil, err
	}
	v := &KworkVerifier{cfg: cfg}
	for _, s := range append([]string{secret}, cfg.more...) {
		signer, err := NewKworkSigner(s)
		if err != nil {
			return nil, err
		}
		v.signers = append(v.signers, signer)
	}
	return v, nil
}

// Verify checks the X-Kwork-Signature header against the raw body, then
// decodes the body into an Event.
func (v *KworkVerifier) Verify(h http.Header, body []byte) (Event, error) {
	sigHeader := h.Get(HeaderKworkSignature)
	if sigHeader == "" {
		return Event{}, fmt.Errorf("%w: %s", ErrMissingHeader, HeaderKworkSignature)
	}
	if err := verifyKwork(v.signers, body, sigHeader, v.cfg.now(), v.cfg.tolerance); err != nil {
		return Event{}, err
	}
	return parseEvent(body)
}

// VerifyWebhook verifies a kwork delivery the way kwork's reference
// verifyPlainHMAC does (same accepted set, for any non-empty secret) and
// returns the decoded event. sigHeader is the X-Kwork-Signature value; body
// must be the raw, unparsed request body.
func VerifyWebhook(body []byte, sigHeader, secret string, tolerance time.Duration) (Event, error) {
	return VerifyWebhookAt(body, sigHeader, secret, tolerance, time.Now())
}

// VerifyWebhookAt is VerifyWebhook with the clock given.
func VerifyWebhookAt(body []byte, sigHeader, secret string, tolerance time.Duration, now time.Time) (Event, error) {
	signer, err := NewKworkSigner(secret)
	if err != nil {
		return Event{}, err
	}
	if sigHeader == "" {
		return Event{}, fmt.Errorf("%w: %s", ErrMissingHeader, HeaderKworkSignature)
	}
	if err := verifyKwork([]*KworkSigner{signer}, body, sigHeader, now, tolerance); err != nil {
		return Event{}, err
	}
	return parseEvent(body)
}

// verifyKwork follows kwork's reference verifier: take t and v1 from the header, reject when
// |now - t| > tolerance, then compare hex HMAC(secret, "<t>.<body>") with v1
// in constant time. Structural problems are reported first so the error says
// what is wrong; the set of accepted inputs is the reference's.
func verifyKwork(signers []*KworkSigner, body []byte, sigHeader string, now time.Time, tolerance time.Duration) error {
	sig := parseKworkHeader(sigHeader)
	switch {
	case !sig.hasT:
		return fmt.Errorf("%w: %s has no t= part", ErrMalformedHeader, HeaderKworkSignature)
	case !sig.hasV1:
		return fmt.Errorf("%w: %s has no v1= part", ErrMalformedHeader, HeaderKworkSignature)
	}
	ts, err := strconv.ParseInt(sig.t, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s t=%s is not a Unix time in seconds", ErrMalformedHeader, HeaderKworkSignature, quoteShort(sig.t))
	}
	if err := checkTimestamp(HeaderKworkSignature+" t", ts, now, tolerance); err != nil {
		return err
	}
	for _, s := range signers {
		var buf [64]byte
		want := s.appendHex(buf[:0], []byte(sig.t), body)
		var got [64]byte
		if len(sig.v1) == len(want) && hmac.Equal(got[:copy(got[:], sig.v1)], want) {
			return nil
		}
	}
	if len(signers) > 1 {
		return fmt.Errorf("%w: %s v1 was not made with any of these %d secrets", ErrNoMatchingSignature, HeaderKworkSignature, len(signers))
	}
	return fmt.Errorf("%w: %s v1 was not made with this secret", ErrNoMatchingSignature, HeaderKworkSignature)
}

// kworkHeader is a parsed X-Kwork-Signature value.
type kworkHeader struct {
	t, v1       string
	hasT, hasV1 bool
}

// parseKworkHeader splits "t=<ts>,v1=<hex>" exactly like the reference verifier: parts are
// separated by commas, each is key=value split at the first '=', parts without
// '=' and unknown keys are ignored, and a repeated key keeps its last value.
// Nothing is trimmed.
func parseKworkHeader(header string) kworkHeader {
	var h kworkHeader
	for part := range strings.SplitSeq(header, ",") {
		key, value, ok := strings.Cut(part, "=")
		if !ok {
			continue
		}
		switch key {
		case "t":
			h.t, h.hasT = value, true
		case "v1":
			h.v1, h.hasV1 = value, true
		}
	}
	return h
}
