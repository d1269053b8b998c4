package e2e_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/app"
	"github.com/hookd/hookd/internal/dbtest"
)

// logBuffer is a goroutine-safe log sink.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// records returns every JSON log record written so far.
func (l *logBuffer) records(t *testing.T) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		out = append(out, m)
	}
	return out
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// jobOf returns the River job of epID's delivery of eventID.
func (b *bundle) jobOf(epID, eventID string) int64 {
	b.t.Helper()
	for _, d := range b.deliveries(epID) {
		if d.EventID == eventID {
			return d.JobID
		}
	}
	b.t.Fatalf("no delivery of %s to %s", eventID, epID)
	return 0
}

type notification struct {
	Type string `json:"type"`
	Data struct {
		EndpointID   string `json:"endpoint_id"`
		FailingSince string `json:"failing_since"`
		Reason       string `json:"reason"`
	} `json:"data"`
}

// TestFailureNotificationsAndLogs: an endpoint that fails, recovers, fails
// again and is disabled produces exactly one notification per transition,
// delivered to the owner's other subscribed endpoint and never to the
// failing one (subscribed to "*") or an unsubscribed one; and the logs
// say what happened without a secret, a key or a body.
func TestFailureNotificationsAndLogs(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		logs := &logBuffer{}
		b := setup(t, backend, setupOpts{mutate: func(c *app.Config) {
			c.Log = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		}})
		flaky, watcher, other := newReceiver(t), newReceiver(t), newReceiver(t)
		var failing sync.Mutex // held: flaky answers 500
		answer := func(*http.Request, int) (int, http.Header) {
			if failing.TryLock() {
				failing.Unlock()
				return 204, nil
			}
			return 500, nil
		}
		flaky.setRespond(answer)
		b.registerType("n.thing")
		epFlaky := b.endpoint(flaky.URL, "*")
		epWatch := b.endpoint(watcher.URL, "hookd.endpoint.*")
		epOther := b.endpoint(other.URL, "n.thing")
		const bodyMarker = "body-must-not-be-logged-4f1c"

		failing.Lock()
		first := b.publish("n.thing", `{"marker":"`+bodyMarker+`"}`)
		b.waitDelivery(epFlaky.ID, first, 10*time.Second, func(d deliveryOut) bool { return d.Attempts == 1 })
		watcher.waitFor(t, 1, 10*time.Second) // failing
		failing.Unlock()
		b.retryNow(b.jobOf(epFlaky.ID, first))
		b.waitDelivery(epFlaky.ID, first, 10*time.Second, func(d deliveryOut) bool { return d.State == "delivered" })
		watcher.waitFor(t, 2, 10*time.Second) // recovered

		failing.Lock()
		second := b.publish("n.thing", `{}`)
		b.waitDelivery(epFlaky.ID, second, 10*time.Second, func(d deliveryOut) bool { return d.Attempts == 1 })
		watcher.waitFor(t, 3, 10*time.Second) // failing again
		b.clock.Advance(5*24*time.Hour + time.Minute)
		b.retryNow(b.jobOf(epFlaky.ID, second))
		got := watcher.waitFor(t, 4, 10*time.Second) // disabled
		if ep := b.getEndpoint(epFlaky.ID); ep.Enabled {
			t.Fatalf("endpoint still enabled after 5 days of failure: %+v", ep)
		}

		var kinds []string
		for _, r := range got {
			var n notification
			if err := json.Unmarshal(r.Body, &n); err != nil {
				t.Fatal(err)
			}
			kinds = append(kinds, n.Type)
			if n.Data.EndpointID != epFlaky.ID {
				t.Errorf("%s is about %q, want %s", n.Type, n.Data.EndpointID, epFlaky.ID)
			}
		}
		want := []string{"hookd.endpoint.failing", "hookd.endpoint.recovered", "hookd.endpoint.failing", "hookd.endpoint.disabled"}
		if strings.Join(kinds, " ") != strings.Join(want, " ") {
			t.Errorf("notifications %v, want %v", kinds, want)
		}
		// Exactly one event per transition, and never offered to the
		// endpoint it is about nor to one that does not subscribe.
		ctx := context.Background()
		if n, err := b.h.DB.Count(ctx, `SELECT count(*) FROM hookd_events WHERE type LIKE 'hookd.endpoint.%'`); err != nil || n != 4 {
			t.Errorf("notification events: %d (%v), want 4", n, err)
		}
		for _, ep := range []string{epFlaky.ID, epOther.ID} {
			if n, err := b.h.DB.Count(ctx, `SELECT count(*) FROM hookd_deliveries WHERE endpoint_id = $1 AND event_type LIKE 'hookd.endpoint.%'`, ep); err != nil || n != 0 {
				t.Errorf("endpoint %s got %d notification deliveries (%v), want 0", ep, n, err)
			}
		}
		if n := len(watcher.receipts()); n != 4 {
			t.Errorf("watcher got %d requests, want 4", n)
		}
		if n := len(other.receipts()); n != 2 {
			t.Errorf("the n.thing endpoint got %d requests, want the 2 events", n)
		}

		// The logs: one INFO line per attempt outcome, with its ids, status,
		// duration and attempt; WARN failing (twice), WARN disabled, INFO
		// recovered. flaky: 2 failed + 1 delivered + 1 failed (disabled);
		// other: 2; watcher: 4. The last line is written once the last
		// receipt's attempt is recorded, after the receiver saw it.
		attemptLines := func() int { return strings.Count(logs.String(), `"msg":"delivery attempt"`) }
		if !eventually(10*time.Second, func() bool { return attemptLines() >= 10 }) {
			t.Errorf("%d attempt log lines, want 10", attemptLines())
		}
		count := map[string]int{}
		for _, r := range logs.records(t) {
			msg, _ := r["msg"].(string)
			count[r["level"].(string)+" "+msg]++
			if msg == "delivery attempt" {
				for _, k := range []string{"outcome", "event", "endpoint", "delivery", "status", "duration", "attempt"} {
					if _, ok := r[k]; !ok {
						t.Errorf("attempt log line without %q: %v", k, r)
					}
				}
			}
		}
		for line, want := range map[string]int{
			"WARN endpoint failing": 2, "WARN endpoint disabled after continuous failure": 1, "INFO endpoint recovered": 1,
		} {
			if count[line] != want {
				t.Errorf("%d log lines %q, want %d (all: %v)", count[line], line, want, count)
			}
		}
		if n := count["INFO delivery attempt"]; n != 10 {
			t.Errorf("%d attempt log lines, want 10 (%v)", n, count)
		}
		all := logs.String()
		master := bytes.Repeat([]byte{7}, 32)
		secrets := map[string]string{
			"API key": b.key, "flaky's secret": epFlaky.Secret, "watcher's secret": epWatch.Secret, "other's secret": epOther.Secret,
			"master key (base64)": base64.StdEncoding.EncodeToString(master), "master key (hex)": hex.EncodeToString(master),
			"an event body": bodyMarker,
		}
		for what, s := range secrets {
			if s == "" {
				t.Fatalf("%s is empty: the test would prove nothing", what)
			}
			if strings.Contains(all, s) {
				t.Errorf("the logs contain %s", what)
			}
			if raw := strings.TrimPrefix(s, "whsec_"); raw != s && strings.Contains(all, raw) {
				t.Errorf("the logs contain %s (without its prefix)", what)
			}
		}
	})
}
