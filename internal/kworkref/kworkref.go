// Package kworkref holds the kwork profile's reference receiver check, as
// the kwork profile's specification ("原生 HMAC 验签参考实现"; docs/design.md
// cites it) tells developers to write it. Tests hold hookd's signatures and the SDK's
// verifier to it; it is the one copy of that text in this module.
package kworkref

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// VerifyPlainHMAC is the kwork specification's verifyPlainHMAC: it reports whether
// sigHeader ("t=<unix>,v1=<hex>") signs body with secret and its timestamp
// is within tolerance of now.
func VerifyPlainHMAC(body []byte, sigHeader, secret string, tolerance time.Duration) bool {
	return VerifyPlainHMACAt(body, sigHeader, secret, tolerance, time.Now())
}

// VerifyPlainHMACAt is the kwork specification's verifyPlainHMAC, transcribed verbatim
// except that time.Since(x) reads now.Sub(x), for boundary and fuzz
// comparisons at a fixed clock.
func VerifyPlainHMACAt(body []byte, sigHeader, secret string, tolerance time.Duration, now time.Time) bool {
	var timestampStr, signature string
	for _, part := range strings.Split(sigHeader, ",") {
		kv := strings.SplitN(part, "=", 2)
		if len(kv) == 2 {
			switch kv[0] {
			case "t":
				timestampStr = kv[1]
			case "v1":
				signature = kv[1]
			}
		}
	}
	ts, err := strconv.ParseInt(timestampStr, 10, 64)
	if err != nil || now.Sub(time.Unix(ts, 0)).Abs() > tolerance {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(timestampStr + "."))
	mac.Write(body)
	expected := hex.EncodeToString(mac.Sum(nil))
	return hmac.Equal([]byte(expected), []byte(signature))
}
