package egress

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// CheckURL validates a webhook endpoint URL when it is created or updated.
// The URL must be absolute http or https, name a host, carry no userinfo and
// have a valid port. A literal IP host must not be blocked unless a prefix in
// allow (see [Config.Allow]) contains it; numeric hosts in non-canonical forms that some resolvers accept
// (2130706433, 0x7f000001, 0177.0.0.1, 127.1, a trailing dot) are always
// refused. "localhost" and *.localhost names are refused unless loopback is
// allowed. Other hostnames are not resolved here: the connect-time check in
// [Client.Post] is the real guard.
//
// The error wraps [ErrInvalidURL] for a malformed URL and [ErrBlocked] for a
// refused destination.
func CheckURL(raw string, allow []netip.Prefix) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidURL, err)
	}
	if err := checkShape(u); err != nil {
		return err
	}
	return newPolicy(allow).checkHost(u.Hostname(), true)
}

// checkShape checks what every outbound URL must satisfy.
func checkShape(u *url.URL) error {
	switch {
	case u.Scheme == "":
		return fmt.Errorf("%w: not an absolute URL (want http:// or https://)", ErrInvalidURL)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%w: scheme %q is not http or https", ErrInvalidURL, u.Scheme)
	case u.Opaque != "":
		return fmt.Errorf("%w: want %s://host/path", ErrInvalidURL, u.Scheme)
	case u.User != nil:
		return fmt.Errorf("%w: must not contain userinfo (user:password@)", ErrInvalidURL)
	case u.Hostname() == "":
		return fmt.Errorf("%w: no host", ErrInvalidURL)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%w: port %q out of range", ErrInvalidURL, p)
		}
	}
	return nil
}

// checkHost refuses numeric hosts in non-canonical forms. With literals set
// it also judges literal IP addresses and localhost names, which the dialer
// would otherwise refuse at connect time.
func (p policy) checkHost(host string, literals bool) error {
	if a, err := netip.ParseAddr(host); err == nil {
		if !literals {
			return nil
		}
		return p.checkAddr(a)
	}
	if endsInNumber(host) {
		return nonCanonical(host)
	}
	if !validHostname(host) {
		return fmt.Errorf("%w: host %q has invalid characters", ErrInvalidURL, host)
	}
	if literals && isLocalhost(host) && !p.allowed(netip.IPv6Loopback()) &&
		!p.allowed(netip.AddrFrom4([4]byte{127, 0, 0, 1})) {
		return blockedAddr(host, "localhost name (always loopback, RFC 6761)", "127.0.0.1/32")
	}
	return nil
}

// validHostname reports whether host uses only characters a DNS name may
// carry: ASCII letters, digits, '-', '_', '.', and non-ASCII (IDN) bytes.
func validHostname(host string) bool {
	for i := 0; i < len(host); i++ {
		c := host[i]
		switch {
		case c >= 0x80, c == '-', c == '_', c == '.',
			'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		default:
			return false
		}
	}
	return true
}

// isLocalhost reports whether host is "localhost" or a name under it.
func isLocalhost(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	return h == "localhost" || strings.HasSuffix(h, ".localhost")
}

// endsInNumber reports whether the last label of host is numeric (decimal
// digits, or 0x followed by hex digits). Such a host is an IPv4 address to
// the WHATWG URL parser and to inet_aton-style resolvers, never a DNS name.
func endsInNumber(host string) bool {
	labels := strings.Split(strings.TrimSuffix(host, "."), ".")
	last := labels[len(labels)-1]
	if len(last) >= 2 && (last[:2] == "0x" || last[:2] == "0X") {
		return strings.Trim(last[2:], "0123456789abcdefABCDEF") == ""
	}
	return last != "" && strings.Trim(last, "0123456789") == ""
}

// nonCanonical builds the refusal for a numeric host that is not a
// canonical dotted-decimal IPv4 address.
func nonCanonical(host string) *BlockedError {
	e := &BlockedError{
		Addr:   host,
		Reason: "non-canonical numeric host (not a valid IPv4 address)",
		fix:    "write the address in dotted-decimal form (a.b.c.d)",
	}
	if a, ok := parseLooseIPv4(host); ok {
		e.Reason = fmt.Sprintf("non-canonical numeric host (resolvers may read it as %s)", a)
		e.fix = fmt.Sprintf("write it as %s", a)
	}
	return e
}

// parseLooseIPv4 parses host the way inet_aton does: one to four parts,
// each decimal, octal (leading 0) or hex (leading 0x), the last part filling
// the remaining bytes (127.1 is 127.0.0.1, 2130706433 is 127.0.0.1).
func parseLooseIPv4(host string) (netip.Addr, bool) {
	parts := strings.Split(strings.TrimSuffix(host, "."), ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var v uint64
	for i, part := range parts {
		n, ok := parseAtonPart(part)
		if !ok {
			return netip.Addr{}, false
		}
		if i < len(parts)-1 {
			if n > 0xff {
				return netip.Addr{}, false
			}
			v |= n << (24 - 8*i)
			continue
		}
		if n >= 1<<(8*(4-i)) {
			return netip.Addr{}, false
		}
		v |= n
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// parseAtonPart parses one inet_aton part: decimal, octal or hex.
func parseAtonPart(s string) (uint64, bool) {
	base := 10
	switch {
	case len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X"):
		base, s = 16, s[2:]
		if s == "" {
			return 0, true
		}
	case len(s) > 1 && s[0] == '0':
		base, s = 8, s[1:]
	}
	n, err := strconv.ParseUint(s, base, 32)
	return n, err == nil
}
