package delivery

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/egress"
	"github.com/hookd/hookd/internal/profile"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	resp := func(code int, retryAfter string) egress.Response {
		h := http.Header{}
		if retryAfter != "" {
			h.Set("Retry-After", retryAfter)
		}
		return egress.Response{StatusCode: code, Header: h}
	}
	cases := []struct {
		name string
		resp egress.Response
		err  error
		want Verdict // standard profile
		kw   Verdict // kwork profile: every non-2xx is retried
		wait time.Duration
	}{
		{"200", resp(200, ""), nil, Complete, Complete, 0},
		{"204", resp(204, ""), nil, Complete, Complete, 0},
		{"299", resp(299, ""), nil, Complete, Complete, 0},
		{"429 with Retry-After seconds", resp(429, "120"), nil, Snooze, Snooze, 2 * time.Minute},
		{"503 with Retry-After date", resp(503, now.Add(90*time.Second).Format(http.TimeFormat)), nil, Snooze, Snooze, 90 * time.Second},
		{"503 Retry-After past date", resp(503, now.Add(-time.Hour).Format(http.TimeFormat)), nil, Snooze, Snooze, 0},
		{"429 Retry-After capped", resp(429, "999999"), nil, Snooze, Snooze, time.Hour},
		{"429 without Retry-After", resp(429, ""), nil, Retry, Retry, 0},
		{"429 with junk Retry-After", resp(429, "soon"), nil, Retry, Retry, 0},
		{"500", resp(500, ""), nil, Retry, Retry, 0},
		{"502", resp(502, ""), nil, Retry, Retry, 0},
		{"503 without Retry-After", resp(503, ""), nil, Retry, Retry, 0},
		{"500 with Retry-After is a retry", resp(500, "10"), nil, Retry, Retry, 0},
		{"408", resp(408, ""), nil, Retry, Retry, 0},
		{"400", resp(400, ""), nil, Discard, Retry, 0},
		{"401", resp(401, ""), nil, Discard, Retry, 0},
		{"403", resp(403, ""), nil, Discard, Retry, 0},
		{"404", resp(404, ""), nil, Discard, Retry, 0},
		{"409", resp(409, ""), nil, Discard, Retry, 0},
		{"410", resp(410, ""), nil, Discard, Retry, 0},
		{"413", resp(413, ""), nil, Discard, Retry, 0},
		{"422", resp(422, ""), nil, Discard, Retry, 0},
		{"302 unfollowed", resp(302, ""), nil, Discard, Retry, 0},
		{"timeout", egress.Response{}, fmt.Errorf("post: %w", context.DeadlineExceeded), Retry, Retry, 0},
		{"connection refused", egress.Response{}, errors.New("dial tcp: connection refused"), Retry, Retry, 0},
		{"blocked", egress.Response{}, fmt.Errorf("dial: %w", egress.ErrBlocked), Discard, Discard, 0},
	}
	for _, c := range cases {
		for _, p := range []struct {
			prof profile.Profile
			want Verdict
		}{{profile.Standard{}, c.want}, {profile.Kwork{}, c.kw}} {
			got := Classify(c.resp, c.err, now, time.Hour, p.prof.GivesUpOn)
			if got.Verdict != p.want || got.Wait != c.wait {
				t.Errorf("%s (%s): got %v wait %v, want %v wait %v", c.name, p.prof.Name(), got.Verdict, got.Wait, p.want, c.wait)
			}
			if got.Verdict != Complete && got.Error == "" {
				t.Errorf("%s (%s): no error text for a non-success", c.name, p.prof.Name())
			}
		}
	}
}
