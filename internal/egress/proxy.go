package egress

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"time"
)

// ParseProxy parses the value of --egress-proxy (HOOKD_EGRESS_PROXY): the
// URL of an HTTP proxy that accepts CONNECT, such as http://proxy:3128 or
// http://user:pass@proxy:3128. Empty means no proxy.
func ParseProxy(s string) (*url.URL, error) {
	if s == "" {
		return nil, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	if u.Scheme != "http" || u.Hostname() == "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("egress proxy %q: want http://host:port of a proxy that accepts CONNECT", u.Redacted())
	}
	if u.Port() == "" {
		u.Host = net.JoinHostPort(u.Hostname(), "3128")
	}
	return u, nil
}

// proxyDialer reaches every receiver through an HTTP CONNECT tunnel. The
// SSRF guard stays hookd's: it resolves the receiver's name itself, judges
// every address, and asks the proxy for a checked IP only, never for a
// name (the proxy would resolve it past the guard). TLS then runs inside
// the tunnel with the name as SNI, and Host is the name, so the receiver
// sees the request as if dialed directly. The proxy's own address is the
// operator's choice and is not judged.
type proxyDialer struct {
	proxy    *url.URL
	policy   policy
	dialer   *net.Dialer // to the proxy
	resolver *net.Resolver
}

func newProxyDialer(proxy *url.URL, p policy, timeout time.Duration) *proxyDialer {
	return &proxyDialer{proxy: proxy, policy: p, dialer: &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}, resolver: net.DefaultResolver}
}

// DialContext opens a tunnel to addr (host:port of the receiver).
func (d *proxyDialer) DialContext(ctx context.Context, _, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, &BlockedError{Addr: addr, Reason: "unparseable dial address"}
	}
	ips, err := d.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, ip := range ips {
		ip = ip.Unmap()
		if err := d.policy.checkAddr(ip); err != nil {
			errs = append(errs, err)
			continue
		}
		conn, err := d.connect(ctx, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// resolve returns host's addresses (host itself when it is an IP).
func (d *proxyDialer) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	ips, err := d.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("lookup %s: no addresses", host)
	}
	return ips, nil
}

// connect asks the proxy for a tunnel to target (a checked ip:port).
func (d *proxyDialer) connect(ctx context.Context, target string) (net.Conn, error) {
	conn, err := d.dialer.DialContext(ctx, "tcp", d.proxy.Host)
	if err != nil {
		return nil, fmt.Errorf("egress proxy %s: %w", d.proxy.Host, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	req := &http.Request{Method: http.MethodConnect, URL: &url.URL{Opaque: target}, Host: target, Header: http.Header{}}
	if u := d.proxy.User; u != nil {
		pass, _ := u.Password()
		req.Header.Set("Proxy-Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(u.Username()+":"+pass)))
	}
	if err := req.Write(conn); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("egress proxy %s: CONNECT %s: %w", d.proxy.Host, target, err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("egress proxy %s: CONNECT %s: %w", d.proxy.Host, target, err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_ = conn.Close()
		return nil, fmt.Errorf("egress proxy %s: CONNECT %s: %s", d.proxy.Host, target, resp.Status)
	}
	if br.Buffered() > 0 {
		_ = conn.Close()
		return nil, fmt.Errorf("egress proxy %s: CONNECT %s: data before the tunnel opened", d.proxy.Host, target)
	}
	_ = conn.SetDeadline(time.Time{})
	return conn, nil
}
