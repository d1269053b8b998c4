package egress

import (
	"fmt"
	"net/netip"
)

// blockedRange is one address range refused by default, with the reason
// given to the operator.
type blockedRange struct {
	prefix netip.Prefix
	reason string
}

// blockedRanges lists the ranges a webhook must never reach unless allowed.
// Order matters only for the wording: more specific ranges come first.
var blockedRanges = []blockedRange{
	// IPv4 (IANA special-purpose registry, RFC 6890 and successors).
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified (\"this network\") address"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private address (RFC 1918)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT address (RFC 6598)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback address"},
	{netip.MustParsePrefix("169.254.169.254/32"), "cloud metadata address"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local address"},
	{netip.MustParsePrefix("168.63.129.16/32"), "Azure platform address (wireserver)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private address (RFC 1918)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignment (RFC 6890)"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation address (TEST-NET-1)"},
	{netip.MustParsePrefix("192.88.99.0/24"), "6to4 relay anycast address (deprecated)"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private address (RFC 1918)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking address (RFC 2544)"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation address (TEST-NET-2)"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation address (TEST-NET-3)"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast address"},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved address (240.0.0.0/4)"},

	// IPv6. IPv4-mapped addresses (::ffff:0:0/96) are unmapped before the
	// lookup; 6to4, NAT64 and Teredo are judged by the IPv4 they embed.
	{netip.MustParsePrefix("::/128"), "unspecified address"},
	{netip.MustParsePrefix("::1/128"), "loopback address"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible IPv6 address (deprecated)"},
	{netip.MustParsePrefix("::ffff:0:0:0/96"), "IPv4-translated IPv6 address"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64 address (RFC 8215)"},
	{netip.MustParsePrefix("100::/64"), "discard-only address (RFC 6666)"},
	{netip.MustParsePrefix("2001:2::/48"), "benchmarking address (RFC 5180)"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation address"},
	{netip.MustParsePrefix("3fff::/20"), "documentation address"},
	{netip.MustParsePrefix("fc00::/7"), "unique local (private) address"},
	{netip.MustParsePrefix("fe80::/10"), "link-local address"},
	{netip.MustParsePrefix("fec0::/10"), "site-local address (deprecated)"},
	{netip.MustParsePrefix("ff00::/8"), "multicast address"},
}

// Transition prefixes whose addresses embed an IPv4 address.
var (
	nat64Prefix  = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour    = netip.MustParsePrefix("2002::/16")
	teredoPrefix = netip.MustParsePrefix("2001::/32")
)

// classify returns why a is refused by default, or "" if a is a public
// address. The zone is ignored and IPv4-mapped IPv6 addresses are judged as
// the IPv4 address they carry. An invalid address is refused.
func classify(a netip.Addr) string {
	a = a.WithZone("").Unmap()
	if !a.IsValid() {
		return "invalid address"
	}
	for _, r := range blockedRanges {
		if r.prefix.Contains(a) {
			return fmt.Sprintf("%s (%s)", r.reason, r.prefix)
		}
	}
	for _, e := range embeddedIPv4(a) {
		if reason := classify(e.addr); reason != "" {
			return fmt.Sprintf("%s form of %s, a %s", e.kind, e.addr, reason)
		}
	}
	return ""
}

// embedded is an IPv4 address carried inside an IPv6 transition address.
type embedded struct {
	kind string
	addr netip.Addr
}

// embeddedIPv4 returns the IPv4 addresses a NAT64 (64:ff9b::/96), 6to4
// (2002::/16) or Teredo (2001::/32) address would lead to, if any.
func embeddedIPv4(a netip.Addr) []embedded {
	if !a.Is6() {
		return nil
	}
	b := a.As16()
	v4 := func(p []byte) netip.Addr { return netip.AddrFrom4([4]byte(p)) }
	switch {
	case nat64Prefix.Contains(a):
		return []embedded{{"NAT64", v4(b[12:16])}}
	case sixToFour.Contains(a):
		return []embedded{{"6to4", v4(b[2:6])}}
	case teredoPrefix.Contains(a):
		// Teredo: server IPv4 in bytes 4-7, client IPv4 obfuscated
		// (bitwise NOT) in bytes 12-15 (RFC 4380).
		client := [4]byte{^b[12], ^b[13], ^b[14], ^b[15]}
		return []embedded{
			{"Teredo client", netip.AddrFrom4(client)},
			{"Teredo server", v4(b[4:8])},
		}
	}
	return nil
}
