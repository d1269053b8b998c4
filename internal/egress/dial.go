package egress

import (
	"context"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// newDialer returns a dialer whose control hook applies the policy to every
// resolved address after the socket is created and before connect(2) is
// called, so a refused connection sends no packet. Because it sees the
// address DNS returned, names that resolve or rebind to internal addresses
// are refused too.
func newDialer(p policy, timeout time.Duration) *net.Dialer {
	return &net.Dialer{
		Timeout:   timeout,
		KeepAlive: 30 * time.Second,
		ControlContext: func(_ context.Context, network, address string, _ syscall.RawConn) error {
			return p.checkDial(network, address)
		},
	}
}

// checkDial judges one connection attempt. Anything it cannot understand is
// refused (fail closed).
func (p policy) checkDial(network, address string) error {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return &BlockedError{Addr: address, Reason: "network " + network + " is not TCP"}
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &BlockedError{Addr: address, Reason: "unparseable dial address"}
	}
	return p.checkAddr(ap.Addr())
}
