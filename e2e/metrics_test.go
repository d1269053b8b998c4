package e2e_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/hookd/hookd/internal/dbtest"
)

// scrape GETs hookd's metrics handler and parses Prometheus' text format.
func (b *bundle) scrape() map[string]*dto.MetricFamily {
	b.t.Helper()
	rec := httptest.NewRecorder()
	b.h.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		b.t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		b.t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// sample finds the metric of family name whose labels include want.
func sample(fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	f := fams[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		return m
	}
	return nil
}

func counter(fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	if m := sample(fams, name, labels); m != nil && m.Counter != nil {
		return m.Counter.GetValue()
	}
	return -1
}

func TestMetricsCountWhatHappened(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		// hookd's clock an hour ahead of River's: the retry's next attempt
		// (5 s on hookd's clock) never comes due during the test, however
		// slow the machine.
		b.clock.Advance(time.Hour)
		ok, failing, gone := newReceiver(t), newReceiver(t), newReceiver(t)
		failing.setRespond(func(*http.Request, int) (int, http.Header) { return 500, nil })
		gone.setRespond(func(*http.Request, int) (int, http.Header) { return 410, nil })
		for _, typ := range []string{"m.ok", "m.retry", "m.discard"} {
			b.registerType(typ)
		}
		epOK := b.endpoint(ok.URL, "m.ok")
		epRetry := b.endpoint(failing.URL, "m.retry")
		epGone := b.endpoint(gone.URL, "m.discard")
		okEvents := []string{b.publish("m.ok", `{"n":1}`), b.publish("m.ok", `{"n":2}`)}
		retryEvent := b.publish("m.retry", `{}`)
		goneEvent := b.publish("m.discard", `{}`)
		for _, id := range okEvents {
			b.waitDelivery(epOK.ID, id, 10*time.Second, func(d deliveryOut) bool { return d.State == "delivered" })
		}
		b.waitDelivery(epRetry.ID, retryEvent, 10*time.Second, func(d deliveryOut) bool { return d.Attempts == 1 })
		b.waitDelivery(epGone.ID, goneEvent, 10*time.Second, func(d deliveryOut) bool { return d.State == "failed" })
		// Stop the workers so nothing else happens.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.h.Stop(ctx); err != nil {
			t.Fatal(err)
		}

		fams := b.scrape()
		for outcome, want := range map[string]float64{"delivered": 2, "retry": 1, "discarded": 1, "snoozed": 0, "failed": 0} {
			if got := counter(fams, "hookd_deliveries_total", map[string]string{"profile": "standard", "outcome": outcome}); got != want {
				t.Errorf("hookd_deliveries_total{outcome=%q} = %v, want %v", outcome, got, want)
			}
		}
		// 4 events, and one hookd.endpoint.failing notification for each
		// of the two endpoints that started failing.
		if got := counter(fams, "hookd_events_published_total", map[string]string{"profile": "standard"}); got != 6 {
			t.Errorf("hookd_events_published_total = %v, want 6 (4 events + 2 failure notifications)", got)
		}
		if m := sample(fams, "hookd_attempt_duration_seconds", map[string]string{"profile": "standard"}); m == nil || m.Histogram.GetSampleCount() != 4 {
			t.Errorf("hookd_attempt_duration_seconds observations = %v, want 4", m)
		}
		if m := sample(fams, "hookd_delivery_latency_seconds", map[string]string{"profile": "standard"}); m == nil || m.Histogram.GetSampleCount() != 2 {
			t.Errorf("hookd_delivery_latency_seconds observations = %v, want 2", m)
		}
		// Scrape-time gauges: the retry is pending (not yet due), two
		// endpoints are failing, one healthy; River's depth by state.
		gauge := func(name string, labels map[string]string) float64 {
			if m := sample(fams, name, labels); m != nil && m.Gauge != nil {
				return m.Gauge.GetValue()
			}
			return -1
		}
		if got := gauge("hookd_deliveries_pending", nil); got != 1 {
			t.Errorf("hookd_deliveries_pending = %v, want 1", got)
		}
		// The retry comes due 5 s (of hookd's clock) after its attempt: on
		// a slow run it is due by now, its age at most the test's length.
		if got := gauge("hookd_oldest_due_delivery_age_seconds", nil); got < 0 || got > 120 {
			t.Errorf("hookd_oldest_due_delivery_age_seconds = %v, want 0 up to the test's length", got)
		}
		for state, want := range map[string]float64{"healthy": 1, "failing": 2, "disabled": 0} {
			if got := gauge("hookd_endpoints", map[string]string{"state": state}); got != want {
				t.Errorf("hookd_endpoints{state=%q} = %v, want %v", state, got, want)
			}
		}
		// River's depth: every state of both queues is reported, and the
		// retry's job waits in the deliver queue.
		depth := 0.0
		for _, st := range []string{"available", "scheduled", "retryable"} {
			for _, q := range []string{"fanout", "deliver"} {
				got := gauge("hookd_river_jobs", map[string]string{"queue": q, "state": st})
				if got < 0 {
					t.Errorf("hookd_river_jobs{queue=%q,state=%q} missing", q, st)
				}
				if q == "deliver" {
					depth += got
				}
			}
		}
		if depth < 1 {
			t.Errorf("deliver queue depth = %v, want the retry's job (%v)", depth, fams["hookd_river_jobs"])
		}
		if fams["go_goroutines"] == nil || fams["process_cpu_seconds_total"] == nil {
			t.Error("Go and process collectors missing")
		}
		// Every hookd series the docs, the alert rules and the dashboard
		// name exists.
		for _, doc := range []string{"../docs/operations/metrics.md", "../docs/operations/alerts.yaml", "../docs/operations/grafana-dashboard.json"} {
			b, err := os.ReadFile(doc)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range regexp.MustCompile(`hookd_[a-z_]+[a-z]`).FindAllString(string(b), -1) {
				base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count"), "_sum")
				if fams[base] == nil {
					t.Errorf("%s names %s, which /metrics does not have", doc, name)
				}
			}
		}
		// No owner data by default.
		for name, f := range fams {
			for _, m := range f.Metric {
				for _, l := range m.Label {
					if l.GetName() == "owner" || l.GetName() == "endpoint" || strings.Contains(l.GetValue(), "ep_") {
						t.Errorf("%s has owner data %s=%s without --metrics-owner-labels", name, l.GetName(), l.GetValue())
					}
				}
			}
		}
	})
}
