package webhook

import (
	"fmt"
	"math"
	"time"
)

// DefaultTolerance is how far a signed timestamp may be from the verifier's
// clock, in either direction, when no WithTolerance option is given.
const DefaultTolerance = 300 * time.Second

// A VerifierOption configures a Verifier or a KworkVerifier.
type VerifierOption func(*verifierConfig)

type verifierConfig struct {
	tolerance time.Duration
	now       func() time.Time
	more      []string
}

// WithKeys adds keys the verifier also accepts, besides the one given to
// the constructor: the receiver's side of a rotation holds the old and the
// new key until the sender's overlap ends. For Standard Webhooks each key
// is a whsec_ secret (checks v1 entries) or a whpk_ public key (checks v1a
// entries); for kwork each is a secret.
func WithKeys(keys ...string) VerifierOption {
	return func(c *verifierConfig) { c.more = append(c.more, keys...) }
}

// WithTolerance sets how far the signed timestamp may be from now (default
// 300 s). A timestamp exactly tolerance away is still accepted.
func WithTolerance(d time.Duration) VerifierOption {
	return func(c *verifierConfig) { c.tolerance = d }
}

// WithClock replaces time.Now, for tests and replaying captured requests.
func WithClock(now func() time.Time) VerifierOption {
	return func(c *verifierConfig) { c.now = now }
}

func newVerifierConfig(opts []VerifierOption) (verifierConfig, error) {
	cfg := verifierConfig{tolerance: DefaultTolerance, now: time.Now}
	for _, opt := range opts {
		opt(&cfg)
	}
	if cfg.tolerance < 0 {
		return verifierConfig{}, fmt.Errorf("webhook: negative tolerance %s", cfg.tolerance)
	}
	if cfg.now == nil {
		cfg.now = time.Now
	}
	return cfg, nil
}

// maxUnixSeconds is the largest Unix time time.Unix represents without
// overflowing its internal seconds (which start in year 1).
const maxUnixSeconds = math.MaxInt64 - 62135596800

// checkTimestamp rejects ts, the value of header, when now-ts > tolerance
// (too old) or ts-now > tolerance (too new). A negative tolerance rejects
// everything.
func checkTimestamp(header string, ts int64, now time.Time, tolerance time.Duration) error {
	if tolerance < 0 {
		return fmt.Errorf("webhook: negative tolerance %s", tolerance)
	}
	if ts > maxUnixSeconds {
		return fmt.Errorf("%w: %s %d is beyond year 292277026596", ErrTimestampTooNew, header, ts)
	}
	// Time.Sub saturates instead of overflowing, so age is safe for any ts.
	age := now.Sub(time.Unix(ts, 0))
	switch {
	case age > tolerance:
		return fmt.Errorf("%w: %s is %s old, tolerance %s", ErrTimestampTooOld, header, age, tolerance)
	case age < -tolerance:
		ahead := -age
		if ahead < 0 { // -math.MinInt64
			ahead = math.MaxInt64
		}
		return fmt.Errorf("%w: %s is %s in the future, tolerance %s", ErrTimestampTooNew, header, ahead, tolerance)
	}
	return nil
}
