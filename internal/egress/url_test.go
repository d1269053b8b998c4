package egress

import (
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

func TestCheckURL(t *testing.T) {
	t.Parallel()
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	tests := []struct {
		raw   string
		allow []netip.Prefix
		want  error  // nil, ErrInvalidURL or ErrBlocked
		msg   string // substring of the message
	}{
		// Good.
		{raw: "https://example.com/hooks"},
		{raw: "http://example.com:8080/hooks?x=1#frag"},
		{raw: "HTTPS://Example.COM/"},
		{raw: "https://8.8.8.8/"},
		{raw: "https://[2606:4700:4700::1111]:443/"},
		{raw: "https://1.2.3.4.nip.io/"},
		{raw: "https://xn--bcher-kva.example/"},
		{raw: "https://my_host.example/"},
		{raw: "http://127.0.0.1:9000/", allow: loopback},
		{raw: "http://[::ffff:127.0.0.1]/", allow: loopback},
		{raw: "http://localhost:9000/", allow: loopback},
		// Malformed.
		{raw: "ftp://example.com/", want: ErrInvalidURL, msg: `scheme "ftp"`},
		{raw: "file:///etc/passwd", want: ErrInvalidURL, msg: "scheme"},
		{raw: "javascript:alert(1)", want: ErrInvalidURL, msg: "scheme"},
		{raw: "/relative/path", want: ErrInvalidURL, msg: "absolute"},
		{raw: "example.com/hooks", want: ErrInvalidURL, msg: "absolute"},
		{raw: "", want: ErrInvalidURL},
		{raw: "http:example.com", want: ErrInvalidURL},
		{raw: "http:///path", want: ErrInvalidURL, msg: "no host"},
		{raw: "http://user:secret@example.com/", want: ErrInvalidURL, msg: "userinfo"},
		{raw: "http://user@example.com/", want: ErrInvalidURL, msg: "userinfo"},
		{raw: "http://example.com:0/", want: ErrInvalidURL, msg: "port"},
		{raw: "http://example.com:70000/", want: ErrInvalidURL, msg: "port"},
		{raw: "http://exa mple.com/", want: ErrInvalidURL},
		{raw: "http://example.com\x00/", want: ErrInvalidURL},
		{raw: "http://[::zz]/", want: ErrInvalidURL},
		{raw: "http://ex%2Fample.com/", want: ErrInvalidURL},
		{raw: "http://%31%32%37.0.0.1/", want: ErrInvalidURL},
		{raw: "http://ex!ample.com/", want: ErrInvalidURL, msg: "invalid characters"},
		// Blocked literals.
		{raw: "http://127.0.0.1/", want: ErrBlocked, msg: "--egress-allow"},
		{raw: "http://127.0.0.2/", allow: loopback, want: ErrBlocked, msg: "loopback"},
		{raw: "http://0.0.0.0/", want: ErrBlocked, msg: "unspecified"},
		{raw: "http://10.0.0.1/", want: ErrBlocked, msg: "private"},
		{raw: "http://169.254.169.254/latest/meta-data/", want: ErrBlocked, msg: "metadata"},
		{raw: "http://[::1]/", want: ErrBlocked, msg: "loopback"},
		{raw: "http://[::ffff:127.0.0.1]/", want: ErrBlocked, msg: "loopback"},
		{raw: "http://[::ffff:7f00:1]/", want: ErrBlocked, msg: "loopback"},
		{raw: "http://[fe80::1%25eth0]/", want: ErrBlocked, msg: "link-local"},
		{raw: "http://[64:ff9b::a9fe:a9fe]/", want: ErrBlocked, msg: "NAT64"},
		{raw: "http://localhost/", want: ErrBlocked, msg: "localhost"},
		{raw: "http://api.LOCALHOST./", want: ErrBlocked, msg: "localhost"},
		// Non-canonical numeric hosts: refused even when allowed.
		{raw: "http://2130706433/", allow: loopback, want: ErrBlocked, msg: "127.0.0.1"},
		{raw: "http://0x7f000001/", want: ErrBlocked, msg: "127.0.0.1"},
		{raw: "http://0X7F.0.0.1/", want: ErrBlocked, msg: "127.0.0.1"},
		{raw: "http://0177.0.0.1/", want: ErrBlocked, msg: "127.0.0.1"},
		{raw: "http://127.1/", want: ErrBlocked, msg: "127.0.0.1"},
		{raw: "http://127.0.1/", want: ErrBlocked, msg: "127.0.0.1"},
		{raw: "http://127.0.0.1./", want: ErrBlocked, msg: "write it as 127.0.0.1"},
		{raw: "http://010.0.0.1/", want: ErrBlocked, msg: "8.0.0.1"},
		{raw: "http://8.8.8.010/", want: ErrBlocked, msg: "non-canonical"},
		{raw: "http://99999999999/", want: ErrBlocked, msg: "not a valid IPv4"},
		{raw: "http://1.2.3.4.5/", want: ErrBlocked, msg: "non-canonical"},
		{raw: "http://example.0x1/", want: ErrBlocked, msg: "non-canonical"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			t.Parallel()
			err := CheckURL(tt.raw, tt.allow)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("CheckURL(%q) = %v, want nil", tt.raw, err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("CheckURL(%q) = %v, want %v", tt.raw, err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("CheckURL(%q) = %q, want it to mention %q", tt.raw, err, tt.msg)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("CheckURL(%q) leaks the password: %q", tt.raw, err)
			}
		})
	}
}

func TestParseLooseIPv4(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want string // "" means not an IPv4 address
	}{
		{"2130706433", "127.0.0.1"},
		{"0x7f000001", "127.0.0.1"},
		{"0177.0.0.1", "127.0.0.1"},
		{"0177.0.0.01", "127.0.0.1"},
		{"127.1", "127.0.0.1"},
		{"127.0.1", "127.0.0.1"},
		{"0x7f.1", "127.0.0.1"},
		{"0x7f.0x0.0x0.0x1", "127.0.0.1"},
		{"0", "0.0.0.0"},
		{"0x", "0.0.0.0"},
		{"4294967295", "255.255.255.255"},
		{"169.16689662", "169.254.169.254"},
		{"4294967296", ""},
		{"256.1", ""},
		{"1.2.3.256", ""},
		{"1.2.65536", ""},
		{"1.2.3.4.5", ""},
		{"08", ""},
		{"1..1", ""},
		{"-1", ""},
		{"+1", ""},
	}
	for _, tt := range tests {
		got, ok := parseLooseIPv4(tt.in)
		switch {
		case tt.want == "" && ok:
			t.Errorf("parseLooseIPv4(%q) = %s, want not an address", tt.in, got)
		case tt.want != "" && (!ok || got.String() != tt.want):
			t.Errorf("parseLooseIPv4(%q) = %s, %v, want %s", tt.in, got, ok, tt.want)
		}
	}
}

func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{
		"https://example.com/hooks", "http://127.0.0.1/", "http://2130706433/",
		"http://0x7f.1/", "http://[::ffff:127.0.0.1]/", "http://[fe80::1%25eth0]/",
		"ftp://x/", "/rel", "http://u:p@h/", "http://h:99999/", "http://.../",
		"http://0x/", "http://1.2.3.4.5.6/", "http://%30/", "http:", "",
	} {
		f.Add(s)
	}
	allow := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	f.Fuzz(func(t *testing.T, raw string) {
		err := CheckURL(raw, allow)
		if err != nil {
			if errors.Is(err, ErrInvalidURL) == errors.Is(err, ErrBlocked) {
				t.Fatalf("CheckURL(%q) = %v, want exactly one of ErrInvalidURL, ErrBlocked", raw, err)
			}
			return
		}
		u, perr := url.Parse(raw)
		if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil {
			t.Fatalf("CheckURL(%q) accepted a URL it should refuse", raw)
		}
		host := u.Hostname()
		a, aerr := netip.ParseAddr(host)
		switch {
		case aerr == nil && classify(a) != "" && !allow[0].Contains(a.WithZone("").Unmap()):
			t.Fatalf("CheckURL(%q) accepted blocked address %s", raw, a)
		case aerr != nil && endsInNumber(host):
			t.Fatalf("CheckURL(%q) accepted non-canonical numeric host %q", raw, host)
		case aerr != nil && isLocalhost(host):
			t.Fatalf("CheckURL(%q) accepted localhost name %q", raw, host)
		}
	})
}
