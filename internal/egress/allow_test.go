package egress

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func TestParseAllow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{" , ", nil},
		{"127.0.0.1", []string{"127.0.0.1/32"}},
		{"::1", []string{"::1/128"}},
		{"127.0.0.1/32,::1/128", []string{"127.0.0.1/32", "::1/128"}},
		{" 10.0.0.0/8 , fd00::/8 ,", []string{"10.0.0.0/8", "fd00::/8"}},
		{"10.1.2.3/8", []string{"10.0.0.0/8"}},
		{"::ffff:127.0.0.1", []string{"127.0.0.1/32"}},
		{"::ffff:10.0.0.0/104", []string{"10.0.0.0/8"}},
		{"::ffff:0:0/96", []string{"0.0.0.0/0"}},
	}
	for _, tt := range tests {
		got, err := ParseAllow(tt.in)
		if err != nil {
			t.Errorf("ParseAllow(%q): %v", tt.in, err)
			continue
		}
		var gotS []string
		for _, p := range got {
			gotS = append(gotS, p.String())
		}
		if !slices.Equal(gotS, tt.want) {
			t.Errorf("ParseAllow(%q) = %v, want %v", tt.in, gotS, tt.want)
		}
	}
}

func TestParseAllowErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, bad string }{
		{"10.0.0.0/33", "10.0.0.0/33"},
		{"localhost", "localhost"},
		{"127.0.0.1,bogus", "bogus"},
		{"fe80::1%eth0", "fe80::1%eth0"},
		{"10.0.0.0/8/8", "10.0.0.0/8/8"},
		{"2130706433", "2130706433"},
	}
	for _, tt := range tests {
		_, err := ParseAllow(tt.in)
		if err == nil {
			t.Errorf("ParseAllow(%q) = nil error", tt.in)
			continue
		}
		if !strings.Contains(err.Error(), `"`+tt.bad+`"`) {
			t.Errorf("ParseAllow(%q) = %q, want it to name %q", tt.in, err, tt.bad)
		}
	}
}

func TestCanonPrefixShortMapped(t *testing.T) {
	t.Parallel()
	// A prefix shorter than /96 over the mapped range stays IPv6.
	p := canonPrefix(netip.MustParsePrefix("::ffff:0:0/80"))
	if !p.Addr().Is6() || p.Bits() != 80 {
		t.Errorf("canonPrefix = %s, want ::/80", p)
	}
}
