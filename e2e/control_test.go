package e2e_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/app"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/hookdtest"
	"github.com/hookd/hookd/webhook"
)

// TestReceiverControl: a receiver's webhook-delivery header. abort-message
// ends that delivery at once (a 500 without it is retried); disable
// disables the endpoint with its reason, sends hookd.endpoint.disabled to
// the owner's other endpoints, and the next events go nowhere; any other
// value changes nothing and is logged once. Each is recorded in the
// delivery log and counted.
func TestReceiverControl(t *testing.T) {
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		logs := hookdtest.NewLogs()
		b := setup(t, backend, setupOpts{mutate: func(c *app.Config) { c.Log = logs.Logger(slog.LevelDebug) }})
		b.registerType("order.created")
		rc := newReceiver(t)
		rc.setRespond(func(r *http.Request, _ int) (int, http.Header) {
			h := http.Header{}
			switch {
			case strings.Contains(r.URL.Path, "/abort"):
				webhook.AnswerAbortMessage(h)
				return http.StatusInternalServerError, h
			case strings.Contains(r.URL.Path, "/stop"):
				webhook.AnswerDisable(h)
				return http.StatusOK, h
			case strings.Contains(r.URL.Path, "/odd"):
				h.Set("webhook-delivery", "pause")
				return http.StatusOK, h
			case strings.Contains(r.URL.Path, "/notified"):
				return http.StatusNoContent, nil
			}
			return http.StatusInternalServerError, nil
		})
		aborts := b.endpoint(rc.URL+"/abort", "order.*")
		plain := b.endpoint(rc.URL+"/plain", "order.*")
		stops := b.endpoint(rc.URL+"/stop", "order.*")
		odd := b.endpoint(rc.URL+"/odd", "order.*")
		watcher := b.endpoint(rc.URL+"/notified", "hookd.endpoint.disabled")

		first := b.publish("order.created", `{"n":1}`)
		d := b.waitDelivery(aborts.ID, first, 20*time.Second, func(d deliveryOut) bool { return d.State == "failed" })
		if d.Attempts != 1 || !strings.Contains(d.LastError, "abort-message") {
			t.Errorf("aborted delivery %+v, want failed after 1 attempt, its error naming abort-message", d)
		}
		d = b.waitDelivery(plain.ID, first, 20*time.Second, func(d deliveryOut) bool { return d.Attempts == 1 })
		if d.State != "pending" {
			t.Errorf("a 500 without the header: %+v, want pending (retried)", d)
		}
		d = b.waitDelivery(stops.ID, first, 20*time.Second, func(d deliveryOut) bool { return d.State == "delivered" })
		if !strings.Contains(d.LastError, "asked to stop") {
			t.Errorf("the disabling answer is not in the log: %+v", d)
		}
		ep := b.getEndpoint(stops.ID)
		if ep.Enabled || ep.State != "disabled" || !strings.Contains(ep.DisabledReason, "the receiver asked to stop") {
			t.Errorf("endpoint after webhook-delivery: disable: %+v", ep)
		}
		b.waitDelivery(odd.ID, first, 20*time.Second, func(d deliveryOut) bool { return d.State == "delivered" })
		if ep := b.getEndpoint(odd.ID); !ep.Enabled {
			t.Errorf("an unknown control disabled the endpoint: %+v", ep)
		}

		// The owner's other endpoint hears of it, with the reason.
		if !eventually(20*time.Second, func() bool {
			for _, r := range rc.receipts() {
				if strings.Contains(r.Path, "/notified") && verify(t, watcher.Secret, r).Type == "hookd.endpoint.disabled" &&
					strings.Contains(string(r.Body), stops.ID) && strings.Contains(string(r.Body), "asked to stop") {
					return true
				}
			}
			return false
		}) {
			t.Error("no hookd.endpoint.disabled notification with the reason reached the owner's other endpoint")
		}

		// The next event goes nowhere near the disabled endpoint.
		second := b.publish("order.created", `{"n":2}`)
		b.waitDelivery(odd.ID, second, 20*time.Second, func(d deliveryOut) bool { return d.State == "delivered" })
		for _, d := range b.deliveries(stops.ID) {
			if d.EventID == second {
				t.Errorf("the disabled endpoint got a delivery of the next event: %+v", d)
			}
		}

		// Two answers with an unknown control, one log line about it.
		if n := strings.Count(logs.String(), "ignoring an unknown webhook-delivery control"); n != 1 {
			t.Errorf("an unknown control answered twice was logged %d times, want once", n)
		}

		rec := httptest.NewRecorder()
		b.h.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		for _, want := range []string{
			`hookd_receiver_controls_total{control="abort-message"} 1`,
			`hookd_receiver_controls_total{control="disable"} 1`,
			`hookd_receiver_controls_total{control="ignored"} 2`,
		} {
			if !strings.Contains(rec.Body.String(), want) {
				t.Errorf("metrics lack %s", want)
			}
		}
	})
}
