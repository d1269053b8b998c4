package delivery

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/egress"
	"github.com/hookd/hookd/internal/endpoint"
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
	stalled := func(code int, unfinished error) egress.Response {
		r := resp(code, "")
		r.Unfinished = unfinished
		return r
	}
	deadline := fmt.Errorf("read: %w", context.DeadlineExceeded)
	// want/wait: the standard profile; kw/kwait: kwork, where every
	// non-2xx is retried and a Retry-After spends the attempt (the first
	// here: its backoff is 30 s), waiting the longer of the two.
	cases := []struct {
		name  string
		resp  egress.Response
		err   error
		want  Verdict
		wait  time.Duration
		kw    Verdict
		kwait time.Duration
	}{
		{"200", resp(200, ""), nil, Complete, 0, Complete, 0},
		{"204", resp(204, ""), nil, Complete, 0, Complete, 0},
		{"299", resp(299, ""), nil, Complete, 0, Complete, 0},
		{"429 with Retry-After seconds", resp(429, "120"), nil, Snooze, 2 * time.Minute, Retry, 2 * time.Minute},
		{"503 with Retry-After date", resp(503, now.Add(90*time.Second).Format(http.TimeFormat)), nil, Snooze, 90 * time.Second, Retry, 90 * time.Second},
		{"429 Retry-After within kwork's backoff", resp(429, "20"), nil, Snooze, 20 * time.Second, Retry, 0},
		{"429 Retry-After capped", resp(429, "999999"), nil, Snooze, time.Hour, Retry, time.Hour},
		// A receiver asking for no wait gets the floor (the first backoff
		// step), not the same delivery again at once.
		{"429 Retry-After 0", resp(429, "0"), nil, Snooze, 5 * time.Second, Retry, 0},
		{"503 Retry-After 0", resp(503, "0"), nil, Snooze, 5 * time.Second, Retry, 0},
		{"429 Retry-After 1 (under the floor)", resp(429, "1"), nil, Snooze, 5 * time.Second, Retry, 0},
		{"503 Retry-After past date", resp(503, now.Add(-time.Hour).Format(http.TimeFormat)), nil, Snooze, 5 * time.Second, Retry, 0},
		// A negative number or garbage is no Retry-After: the status's rule.
		{"429 Retry-After negative", resp(429, "-5"), nil, Retry, 0, Retry, 0},
		{"503 Retry-After negative", resp(503, "-1"), nil, Retry, 0, Retry, 0},
		{"429 with junk Retry-After", resp(429, "soon"), nil, Retry, 0, Retry, 0},
		{"503 Retry-After a fraction", resp(503, "1.5"), nil, Retry, 0, Retry, 0},
		{"429 without Retry-After", resp(429, ""), nil, Retry, 0, Retry, 0},
		{"500", resp(500, ""), nil, Retry, 0, Retry, 0},
		{"502", resp(502, ""), nil, Retry, 0, Retry, 0},
		{"503 without Retry-After", resp(503, ""), nil, Retry, 0, Retry, 0},
		{"500 with Retry-After is a retry", resp(500, "10"), nil, Retry, 0, Retry, 0},
		{"408", resp(408, ""), nil, Retry, 0, Retry, 0},
		{"400", resp(400, ""), nil, Discard, 0, Retry, 0},
		{"401", resp(401, ""), nil, Discard, 0, Retry, 0},
		{"403", resp(403, ""), nil, Discard, 0, Retry, 0},
		{"404", resp(404, ""), nil, Discard, 0, Retry, 0},
		{"409", resp(409, ""), nil, Discard, 0, Retry, 0},
		{"410", resp(410, ""), nil, Discard, 0, Retry, 0},
		{"413", resp(413, ""), nil, Discard, 0, Retry, 0},
		{"422", resp(422, ""), nil, Discard, 0, Retry, 0},
		{"302 unfollowed", resp(302, ""), nil, Discard, 0, Retry, 0},
		// An answer not read to its end in time: kwork retries it; under
		// the standard profile the status decides.
		{"200 whose body stalled", stalled(200, deadline), nil, Complete, 0, Retry, 0},
		{"200 whose body was cut short", stalled(200, io.ErrUnexpectedEOF), nil, Complete, 0, Retry, 0},
		{"404 whose body stalled", stalled(404, deadline), nil, Discard, 0, Retry, 0},
		{"timeout", egress.Response{}, fmt.Errorf("post: %w", context.DeadlineExceeded), Retry, 0, Retry, 0},
		{"connection refused", egress.Response{}, errors.New("dial tcp: connection refused"), Retry, 0, Retry, 0},
		{"blocked", egress.Response{}, fmt.Errorf("dial: %w", egress.ErrBlocked), Discard, 0, Discard, 0},
	}
	for _, c := range cases {
		for _, p := range []struct {
			prof profile.Profile
			want Verdict
			wait time.Duration
		}{{profile.Standard{}, c.want, c.wait}, {profile.Kwork{}, c.kw, c.kwait}} {
			// The attempt of a delivery never snoozed before: the first.
			got := Classify(c.resp, c.err, now, time.Hour, p.prof).spend(p.prof.Retry(), 0, 1)
			if got.Verdict != p.want || got.Wait != p.wait {
				t.Errorf("%s (%s): got %v wait %v, want %v wait %v", c.name, p.prof.Name(), got.Verdict, got.Wait, p.want, p.wait)
			}
			if got.Verdict != Complete && got.Error == "" {
				t.Errorf("%s (%s): no error text for a non-success", c.name, p.prof.Name())
			}
			// preflight holds a job back only for a wait of the receiver's.
			if marked := strings.Contains(got.Error, retryAfterNote); marked != (got.Wait > 0) {
				t.Errorf("%s (%s): error %q marked %v, wait %v", c.name, p.prof.Name(), got.Error, marked, got.Wait)
			}
		}
	}
}

// TestSpend: the standard profile's free snoozes run out after 10, and
// then a Retry-After spends the attempt (waiting the longer of the backoff
// and the receiver's wait); kwork has none.
func TestSpend(t *testing.T) {
	t.Parallel()
	snooze := func(wait time.Duration) Outcome {
		return Outcome{Verdict: Snooze, Status: 429, Wait: wait, Error: "HTTP 429 " + retryAfterNote}
	}
	std, kw := profile.StandardRetry, profile.KworkRetry
	cases := []struct {
		name             string
		r                profile.Retry
		out              Outcome
		snoozed, attempt int
		want             Verdict
		wait             time.Duration
	}{
		{"standard, first snooze", std, snooze(5 * time.Second), 0, 1, Snooze, 5 * time.Second},
		{"standard, 10th snooze", std, snooze(5 * time.Second), 9, 1, Snooze, 5 * time.Second},
		{"standard, 11th: the backoff is longer", std, snooze(5 * time.Second), 10, 1, Retry, 0},
		{"standard, 11th: the receiver's wait is longer", std, snooze(time.Hour), 10, 2, Retry, time.Hour},
		{"standard, 12th, third attempt (30 m)", std, snooze(time.Hour), 11, 3, Retry, time.Hour},
		{"standard, 12th, fourth attempt (2 h)", std, snooze(time.Hour), 11, 4, Retry, 0},
		{"kwork, first", kw, snooze(2 * time.Minute), 0, 1, Retry, 2 * time.Minute},
		{"kwork, sixth (6 h backoff)", kw, snooze(time.Hour), 0, 6, Retry, 0},
		{"not a snooze", std, Outcome{Verdict: Retry, Status: 500, Error: "HTTP 500"}, 20, 1, Retry, 0},
	}
	for _, c := range cases {
		got := c.out.spend(c.r, c.snoozed, c.attempt)
		if got.Verdict != c.want || got.Wait != c.wait {
			t.Errorf("%s: got %v wait %v, want %v wait %v", c.name, got.Verdict, got.Wait, c.want, c.wait)
		}
	}
}

// TestSnoozedFree: a delivery held back by a free Retry-After snooze is
// told apart from a fresh one and from a redelivered one (no attempts
// either, but the last error of its failure): the drain leaves only the
// first to its job.
func TestSnoozedFree(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := http.Header{"Retry-After": {"3600"}}
	free := Classify(egress.Response{StatusCode: 429, Header: h}, nil, now, time.Hour, profile.Standard{})
	spent := free.spend(profile.KworkRetry, 0, 6)
	spentLonger := free.spend(profile.KworkRetry, 0, 1)
	cases := []struct {
		name string
		d    endpoint.Delivery
		want bool
	}{
		{"fresh", endpoint.Delivery{}, false},
		{"snoozed", endpoint.Delivery{LastStatus: 429, LastError: free.Error}, true},
		{"a spent Retry-After", endpoint.Delivery{Attempts: 1, LastStatus: 429, LastError: spentLonger.Error}, false},
		{"redelivered after a spent Retry-After", endpoint.Delivery{LastStatus: 429, LastError: spentLonger.Error + " (attempts exhausted: 6)"}, false},
		{"redelivered after a 429 within the backoff", endpoint.Delivery{LastStatus: 429, LastError: spent.Error + " (attempts exhausted: 6)"}, false},
		{"redelivered after a 500", endpoint.Delivery{LastStatus: 500, LastError: "HTTP 500 (attempts exhausted: 18)"}, false},
	}
	for _, c := range cases {
		if got := snoozedFree(&c.d); got != c.want {
			t.Errorf("%s (%q): snoozed %v, want %v", c.name, c.d.LastError, got, c.want)
		}
	}
}

// TestClassifyHandshakeTimeout: a receiver that takes the connection but
// never finishes the TLS handshake is told apart from one that took the
// request and did not answer: the error names the handshake.
func TestClassifyHandshakeTimeout(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	held := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept() // accepted, never spoken to
		if err == nil {
			held <- c
		}
	}()
	defer func() {
		select {
		case c := <-held:
			c.Close()
		default:
		}
	}()
	c := egress.New(egress.Config{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, Timeout: 300 * time.Millisecond})
	resp, err := c.Post(t.Context(), "https://"+ln.Addr().String()+"/", http.Header{}, []byte("{}"))
	if err == nil {
		t.Fatalf("a receiver that never speaks TLS answered %d", resp.StatusCode)
	}
	got := Classify(resp, err, time.Now(), time.Hour, profile.Standard{})
	if got.Verdict != Retry || !strings.Contains(got.Error, "TLS handshake did not finish") {
		t.Fatalf("handshake that never ends (%v): got %v %q, want a retry naming the TLS handshake", err, got.Verdict, got.Error)
	}
}
