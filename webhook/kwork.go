package webhook

import (
	"encoding/hex"
	"fmt"
	"strconv"
)

// Kwork header names.
const (
	HeaderKworkSignature = "X-Kwork-Signature"
	HeaderKworkEvent     = "X-Kwork-Event"
	HeaderKworkDelivery  = "X-Kwork-Delivery"
)

// KworkSigner signs kwork deliveries with one secret, used as its raw bytes.
// It is safe for concurrent use and is meant to be kept per subscription.
type KworkSigner struct {
	macs *macPool
}

// NewKworkSigner keys a signer with secret's bytes as given (no decoding).
// An empty secret is refused: it would let anyone forge signatures.
func NewKworkSigner(secret string) (*KworkSigner, error) {
	if secret == "" {
		return nil, fmt.Errorf("%w: empty", ErrInvalidSecret)
	}
	return &KworkSigner{macs: newMACPool([]byte(secret))}, nil
}

// Sign returns the X-Kwork-Signature header value for body signed at ts:
// "t=<ts>,v1=<lowercase hex HMAC-SHA256(secret, "<ts>.<body>")>".
func (s *KworkSigner) Sign(ts int64, body []byte) string {
	var buf [96]byte
	return string(s.AppendSign(buf[:0], ts, body))
}

// AppendSign appends the header value Sign would return to dst; with enough
// capacity in dst it does not allocate.
func (s *KworkSigner) AppendSign(dst []byte, ts int64, body []byte) []byte {
	dst = append(dst, "t="...)
	start := len(dst)
	dst = strconv.AppendInt(dst, ts, 10)
	dst = append(dst, ",v1="...)
	return s.appendHex(dst, dst[start:len(dst)-len(",v1=")], body)
}

// appendHex appends hex(HMAC(secret, tsText + "." + body)) to dst. tsText is
// the timestamp exactly as it appears in the header: kwork signs the
// text, not a reformatted integer.
func (s *KworkSigner) appendHex(dst, tsText, body []byte) []byte {
	st := s.macs.get()
	st.prefix = append(st.prefix, tsText...)
	st.prefix = append(st.prefix, '.')
	dst = hex.AppendEncode(dst, st.finish(body))
	s.macs.put(st)
	return dst
}

// SignKwork is the one-shot form of KworkSigner.Sign. It panics on an empty
// secret; keep a KworkSigner on hot paths.
func SignKwork(secret string, ts int64, body []byte) string {
	s, err := NewKworkSigner(secret)
	if err != nil {
		panic(err)
	}
	return s.Sign(ts, body)
}
