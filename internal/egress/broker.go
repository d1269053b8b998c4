package egress

import (
	"net"
	"net/netip"
	"time"
)

// CheckHost judges a destination's host (a broker's: internal/destination)
// as CheckURL judges an http URL's: literal addresses and localhost names
// against the block list and allow, non-canonical numbers refused. Names
// are not resolved here; Dialer's connect-time check is the real guard.
func CheckHost(host string, allow []netip.Prefix) error {
	return newPolicy(allow).checkHost(host, true)
}

// Dialer returns a dialer that applies the egress policy (allow as in
// [Config.Allow]) to every address at connect time, after DNS: the one
// a broker client dials through, so a destination that is not HTTP is
// guarded like a webhook.
func Dialer(allow []netip.Prefix, timeout time.Duration) *net.Dialer {
	return newDialer(newPolicy(allow), timeout)
}
