package endpoint

import (
	"net/http"
	"sort"
	"strings"

	"github.com/hookd/hookd/internal/apperr"
)

// Controls are an endpoint's optional delivery controls. The zero value
// changes nothing.
type Controls struct {
	// Headers are sent with every attempt (names canonical, at most
	// MaxHeaders; reserved names refused, see CheckHeaders). Plain
	// configuration, stored and shown as is; the audit log records which
	// headers changed, never their values (a receiver's credential may ride
	// in one).
	Headers map[string]string `json:"headers" audit:"secret"`
	// RateLimit is the most deliveries per second hookd sends to the
	// endpoint, across every process (0: no limit).
	RateLimit int `json:"rate_limit"`
	// Ordered delivers in publish order, one at a time: a failing delivery
	// holds back the ones after it until it succeeds or is discarded.
	Ordered bool `json:"ordered"`
	// TraceContext sends the W3C trace context (traceparent, tracestate)
	// of the attempt's hookd.deliver span with every attempt, so the
	// receiver's spans join hookd's trace. Only while tracing is on: with
	// tracing off there is no span, and nothing is sent.
	TraceContext bool `json:"trace_context"`
	// Developer marks a kwork app's developer subscription: the one its
	// profile's lifecycle events (app.*) go to, listed or not; no other
	// subscription gets them. At most one per owner, and only where the
	// profile has such events (profile.Profile.DeveloperSubscription).
	Developer bool `json:"developer"`
}

// MaxHeaders bounds an endpoint's custom headers; MaxRateLimit its rate.
const (
	MaxHeaders   = 20
	MaxRateLimit = 10000
)

// hopByHop are the headers that describe one connection, not the request
// (RFC 9110 §7.6.1), plus the framing ones a proxy owns.
var hopByHop = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Proxy-Authenticate": true,
	"Proxy-Authorization": true, "Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
}

// reservedHeader says why name (canonical) may not be set by an owner, or "".
func reservedHeader(name string) string {
	switch {
	case strings.HasPrefix(name, "Webhook-"):
		return "webhook-* headers carry the Standard Webhooks signature"
	case strings.HasPrefix(name, "X-Kwork-"):
		return "X-Kwork-* headers carry the kwork signature"
	case name == "Content-Type" || name == "Content-Length" || name == "Host" || name == "User-Agent":
		return "hookd sets it"
	case hopByHop[name]:
		return "it is a hop-by-hop header"
	}
	return ""
}

// CheckHeaders validates custom headers and returns them with canonical
// names. Every refused name is named in one error.
func CheckHeaders(h map[string]string) (map[string]string, error) {
	if len(h) > MaxHeaders {
		return nil, apperr.New(apperr.Invalid, "headers has %d entries; at most %d", len(h), MaxHeaders)
	}
	out := make(map[string]string, len(h))
	var refused []string
	for name, value := range h {
		if !validName(name) {
			return nil, apperr.New(apperr.Invalid, "header name %q is not valid: use letters, digits and !#$%%&'*+-.^_`|~ only", name)
		}
		if !validValue(value) {
			return nil, apperr.New(apperr.Invalid, "header %q has a control character in its value; values are printable text (tabs allowed)", name)
		}
		if len(value) > 4096 {
			return nil, apperr.New(apperr.Invalid, "header %q is %d bytes; at most 4096", name, len(value))
		}
		c := http.CanonicalHeaderKey(name)
		if why := reservedHeader(c); why != "" {
			refused = append(refused, c+" ("+why+")")
			continue
		}
		if _, dup := out[c]; dup {
			return nil, apperr.New(apperr.Invalid, "header %q is given twice (names are case-insensitive)", c)
		}
		out[c] = strings.TrimSpace(value)
	}
	if len(refused) > 0 {
		sort.Strings(refused)
		return nil, apperr.New(apperr.Invalid, "headers may not set reserved names: %s", strings.Join(refused, ", "))
	}
	return out, nil
}

// validName: an RFC 9110 token.
func validName(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// validValue: no control characters but horizontal tab (so no CR/LF).
func validValue(s string) bool {
	for _, r := range s {
		if r < 0x20 && r != '\t' || r == 0x7f {
			return false
		}
	}
	return true
}

// CheckRateLimit validates a rate limit (0: none).
func CheckRateLimit(n int) error {
	if n < 0 || n > MaxRateLimit {
		return apperr.New(apperr.Invalid, "rate_limit must be between 1 and %d deliveries per second (0: no limit)", MaxRateLimit)
	}
	return nil
}
