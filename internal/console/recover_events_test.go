package console_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hookd/hookd/internal/dbtest"
)

// switchable is a loopback receiver that refuses every delivery (410: the
// standard profile fails it at once) until it is told to take them, and
// counts what it took.
type switchable struct {
	*httptest.Server
	up   atomic.Bool
	took atomic.Int32
}

func newSwitchable(t *testing.T) *switchable {
	rc := &switchable{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !rc.up.Load() {
			w.WriteHeader(http.StatusGone)
			return
		}
		rc.took.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.Close)
	return rc
}

// publishN publishes n invoice.paid events for acme and returns their ids.
func (s *site) publishN(n int, subject string) []string {
	s.t.Helper()
	var ids []string
	for i := range n {
		var out struct{ ID string }
		if st := s.api(s.keys["acme-publisher"], http.MethodPost, "/api/v1/events", map[string]any{"type": "invoice.paid", "subject": fmt.Sprintf("%s%d", subject, i), "data": map[string]any{"n": i}}, &out); st != http.StatusAccepted {
			s.t.Fatalf("publish: %d", st)
		}
		ids = append(ids, out.ID)
	}
	return ids
}

// waitStates waits until the endpoint has n deliveries, each in state.
// A delivery that waits out a failing endpoint's 5-minute cooldown (not
// what these tests are about) has its job brought forward.
func (s *site) waitStates(ep string, n int, state string) {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var list struct {
			Data []struct {
				State    string
				Attempts int
				JobID    int64 `json:"job_id"`
			}
		}
		s.api(s.keys["acme"], http.MethodGet, "/api/admin/webhooks/"+ep+"/deliveries", nil, &list)
		done := len(list.Data) == n
		for _, d := range list.Data {
			done = done && d.State == state
			if d.State == "pending" && d.Attempts == 0 && d.JobID != 0 {
				_, _ = s.h.Jobs.JobRetry(s.t.Context(), d.JobID)
			}
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("endpoint %s: deliveries %+v, want %d %s", ep, list.Data, n, state)
		}
		s.waitLog()
	}
}

// waitLog waits for hookd's next log line (a recorded attempt), at most a
// second.
func (s *site) waitLog() {
	select {
	case <-s.logs.Wrote():
	case <-time.After(time.Second):
	}
}

// setValue sets a form field's value in the page (datetime-local fields
// take no keystrokes portably).
func (p *page) setValue(sel, v string) {
	p.t.Helper()
	p.do(chromedp.SetValue(chromedp.CSS(sel), v))
}

// TestRecoverDialog: on the endpoint page, the Recover… dialog re-sends
// the failed deliveries of the window picked; a window too large for one
// request becomes a task whose page shows its progress until done; a bad
// window is refused in the page's language, the dialog left open.
func TestRecoverDialog(t *testing.T) {
	for _, b := range dbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			s := startSite(t, b)
			rc := newSwitchable(t)
			var ep struct{ ID string }
			if st := s.api(s.keys["acme"], http.MethodPost, "/api/admin/webhooks", map[string]any{"url": rc.URL, "event_types": []string{"invoice.*"}}, &ep); st != http.StatusCreated {
				t.Fatalf("create endpoint: %d", st)
			}
			start := time.Now().UTC().Add(-time.Minute).Format("2006-01-02T15:04")
			s.publishN(2, "invoice://a/")
			s.waitStates(ep.ID, 2, "failed")
			rc.up.Store(true)

			p := &page{t: t, tab: browser(t), s: s}
			p.signIn(s.keys["acme"])
			p.open("/admin/webhooks/" + ep.ID)
			p.do(chromedp.Click(chromedp.CSS("#recover summary")), chromedp.WaitVisible(chromedp.ID("recover-since")))
			p.setValue("#recover-since", start)
			if st := p.click("#recover button[type=submit]"); st != http.StatusOK {
				t.Fatalf("recover: %d", st)
			}
			if got := p.text(".notice"); !strings.Contains(got, "Recovered 2 deliveries") {
				t.Fatalf("after the recovery the page says %q", got)
			}
			s.waitStates(ep.ID, 2, "delivered")
			if n := rc.took.Load(); n != 2 {
				t.Fatalf("the receiver took %d deliveries, want the 2 recovered", n)
			}

			// A larger window than one request re-sends: a task.
			s.h.Ops.SetRecoverInline(1)
			p.open("/admin/webhooks/" + ep.ID)
			p.do(chromedp.Click(chromedp.CSS("#recover summary")))
			p.setValue("#recover-since", start)
			p.do(chromedp.Click(chromedp.CSS("#recover input[value=delivered]")), chromedp.Click(chromedp.CSS("#recover input[value=failed]")))
			p.click("#recover button[type=submit]")
			if got := p.path(); !strings.Contains(got, "/admin/webhooks/"+ep.ID+"/recoveries/") {
				t.Fatalf("a background recovery led to %s, want its task page", got)
			}
			// The page reloads itself every 2 s until the task is done.
			// A reload may cut a poll short: poll again until it holds.
			deadline := time.Now().Add(60 * time.Second)
			for {
				ctx := p.timedFor(p, 10*time.Second)
				if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('#recovery-state')?.textContent === 'done'`, chromedp.WithPollingInterval(200*time.Millisecond))); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the recovery's page never said done (%q)", p.text("#recovery"))
				}
			}
			if got := p.text("#recovery-count"); got != "2 of 2 re-sent" {
				t.Errorf("progress says %q, want 2 of 2", got)
			}
			if got := run(p, chromedp.Evaluate[bool](`!!document.querySelector('meta[http-equiv=refresh]')`)); got {
				t.Error("a finished recovery's page still reloads itself")
			}
			s.waitStates(ep.ID, 2, "delivered")

			// A bad window, in Chinese: refused, the dialog open, nothing re-sent.
			if st := s.api(s.keys["acme"], http.MethodPatch, "/api/admin/portal/branding", map[string]any{"locale": "zh-Hans"}, nil); st != http.StatusOK {
				t.Fatalf("set locale: %d", st)
			}
			took := rc.took.Load()
			p.open("/admin/webhooks/" + ep.ID)
			p.do(chromedp.Click(chromedp.CSS("#recover summary")))
			p.setValue("#recover-since", start)
			p.setValue("#recover-until", time.Now().UTC().Add(-2*time.Hour).Format("2006-01-02T15:04"))
			if st := p.click("#recover button[type=submit]"); st != http.StatusUnprocessableEntity {
				t.Fatalf("a window ending before it starts: %d, want 422", st)
			}
			if got := p.text("#recover-error"); got != "开始时间必须早于结束时间。" {
				t.Errorf("the refusal says %q, want it in Chinese", got)
			}
			if open := run(p, chromedp.Evaluate[bool](`document.getElementById('recover').open`)); !open {
				t.Error("the refused dialog is closed")
			}
			p.shoot("recover-dialog-error")
			if n := rc.took.Load(); n != took {
				t.Errorf("a refused recovery sent %d deliveries", n-took)
			}
		})
	}
}

// TestEventsPage: the events page finds the owner's events by type glob,
// subject prefix and window, never another owner's; Send again re-sends
// one to its endpoint and says so.
func TestEventsPage(t *testing.T) {
	for _, b := range dbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			s := startSite(t, b)
			rc := newSwitchable(t)
			rc.up.Store(true)
			var ep struct{ ID string }
			if st := s.api(s.keys["acme"], http.MethodPost, "/api/admin/webhooks", map[string]any{"url": rc.URL, "event_types": []string{"invoice.*", "order.*"}}, &ep); st != http.StatusCreated {
				t.Fatalf("create endpoint: %d", st)
			}
			a := s.publishN(2, "invoice://cus_a/")
			s.publishN(1, "invoice://cus_b/")
			if st := s.api(s.keys["acme-publisher"], http.MethodPost, "/api/v1/events", map[string]any{"type": "order.shipped", "subject": "order://1", "data": map[string]any{}}, nil); st != http.StatusAccepted {
				t.Fatalf("publish: %d", st)
			}
			var bobEvent struct{ ID string }
			if st := s.api(s.keys["bob"], http.MethodPost, "/api/v1/events", map[string]any{"type": "invoice.paid", "subject": "invoice://cus_a/bob", "data": map[string]any{}}, &bobEvent); st != http.StatusAccepted {
				t.Fatalf("bob's publish: %d", st)
			}
			s.waitStates(ep.ID, 4, "delivered")

			p := &page{t: t, tab: browser(t), s: s}
			p.signIn(s.keys["acme"])
			p.open("/admin/events")
			rows := func() []string {
				return run(p, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#event-rows tr[data-event]')].map(r => r.dataset.event)`))
			}
			if got := rows(); len(got) != 4 || strings.Contains(strings.Join(got, " "), bobEvent.ID) {
				t.Fatalf("all of acme's events: %v, want its 4 and none of bob's", got)
			}
			p.do(chromedp.SendKeys(chromedp.ID("e-type"), "invoice.*"), chromedp.SendKeys(chromedp.ID("e-subject"), "invoice://cus_a/"))
			p.click("form.filters button[type=submit]")
			if got := rows(); len(got) != 2 || got[0] != a[1] || got[1] != a[0] {
				t.Fatalf("invoice.* about cus_a: %v, want %v newest first", got, a)
			}
			p.shoot("events")
			// Send the first again: the receiver takes it once more.
			before := rc.took.Load()
			p.click(fmt.Sprintf("tr[data-event=%q] button", a[1]))
			if got := p.text("#events-notice"); got != "Sent again to 1." {
				t.Errorf("after the resend the page says %q", got)
			}
			if got := rows(); len(got) != 2 {
				t.Errorf("after the resend the search was not kept: %v", got)
			}
			deadline := time.Now().Add(30 * time.Second)
			for rc.took.Load() != before+1 && time.Now().Before(deadline) {
				s.waitLog()
			}
			if n := rc.took.Load(); n != before+1 {
				t.Fatalf("the receiver took %d after the resend, want 1", n-before)
			}
			// A window with nothing in it; a bad one.
			p.open("/admin/events?until=2020-01-01T00:00")
			if got := rows(); len(got) != 0 {
				t.Errorf("events before 2020: %v", got)
			}
			if st := p.open("/admin/events?since=2026-01-02T00:00&until=2026-01-01T00:00"); st != http.StatusUnprocessableEntity {
				t.Errorf("a window ending before it starts: %d, want 422", st)
			}
			if got := p.text("#events-error"); !strings.Contains(got, "must be before its end") {
				t.Errorf("the refusal says %q", got)
			}
		})
	}
}
