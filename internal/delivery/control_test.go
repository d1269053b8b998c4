package delivery

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/egress"
	"github.com/hookd/hookd/internal/profile"
)

// TestControlled: the receiver's webhook-delivery header under both
// profiles. abort-message turns a retry (or a snooze) into a discard and
// leaves a success a success; disable does the same to the delivery (the
// endpoint's disabling is settle's); anything else changes nothing.
func TestControlled(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		status       int
		control      string
		retryAfter   string
		want         Verdict
		wantControl  string
		errorMention string
	}{
		{500, "abort-message", "", Discard, "abort-message", "abort-message"},
		{503, "Abort-Message ", "30", Discard, "abort-message", "abort-message"},
		{200, "abort-message", "", Complete, "abort-message", "abort-message"},
		{410, "disable", "", Discard, "disable", "asked to stop"},
		{204, "disable", "", Complete, "disable", "asked to stop"},
		{500, "pause", "", Retry, "pause", "HTTP 500"},
		{200, "pause", "", Complete, "pause", ""},
		{500, "", "", Retry, "", "HTTP 500"},
	}
	for _, p := range []profile.Profile{profile.Standard{}, profile.Kwork{}} {
		for _, c := range cases {
			h := http.Header{}
			if c.control != "" {
				h.Set("Webhook-Delivery", c.control)
			}
			if c.retryAfter != "" {
				h.Set("Retry-After", c.retryAfter)
			}
			out := Classify(egress.Response{StatusCode: c.status, Header: h}, nil, now, time.Hour, p)
			if out.Verdict != c.want || out.Control != c.wantControl || !strings.Contains(out.Error, c.errorMention) {
				t.Errorf("%s: %d with %q: %+v, want %s, control %q, error naming %q", p.Name(), c.status, c.control, out, c.want, c.wantControl, c.errorMention)
			}
			if c.want == Discard && out.Wait != 0 {
				t.Errorf("%s: %d with %q: a discard that waits %s", p.Name(), c.status, c.control, out.Wait)
			}
		}
	}
}
