// Package egress is the one outbound HTTP client for webhook deliveries.
//
// Every delivery leaves through [Client.Post]. The client is hardened against
// server-side request forgery (SSRF): its dialer refuses loopback, private,
// link-local, carrier-grade NAT, multicast, unspecified and other reserved
// addresses at connect time — after DNS resolution, so a hostname that
// resolves (or rebinds) to an internal address is refused too. Redirects are
// dialed through the same guard. Refusals are reported as errors matching
// [ErrBlocked].
//
// An explicit allow-list ([Config.Allow], parsed from the --egress-allow flag
// or HOOKD_EGRESS_ALLOW by [ParseAllow]) lets local development and tests
// reach addresses that are blocked by default.
//
// [CheckURL] validates endpoint URLs when they are created; it does not
// resolve hostnames, because the connect-time check is the real guard.
//
// The client never retries on its own, nor lets net/http's transport send a
// request again (it would for a POST with an Idempotency-Key header):
// retries belong to the job engine.
package egress
