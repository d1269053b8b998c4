package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// ParseAllow parses the value of the --egress-allow flag (or the
// HOOKD_EGRESS_ALLOW variable): a comma-separated list of CIDR prefixes such
// as "127.0.0.1/32,10.0.0.0/8,fd00::/8". A bare IP address is taken as a /32
// (IPv4) or /128 (IPv6). Spaces around entries and empty entries are ignored;
// an empty string yields an empty list. IPv4-mapped IPv6 prefixes are
// rewritten to their IPv4 form, host bits are cleared.
func ParseAllow(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		p, err := parseAllowEntry(entry)
		if err != nil {
			return nil, fmt.Errorf("egress allow-list: bad entry %q (want a CIDR such as 10.0.0.0/8 or an IP address): %w", entry, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// parseAllowEntry parses one CIDR prefix or bare IP address.
func parseAllowEntry(entry string) (netip.Prefix, error) {
	if strings.Contains(entry, "/") {
		p, err := netip.ParsePrefix(entry)
		if err != nil {
			return netip.Prefix{}, err
		}
		return canonPrefix(p), nil
	}
	a, err := netip.ParseAddr(entry)
	if err != nil {
		return netip.Prefix{}, err
	}
	if a.Zone() != "" {
		return netip.Prefix{}, errors.New("IPv6 zones are not allowed")
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// canonPrefix clears host bits and rewrites an IPv4-mapped IPv6 prefix
// (::ffff:a.b.c.d/96 or longer) as the IPv4 prefix it covers, so that it is
// compared against unmapped addresses.
func canonPrefix(p netip.Prefix) netip.Prefix {
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked()
}

// policy decides which addresses may be dialed.
type policy struct {
	allow []netip.Prefix // canonical (see canonPrefix)
}

// newPolicy copies and canonicalises an allow-list; invalid prefixes are
// dropped, as they could never match.
func newPolicy(allow []netip.Prefix) policy {
	var p policy
	for _, pr := range allow {
		if pr.IsValid() {
			p.allow = append(p.allow, canonPrefix(pr))
		}
	}
	return p
}

// allowed reports whether a (already unmapped) is inside the allow-list.
func (p policy) allowed(a netip.Addr) bool {
	for _, pr := range p.allow {
		if pr.Contains(a) {
			return true
		}
	}
	return false
}

// checkAddr returns a [*BlockedError] if a may not be dialed: it is blocked
// by default and no allow-list prefix contains it. Allow wins.
func (p policy) checkAddr(a netip.Addr) error {
	a = a.WithZone("").Unmap()
	if !a.IsValid() {
		return &BlockedError{Addr: "(none)", Reason: "invalid address"}
	}
	if p.allowed(a) {
		return nil
	}
	reason := classify(a)
	if reason == "" {
		return nil
	}
	return blockedAddr(a.String(), reason, netip.PrefixFrom(a, a.BitLen()).String())
}
