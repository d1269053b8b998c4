package e2e_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/dbtest"
)

// TestRateLimit: 60 events to an endpoint limited to 10 deliveries a
// second, under the standard lease (with its drain) and under kwork's
// parallel slots. Every event arrives exactly once, first to last takes at
// least 5 s, no 1-second window at the receiver holds more than 10, and
// waiting spent no attempt.
func TestRateLimit(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		for _, prof := range []string{"standard", "kwork"} {
			o := b
			if prof == "kwork" {
				o = b.kworkOwner("shop", shopApp)
			}
			typ := "paced." + prof
			o.registerType(typ)
			rc := newReceiver(t)
			ep := o.subscribe(rc.URL, []string{typ}, map[string]any{"rate_limit": 10})
			if got := o.getEndpointControls(ep.ID); got.RateLimit != 10 {
				t.Fatalf("%s: record shows rate_limit %d, want 10", prof, got.RateLimit)
			}
			events := make([]map[string]any, 60)
			for i := range events {
				events[i] = map[string]any{"type": typ, "data": map[string]int{"i": i}}
			}
			// One first, then the rest while it holds the lease: their jobs
			// are deferred behind it (as under any backlog) instead of all
			// meeting the lease busy every BusySnooze at once, which on
			// SQLite's one connection, under -race, would crowd out the
			// sender itself.
			o.must(202, "POST", "/api/v1/events/batch", map[string]any{"events": events[:1]}, nil)
			rc.waitFor(t, 1, 30*time.Second)
			o.must(202, "POST", "/api/v1/events/batch", map[string]any{"events": events[1:]}, nil)
			got := rc.waitFor(t, 60, 3*time.Minute)
			checkPaced(t, prof, receiptTimes(got), 10, 60)
			ids := map[string]bool{}
			for _, r := range got {
				ids[r.Header.Get("webhook-id")+r.Header.Get("X-Kwork-Delivery")] = true
			}
			if len(got) != 60 || len(ids) != 60 {
				t.Fatalf("%s: %d requests for %d distinct deliveries, want 60 of 60 (none lost, none twice)", prof, len(got), len(ids))
			}
			if !eventually(10*time.Second, func() bool {
				for _, d := range o.deliveries(ep.ID) {
					if d.State != "delivered" || d.Attempts != 1 {
						return false
					}
				}
				return true
			}) {
				t.Fatalf("%s: deliveries %+v, want every one delivered with 1 attempt (waiting spends none)", prof, o.deliveries(ep.ID))
			}
		}
	})
}

func receiptTimes(rs []receipt) []time.Time {
	out := make([]time.Time, len(rs))
	for i, r := range rs {
		out[i] = r.At
	}
	return out
}

// arrivalJitter is how much shorter than hookd spaced them a window of
// arrivals may look at the receiver, beyond the 5 % hookd adds to the
// spacing for that (rateInterval): the window's first request left or
// was read late, its last did not. hookd spaces its grants; a request's
// way from grant to receiver under -race, on two cores running every
// package's tests, varied by more than those 5 % once in CI (11 arrivals
// in 999.2 ms at 10/s, granted 1,050 ms apart). The test is of hookd's
// pacing, not of the machine's scheduling.
const arrivalJitter = 20 * time.Millisecond

// checkPaced fails the test unless n arrivals (in order) took at least
// (n/rate - 1) seconds first to last and no 1-second window holds more
// than rate of them (less arrivalJitter: a window of 980 ms holding 11
// fails it).
func checkPaced(t *testing.T, what string, at []time.Time, rate, n int) {
	t.Helper()
	if len(at) < n {
		t.Fatalf("%s: %d arrivals, want %d", what, len(at), n)
	}
	span := at[n-1].Sub(at[0])
	if least := time.Duration(n/rate-1) * time.Second; span < least {
		t.Fatalf("%s: %d arrivals in %v, want at least %v at %d/s", what, n, span, least, rate)
	}
	for i := rate; i < n; i++ {
		if d := at[i].Sub(at[i-rate]); d < time.Second-arrivalJitter {
			t.Fatalf("%s: arrivals %d..%d (%d of them) within %v: more than %d in one second", what, i-rate, i, rate+1, d, rate)
		}
	}
	t.Logf("%s: %d arrivals in %v (%.2f/s)", what, n, span.Round(time.Millisecond), float64(n-1)/span.Seconds())
	t.Logf("gaps %s", gaps(at))
}

type controlsOut struct {
	Headers   map[string]string `json:"headers"`
	RateLimit int               `json:"rate_limit"`
	Ordered   bool              `json:"ordered"`
}

func (b *bundle) getEndpointControls(id string) controlsOut {
	b.t.Helper()
	var c controlsOut
	b.must(200, "GET", "/api/admin/webhooks/"+id, nil, &c)
	return c
}

// gaps lists the milliseconds between consecutive arrivals (for the log).
func gaps(at []time.Time) string {
	var sb strings.Builder
	for i := 1; i < len(at); i++ {
		fmt.Fprintf(&sb, "%d ", at[i].Sub(at[i-1]).Milliseconds())
	}
	return sb.String()
}
