package egress

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr   string
		reason string // substring of the reason; "" means public
	}{
		// IPv4 blocked.
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "unspecified"},
		{"10.0.0.1", "private"},
		{"172.16.0.0", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"100.64.0.1", "carrier-grade NAT"},
		{"100.100.100.200", "carrier-grade NAT"}, // Alibaba metadata
		{"100.127.255.255", "carrier-grade NAT"},
		{"169.254.169.254", "metadata"},
		{"169.254.0.1", "link-local"},
		{"168.63.129.16", "Azure"},
		{"192.0.0.192", "IETF protocol"}, // Oracle Cloud metadata
		{"192.0.2.2", "documentation"},
		{"198.51.100.7", "documentation"},
		{"203.0.113.9", "documentation"},
		{"198.18.0.1", "benchmarking"},
		{"198.19.255.255", "benchmarking"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"240.0.0.1", "reserved"},
		{"255.255.255.255", "broadcast"},
		// IPv4 public.
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"100.63.255.255", ""},
		{"100.128.0.0", ""},
		{"172.15.255.255", ""},
		{"172.32.0.0", ""},
		{"198.20.0.0", ""},
		{"223.255.255.255", ""},
		// IPv6 blocked.
		{"::", "unspecified"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"::ffff:169.254.169.254", "metadata"},
		{"::ffff:10.0.0.1", "private"},
		{"::ffff:0.0.0.0", "unspecified"},
		{"::127.0.0.1", "IPv4-compatible"},
		{"::ffff:0:7f00:1", "IPv4-translated"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"fec0::1", "site-local"},
		{"fc00::1", "unique local"},
		{"fd00:ec2::254", "unique local"}, // AWS IPv6 metadata
		{"ff02::1", "multicast"},
		{"2001:db8::1", "documentation"},
		{"3fff::1", "documentation"},
		{"2001:2::1", "benchmarking"},
		{"100::1", "discard-only"},
		{"64:ff9b:1::1", "local-use NAT64"},
		{"64:ff9b::7f00:1", "NAT64 form of 127.0.0.1"},
		{"64:ff9b::a9fe:a9fe", "NAT64 form of 169.254.169.254"},
		{"2002:7f00:1::1", "6to4 form of 127.0.0.1"},
		{"2002:c0a8:101::1", "6to4 form of 192.168.1.1"},
		{"2001:0:808:808::80ff:fffe", "Teredo client form of 127.0.0.1"},
		{"2001:0:a00:1::f7f7:fbfb", "Teredo server form of 10.0.0.1"},
		// IPv6 public.
		{"2606:4700:4700::1111", ""},
		{"2a00:1450:4001:80b::200e", ""},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::808:808", ""},
		{"2002:808:808::1", ""},
		{"2001:0:808:808::f7f7:fbfb", ""},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			t.Parallel()
			got := classify(netip.MustParseAddr(tt.addr))
			switch {
			case tt.reason == "" && got != "":
				t.Errorf("classify(%s) = %q, want public", tt.addr, got)
			case tt.reason != "" && !strings.Contains(got, tt.reason):
				t.Errorf("classify(%s) = %q, want it to mention %q", tt.addr, got, tt.reason)
			}
		})
	}
}

func TestClassifyInvalid(t *testing.T) {
	t.Parallel()
	if got := classify(netip.Addr{}); got == "" {
		t.Error("classify(invalid) is public, want refused")
	}
}

func TestPolicyAllowWins(t *testing.T) {
	t.Parallel()
	p := newPolicy([]netip.Prefix{
		netip.MustParsePrefix("127.0.0.1/32"),
		netip.MustParsePrefix("::ffff:10.0.0.0/104"), // mapped form of 10.0.0.0/8
		netip.MustParsePrefix("fd00::/8"),
		{}, // invalid: ignored
	})
	tests := []struct {
		addr    string
		allowed bool
	}{
		{"127.0.0.1", true},
		{"::ffff:127.0.0.1", true},
		{"127.0.0.2", false},
		{"::1", false},
		{"10.1.2.3", true},
		{"::ffff:10.1.2.3", true},
		{"fd00::2", true},
		{"fe80::1", false},
		{"169.254.169.254", false},
		{"8.8.8.8", true},
	}
	for _, tt := range tests {
		err := p.checkAddr(netip.MustParseAddr(tt.addr))
		if tt.allowed && err != nil {
			t.Errorf("checkAddr(%s) = %v, want allowed", tt.addr, err)
		}
		if !tt.allowed && !errors.Is(err, ErrBlocked) {
			t.Errorf("checkAddr(%s) = %v, want ErrBlocked", tt.addr, err)
		}
	}
}

func TestCheckDialFailsClosed(t *testing.T) {
	t.Parallel()
	var p policy
	for _, tt := range []struct{ network, address string }{
		{"udp4", "8.8.8.8:53"},
		{"tcp4", "not-an-address"},
		{"tcp6", "[fe80::1%eth0]:80"},
	} {
		if err := p.checkDial(tt.network, tt.address); !errors.Is(err, ErrBlocked) {
			t.Errorf("checkDial(%s, %s) = %v, want ErrBlocked", tt.network, tt.address, err)
		}
	}
	if err := p.checkDial("tcp4", "8.8.8.8:443"); err != nil {
		t.Errorf("checkDial(public) = %v, want nil", err)
	}
}
