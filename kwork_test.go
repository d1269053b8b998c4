package hookd_test

// Tests of seed 002, the kwork profile, end to end: real deliveries through
// hookd on SQLite and PostgreSQL to real HTTP receivers.

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/hookd/hookd"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/egress"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/profile"
	"github.com/hookd/hookd/webhook"
)

// Owner attributes of two apps: a backend (integration) app and an app with
// pages.
var (
	shopApp = map[string]string{"app": "shop-sync", "environment": "live", "app_kind": "integration", "api_version": "2026-10-28"}
	pageApp = map[string]string{"app": "shop-pages", "environment": "test", "app_kind": "page", "api_version": "2026-10-28"}
)

// verifyPlainHMAC is seed 002's reference receiver ("原生 HMAC 验签参考实现"),
// copied verbatim.
func verifyPlainHMAC(body []byte, sigHeader, secret string, tolerance time.Duration) bool {
	var timestampStr, signature string
	for _, part := range strings.Split(sigHeader, ",") {
		kv := strings.SplitN(part, "=", 2)
		if len(kv) == 2 {
			switch kv[0] {
			case "t":
				timestampStr = kv[1]
			case "v1":
				signature = kv[1]
			}
		}
	}
	ts, err := strconv.ParseInt(timestampStr, 10, 64)
	if err != nil || time.Since(time.Unix(ts, 0)).Abs() > tolerance {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(timestampStr + "."))
	mac.Write(body)
	expected := hex.EncodeToString(mac.Sum(nil))
	return hmac.Equal([]byte(expected), []byte(signature))
}

// kworkOwner creates a kwork owner with attrs and returns a bundle that acts
// with that owner's admin key (same hookd, same clock).
func (b *bundle) kworkOwner(id string, attrs map[string]string) *bundle {
	b.t.Helper()
	ctx := context.Background()
	if _, err := b.h.Ops.CreateOwner(ctx, id, "kwork", attrs); err != nil {
		b.t.Fatalf("create kwork owner %s: %v", id, err)
	}
	k, err := b.h.Ops.CreateKey(ctx, id, owner.Admin)
	if err != nil {
		b.t.Fatal(err)
	}
	c := *b
	c.key = k.Secret
	return &c
}

// subscribe creates an endpoint listing exactly globs (none is allowed) plus
// any extra fields (max_in_flight …).
func (b *bundle) subscribe(url string, globs []string, extra map[string]any) endpointOut {
	b.t.Helper()
	if globs == nil {
		globs = []string{}
	}
	body := map[string]any{"url": url, "event_types": globs}
	for k, v := range extra {
		body[k] = v
	}
	var ep endpointOut
	b.must(201, "POST", "/api/admin/webhooks", body, &ep)
	return ep
}

// publishFor publishes one event caused by tenant.
func (b *bundle) publishFor(typ, tenant, data string) string {
	b.t.Helper()
	var out struct {
		ID string `json:"id"`
	}
	b.must(202, "POST", "/api/v1/events", map[string]any{"type": typ, "tenant": tenant, "subject": "test://x", "data": json.RawMessage(data)}, &out)
	return out.ID
}

// publishMany publishes n events of typ in one batch and returns their ids.
func (b *bundle) publishMany(typ string, n int) []string {
	b.t.Helper()
	evs := make([]map[string]any, n)
	for i := range evs {
		evs[i] = map[string]any{"type": typ, "tenant": "acme_corp", "data": map[string]int{"n": i}}
	}
	var out struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	b.must(202, "POST", "/api/v1/events/batch", map[string]any{"events": evs}, &out)
	ids := make([]string, len(out.Data))
	for i, p := range out.Data {
		ids[i] = p.ID
	}
	return ids
}

// sendTest calls webhooks.send_test and returns the test event's id.
func (b *bundle) sendTest(epID string) string {
	b.t.Helper()
	var sent struct {
		EventID string `json:"event_id"`
		Type    string `json:"type"`
	}
	b.must(202, "POST", "/api/admin/webhooks/"+epID+"/send_test", nil, &sent)
	if sent.Type != profile.OpenPing {
		b.t.Fatalf("send_test sent %q, want open.ping", sent.Type)
	}
	return sent.EventID
}

// deliveryOf returns the endpoint's delivery record of eventID (nil if none).
func (b *bundle) deliveryOf(epID, eventID string) *deliveryOut {
	b.t.Helper()
	for _, d := range b.deliveries(epID) {
		if d.EventID == eventID {
			return &d
		}
	}
	return nil
}

// fanoutNow runs the fanout of eventID synchronously. Fanout is idempotent,
// so afterwards the event's delivery records are final whether or not the
// River job ran first: a test can assert who did NOT get the event without
// waiting for something not to happen.
func (b *bundle) fanoutNow(eventID string) {
	b.t.Helper()
	if err := b.h.Engine.Fanout(context.Background(), eventID); err != nil {
		b.t.Fatalf("fanout %s: %v", eventID, err)
	}
}

// exhaust spends a kwork delivery's sends, each backoff cut short, and
// returns its failed record: kwork retries every non-2xx, so a delivery a
// receiver keeps refusing ends failed only after its 6th send.
func (b *bundle) exhaust(epID, eventID string) deliveryOut {
	b.t.Helper()
	for n := 1; n <= profile.KworkRetry.MaxAttempts; n++ {
		d := b.waitDelivery(epID, eventID, wait, func(d deliveryOut) bool { return d.Attempts >= n })
		if d.State == "failed" {
			return d
		}
		b.waitJob(d.JobID, waitingRetry)
		b.retryNow(d.JobID)
	}
	b.t.Fatalf("delivery of %s to %s not failed after %d sends", eventID, epID, profile.KworkRetry.MaxAttempts)
	return deliveryOut{}
}

// kworkEnvelope is seed 002's envelope.
type kworkEnvelope struct {
	ID          string          `json:"id"`
	Type        string          `json:"type"`
	CreatedAt   string          `json:"createdAt"`
	APIVersion  string          `json:"apiVersion"`
	Tenant      string          `json:"tenant"`
	Environment string          `json:"environment"`
	App         string          `json:"app"`
	Data        json.RawMessage `json:"data"`
}

// checkKwork checks one kwork request the way seed 002 says a receiver
// does (the reference verifyPlainHMAC and the SDK's VerifyWebhook), that it
// has the three X-Kwork headers and no standard ones, and that its body is
// exactly the eight-field envelope. It returns the envelope.
func checkKwork(t *testing.T, secret string, r receipt) kworkEnvelope {
	t.Helper()
	sig := r.Header.Get("X-Kwork-Signature")
	if !verifyPlainHMAC(r.Body, sig, secret, 300*time.Second) {
		t.Fatalf("seed's verifyPlainHMAC rejects the delivery: %s %s", sig, r.Body)
	}
	if _, err := webhook.VerifyWebhook(r.Body, sig, secret, 300*time.Second); err != nil {
		t.Fatalf("webhook.VerifyWebhook: %v", err)
	}
	for _, h := range []string{"Webhook-Id", "Webhook-Timestamp", "Webhook-Signature"} {
		if r.Header.Get(h) != "" {
			t.Fatalf("kwork delivery carries the standard header %s", h)
		}
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(r.Body, &keys); err != nil || len(keys) != 8 {
		t.Fatalf("envelope is not the 8-field kwork envelope: %s", r.Body)
	}
	var env kworkEnvelope
	if err := json.Unmarshal(r.Body, &env); err != nil {
		t.Fatal(err)
	}
	if r.Header.Get("X-Kwork-Event") != env.Type {
		t.Fatalf("X-Kwork-Event %q, envelope type %q", r.Header.Get("X-Kwork-Event"), env.Type)
	}
	if d := r.Header.Get("X-Kwork-Delivery"); !strings.HasPrefix(d, "dlv_") {
		t.Fatalf("X-Kwork-Delivery %q is not a delivery id", d)
	}
	if _, err := time.Parse(time.RFC3339, env.CreatedAt); err != nil || !strings.HasSuffix(env.CreatedAt, "Z") {
		t.Fatalf("createdAt %q is not RFC 3339 UTC", env.CreatedAt)
	}
	return env
}

// sigTime returns the t of an X-Kwork-Signature.
func sigTime(t *testing.T, r receipt) int64 {
	t.Helper()
	for _, part := range strings.Split(r.Header.Get("X-Kwork-Signature"), ",") {
		if v, ok := strings.CutPrefix(part, "t="); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no t= in %q", r.Header.Get("X-Kwork-Signature"))
	return 0
}

func compact(t *testing.T, s string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// seedReceiver runs seed 002's Go webhookHandler, transcribed: the SDK call
// raise.VerifyWebhook is hookd's webhook.VerifyWebhook (same signature), and
// the reference verifyPlainHMAC must agree with it on every request.
type seedReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	secret   string
	accepted []receipt
	events   []webhook.Event
	rejected []string
}

func newSeedReceiver(t *testing.T) *seedReceiver {
	s := &seedReceiver{}
	s.Server = httptest.NewServer(http.HandlerFunc(s.webhookHandler))
	t.Cleanup(s.Close)
	return s
}

func (s *seedReceiver) setSecret(secret string) {
	s.mu.Lock()
	s.secret = secret
	s.mu.Unlock()
}

func (s *seedReceiver) webhookHandler(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "无法读取正文", http.StatusBadRequest)
		return
	}

	sigHeader := r.Header.Get("X-Kwork-Signature")
	s.mu.Lock()
	secret := s.secret // "${WEBHOOK_SECRET}"
	s.mu.Unlock()

	// 使用 SDK 验签
	event, err := webhook.VerifyWebhook(body, sigHeader, secret, 300*time.Second)
	if err != nil {
		s.reject("SDK: " + err.Error())
		http.Error(w, "验签失败", http.StatusUnauthorized)
		return
	}
	// 原生 HMAC 验签参考实现
	if !verifyPlainHMAC(body, sigHeader, secret, 300*time.Second) {
		s.reject("verifyPlainHMAC: " + sigHeader)
		http.Error(w, "验签失败", http.StatusUnauthorized)
		return
	}
	_ = event // event.Type、event.Data：按 event.ID 去重
	s.mu.Lock()
	s.accepted = append(s.accepted, receipt{Path: r.URL.Path, Header: r.Header.Clone(), Body: body, At: time.Now()})
	s.events = append(s.events, event)
	s.mu.Unlock()

	w.WriteHeader(http.StatusOK)
}

func (s *seedReceiver) reject(why string) {
	s.mu.Lock()
	s.rejected = append(s.rejected, why)
	s.mu.Unlock()
}

// TestKworkSeedReceiverAcceptsEveryDelivery: a receiver written exactly as
// seed 002 tells developers to write one accepts every kind of kwork
// delivery hookd makes, and the envelope carries what the seed says.
func TestKworkSeedReceiverAcceptsEveryDelivery(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, eng dbtest.Engine) {
		b := setup(t, eng)
		shop := b.kworkOwner("shop", shopApp)
		seed := newSeedReceiver(t)
		shop.registerType("order.paid")
		shop.registerType("order.refunded")
		ep := shop.subscribe(seed.URL+"/webhooks", []string{"order.*"}, nil)
		seed.setSecret(ep.Secret)

		type sent struct{ id, typ, tenant, data string }
		var all []sent
		for _, e := range []struct{ typ, tenant, data string }{
			{"app.installed", "acme_corp", `{"version": "1.0.0", "scopes": ["tables.base:read", "platform:ping"]}`},
			{"app.upgraded", "acme_corp", `{"from": "1.0.0", "to": "1.1.0", "scopes": ["tables.base:read"]}`},
			{"app.scopes_changed", "globex", `{"scopes": ["tables.base:read"], "added": [], "removed": ["platform:ping"]}`},
			{"order.paid", "acme_corp", `{"order": "o_1", "note": "租户 \"quoted\" \u2028"}`},
			{"order.refunded", "租户_2", `{"order": "o_1"}`},
			{"app.uninstalled", "acme_corp", `{}`},
		} {
			all = append(all, sent{shop.publishFor(e.typ, e.tenant, e.data), e.typ, e.tenant, compact(t, e.data)})
		}
		ping := shop.sendTest(ep.ID)
		all = append(all, sent{id: ping, typ: "open.ping"})

		byID := map[string]sent{}
		for _, s := range all {
			byID[s.id] = s
			d := shop.waitDelivery(ep.ID, s.id, wait, func(d deliveryOut) bool { return d.State != "pending" })
			if d.State != "delivered" || d.LastStatus != 200 || d.Attempts != 1 {
				seed.mu.Lock()
				rejected := slices.Clone(seed.rejected)
				seed.mu.Unlock()
				t.Fatalf("%s not accepted by the seed's receiver: %+v; rejections: %v", s.typ, d, rejected)
			}
		}
		seed.mu.Lock()
		accepted, events, rejected := seed.accepted, seed.events, seed.rejected
		seed.mu.Unlock()
		if len(rejected) != 0 || len(accepted) != len(all) {
			t.Fatalf("accepted %d of %d; rejected: %v", len(accepted), len(all), rejected)
		}
		for i, r := range accepted {
			env := checkKwork(t, ep.Secret, r)
			s, ok := byID[env.ID]
			if !ok || events[i].ID != env.ID {
				t.Fatalf("unexpected event %s", env.ID)
			}
			if env.Type != s.typ || env.App != "shop-sync" || env.Environment != "live" || env.APIVersion != "2026-10-28" || env.Tenant != s.tenant {
				t.Fatalf("envelope of %s: %+v", s.typ, env)
			}
			if s.data != "" && string(env.Data) != s.data {
				t.Fatalf("data of %s: %s, want %s", s.typ, env.Data, s.data)
			}
			created, _ := time.Parse(time.RFC3339, env.CreatedAt)
			near(t, "createdAt", created, time.Now(), time.Minute)
			if d := shop.deliveryOf(ep.ID, env.ID); d == nil || r.Header.Get("X-Kwork-Delivery") != d.ID {
				t.Fatalf("X-Kwork-Delivery %q is not the delivery record's id (%+v)", r.Header.Get("X-Kwork-Delivery"), d)
			}
		}

		// The transcription is not vacuous: it refuses a wrong secret, a
		// changed body and a timestamp more than 300 s old.
		r := accepted[0]
		sig := r.Header.Get("X-Kwork-Signature")
		stale := webhook.SignKwork(ep.Secret, time.Now().Add(-301*time.Second).Unix(), r.Body)
		fresh := webhook.SignKwork(ep.Secret, time.Now().Unix(), r.Body)
		if verifyPlainHMAC(r.Body, sig, ep.Secret+"x", 300*time.Second) ||
			verifyPlainHMAC(append(bytes.Clone(r.Body), ' '), sig, ep.Secret, 300*time.Second) ||
			verifyPlainHMAC(r.Body, stale, ep.Secret, 300*time.Second) ||
			!verifyPlainHMAC(r.Body, fresh, ep.Secret, 300*time.Second) {
			t.Fatal("verifyPlainHMAC decides wrongly on a forged, changed or stale request")
		}
	})
}

// TestKworkRetrySchedule: a receiver that always answers 500 gets 6 sends,
// 30s, 2m, 10m, 1h, 6h apart, each with the same X-Kwork-Delivery and body
// and a fresh signature; then the delivery is failed and the job discarded.
func TestKworkRetrySchedule(t *testing.T) {
	t.Parallel()
	backoffs := []time.Duration{30 * time.Second, 2 * time.Minute, 10 * time.Minute, time.Hour, 6 * time.Hour}
	if got, want := profile.KworkRetry.Total(), 7*time.Hour+12*time.Minute+30*time.Second; got != want {
		t.Fatalf("kwork schedule totals %s, want %s", got, want)
	}
	forEngine(t, func(t *testing.T, eng dbtest.Engine) {
		b := setup(t, eng)
		shop := b.kworkOwner("shop", shopApp)
		rc := newReceiver(t)
		rc.setRespond(status(500))
		shop.registerType("order.paid")
		ep := shop.subscribe(rc.URL, []string{"order.paid"}, nil)
		id := shop.publishFor("order.paid", "acme_corp", `{"order":"o_1"}`)

		var first receipt
		var prevT int64
		var schedule time.Duration
		for n := 1; n <= 6; n++ {
			r := rc.waitFor(t, n, wait)[n-1]
			sentAt := b.clock.Now() // hookd's clock at (just after) this send
			env := checkKwork(t, ep.Secret, r)
			if n == 1 {
				first = r
				if env.ID != id {
					t.Fatalf("envelope id %s, want %s", env.ID, id)
				}
			} else {
				if r.Header.Get("X-Kwork-Delivery") != first.Header.Get("X-Kwork-Delivery") || !bytes.Equal(r.Body, first.Body) {
					t.Fatalf("send %d changed X-Kwork-Delivery or the body", n)
				}
				// The clock moved 2 s since the last send: t must follow it.
				if ts := sigTime(t, r); ts < prevT+2 || r.Header.Get("X-Kwork-Signature") == first.Header.Get("X-Kwork-Signature") {
					t.Fatalf("send %d signed at t=%d after t=%d: signature not recomputed", n, ts, prevT)
				}
			}
			prevT = sigTime(t, r)

			d := shop.waitDelivery(ep.ID, id, wait, func(d deliveryOut) bool {
				return d.Attempts == n && (n < 6 || d.State == "failed")
			})
			if d.ID != first.Header.Get("X-Kwork-Delivery") || d.LastStatus != 500 {
				t.Fatalf("delivery record after send %d: %+v", n, d)
			}
			j := b.waitJob(d.JobID, func(j *rivertype.JobRow) bool { return waitingRetry(j) || j.FinalizedAt != nil })
			if j.MaxAttempts != 6 {
				t.Fatalf("job max attempts %d, want 6", j.MaxAttempts)
			}
			if n == 6 {
				if j.State != rivertype.JobStateDiscarded || !strings.Contains(d.LastError, "attempts exhausted") {
					t.Fatalf("after 6 sends: job %s, delivery %+v", j.State, d)
				}
				break
			}
			if j.FinalizedAt != nil || j.Attempt != n || d.State != "pending" {
				t.Fatalf("after send %d: job %s attempt %d, delivery %+v", n, j.State, j.Attempt, d)
			}
			near(t, "retry "+strconv.Itoa(n)+" scheduled at", j.ScheduledAt, sentAt.Add(backoffs[n-1]), 2*time.Second)
			if d.NextAttemptAt == nil {
				t.Fatalf("pending delivery shows no next attempt: %+v", d)
			}
			near(t, "next_attempt_at", *d.NextAttemptAt, sentAt.Add(backoffs[n-1]), 2*time.Second)
			schedule += j.ScheduledAt.Sub(sentAt)
			b.clock.Advance(2 * time.Second)
			b.retryNow(d.JobID)
		}
		if got := len(rc.receipts()); got != 6 {
			t.Fatalf("%d sends, want 6", got)
		}
		if d := schedule - profile.KworkRetry.Total(); d < -10*time.Second || d > 10*time.Second {
			t.Fatalf("scheduled waits total %s, want %s", schedule, profile.KworkRetry.Total())
		}
	})
}

// TestKworkTimeoutRetries: no complete answer within the HTTP timeout (10 s;
// shortened here) is a failed send, retried after 30 s.
func TestKworkTimeoutRetries(t *testing.T) {
	t.Parallel()
	if egress.DefaultTimeout != 10*time.Second || delivery.JobTimeout != 15*time.Second {
		t.Fatalf("timeouts %s/%s, want 10s inside 15s", egress.DefaultTimeout, delivery.JobTimeout)
	}
	forEngine(t, func(t *testing.T, eng dbtest.Engine) {
		b := setup(t, eng, setupOpts{mutate: func(c *hookd.Config) { c.HTTPTimeout = 300 * time.Millisecond }})
		shop := b.kworkOwner("shop", shopApp)
		rc := newReceiver(t)
		rc.setRespond(func(r *http.Request, _ int) (int, http.Header) {
			select { // hold until hookd gives up
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return 200, nil
		})
		shop.registerType("order.paid")
		ep := shop.subscribe(rc.URL, []string{"order.paid"}, nil)
		id := shop.publishFor("order.paid", "acme_corp", `{}`)
		first := rc.waitFor(t, 1, wait)[0]
		d := shop.waitDelivery(ep.ID, id, wait, func(d deliveryOut) bool { return d.Attempts == 1 })
		if d.State != "pending" || !strings.Contains(d.LastError, "timeout") {
			t.Fatalf("after a timeout: %+v", d)
		}
		j := b.waitJob(d.JobID, waitingRetry)
		near(t, "retry after timeout", j.ScheduledAt, first.At.Add(300*time.Millisecond+30*time.Second), 2*time.Second)
		rc.setRespond(status(200))
		b.retryNow(d.JobID)
		second := rc.waitFor(t, 2, wait)[1]
		if second.Header.Get("X-Kwork-Delivery") != first.Header.Get("X-Kwork-Delivery") || !bytes.Equal(second.Body, first.Body) {
			t.Fatal("the retry after a timeout changed X-Kwork-Delivery or the body")
		}
		checkKwork(t, ep.Secret, second)
		if d := shop.waitDelivery(ep.ID, id, wait, func(d deliveryOut) bool { return d.State == "delivered" }); d.Attempts != 2 {
			t.Fatalf("delivered %+v", d)
		}
	})
}

// TestKworkDeliveryLogWindow: a subscription's log lists its newest 50
// deliveries: type, time, attempts, last status or error, state — no
// duration, no body.
func TestKworkDeliveryLogWindow(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, eng dbtest.Engine) {
		b := setup(t, eng)
		shop := b.kworkOwner("shop", shopApp)
		rc := newReceiver(t)
		rc.setRespond(func(r *http.Request, _ int) (int, http.Header) {
			switch r.Header.Get("X-Kwork-Event") {
			case "order.reject":
				return 400, nil
			case "order.flaky":
				return 500, nil
			}
			return 200, nil
		})
		for _, typ := range []string{"order.created", "order.reject", "order.flaky"} {
			shop.registerType(typ)
		}
		ep := shop.subscribe(rc.URL, []string{"order.*"}, nil)
		const bulk = 3 * wait // 60 deliveries on a loaded CI machine
		allDelivered := func(n int) {
			t.Helper()
			var ds []deliveryOut
			ok := eventually(bulk, func() bool {
				ds = shop.deliveries(ep.ID)
				done := len(ds) == n
				for _, d := range ds {
					done = done && d.State == "delivered"
				}
				return done
			})
			if !ok {
				t.Fatalf("want %d delivered records, have %+v", n, ds)
			}
		}
		old := shop.publishMany("order.created", 10)
		rc.waitFor(t, 10, bulk)
		allDelivered(10)
		newer := shop.publishMany("order.created", 48)
		rc.waitFor(t, 58, bulk)
		allDelivered(50) // the window already shows only 50 of 58
		reject := shop.publishFor("order.reject", "acme_corp", `{}`)
		shop.exhaust(ep.ID, reject) // a 400 is retried too, until the sends run out
		// Clear the failure so the next event is sent at once, not after the
		// failing endpoint's cooldown.
		shop.must(200, "PATCH", "/api/admin/webhooks/"+ep.ID, map[string]any{"enabled": true}, nil)
		flaky := shop.publishFor("order.flaky", "acme_corp", `{}`)
		shop.waitDelivery(ep.ID, flaky, wait, func(d deliveryOut) bool { return d.Attempts == 1 })

		var page struct {
			Data []map[string]json.RawMessage `json:"data"`
			Next string                       `json:"next"`
		}
		shop.must(200, "GET", "/api/admin/webhooks/"+ep.ID+"/deliveries?limit=500", nil, &page)
		if len(page.Data) != 50 || page.Next != "" {
			t.Fatalf("log has %d records (next %q), want exactly the newest 50", len(page.Data), page.Next)
		}
		want := map[string]bool{reject: true, flaky: true}
		for _, id := range newer {
			want[id] = true
		}
		var prevID string
		var prevAt time.Time
		for i, rec := range page.Data {
			var d struct {
				ID         string    `json:"id"`
				EventID    string    `json:"event_id"`
				EventType  string    `json:"event_type"`
				CreatedAt  time.Time `json:"created_at"`
				Attempts   *int      `json:"attempts"`
				LastStatus int       `json:"last_status"`
				LastError  string    `json:"last_error"`
				State      string    `json:"state"`
			}
			raw, _ := json.Marshal(rec)
			if err := json.Unmarshal(raw, &d); err != nil {
				t.Fatal(err)
			}
			if !want[d.EventID] {
				t.Fatalf("record %d is for %s, not one of the newest 50 (old ones: %v)", i, d.EventID, slices.Contains(old, d.EventID))
			}
			delete(want, d.EventID)
			// Newest first by delivery id: a ULID, so ordered by creation
			// time to the millisecond (ties within one are in any order).
			if i > 0 && (d.ID >= prevID || d.CreatedAt.Truncate(time.Millisecond).After(prevAt.Truncate(time.Millisecond))) {
				t.Fatalf("record %d is not older than record %d", i, i-1)
			}
			prevID, prevAt = d.ID, d.CreatedAt
			if d.EventType == "" || d.CreatedAt.IsZero() || d.Attempts == nil || *d.Attempts < 1 {
				t.Fatalf("record lacks type, time or attempts: %s", raw)
			}
			switch d.EventID {
			case reject:
				if d.State != "failed" || d.LastStatus != 400 || d.LastError == "" {
					t.Fatalf("rejected delivery: %s", raw)
				}
			case flaky:
				if d.State != "pending" || d.LastStatus != 500 || d.LastError == "" {
					t.Fatalf("retrying delivery: %s", raw)
				}
			default:
				if d.State != "delivered" || d.LastStatus != 200 || d.EventType != "order.created" {
					t.Fatalf("delivered record: %s", raw)
				}
			}
			for k := range rec {
				lk := strings.ToLower(k)
				for _, banned := range []string{"duration", "latency", "elapsed", "took", "body", "response", "request", "payload", "data"} {
					if strings.Contains(lk, banned) {
						t.Fatalf("record has field %q: the kwork log keeps no duration and no body", k)
					}
				}
			}
		}
		if newest := string(page.Data[0]["event_id"]); newest != strconv.Quote(flaky) {
			t.Fatalf("newest record is for %s, want the last published event %s", newest, flaky)
		}
		// No paging past the window; smaller pages still work.
		var past struct {
			Data []json.RawMessage `json:"data"`
		}
		var last struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(mustJSON(t, page.Data[49]), &last)
		shop.must(200, "GET", "/api/admin/webhooks/"+ep.ID+"/deliveries?before="+last.ID, nil, &past)
		if len(past.Data) != 0 {
			t.Fatalf("paging past the window returned %d records", len(past.Data))
		}
		if got := len(shop.deliveries(ep.ID)); got != 50 {
			t.Fatalf("default page %d records, want 50", got)
		}
		shop.must(200, "GET", "/api/admin/webhooks/"+ep.ID+"/deliveries?limit=10", nil, &past)
		if len(past.Data) != 10 {
			t.Fatalf("limit=10 gave %d", len(past.Data))
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestKworkRetention: finished records are deleted 30 days after they
// finished; unfinished ones stay; deleting a subscription deletes its
// records at once.
func TestKworkRetention(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, eng dbtest.Engine) {
		b := setup(t, eng)
		shop := b.kworkOwner("shop", shopApp)
		ok, failing, bad := newReceiver(t), newReceiver(t), newReceiver(t)
		failing.setRespond(status(500))
		bad.setRespond(status(400))
		for _, typ := range []string{"order.ok", "order.retry", "order.bad"} {
			shop.registerType(typ)
		}
		epOK := shop.subscribe(ok.URL, []string{"order.ok"}, nil)
		epRetry := shop.subscribe(failing.URL, []string{"order.retry"}, nil)
		epBad := shop.subscribe(bad.URL, []string{"order.bad"}, nil)

		delivered := shop.publishFor("order.ok", "acme_corp", `{}`)
		pending := shop.publishFor("order.retry", "acme_corp", `{}`)
		failed := shop.publishFor("order.bad", "acme_corp", `{}`)
		shop.waitDelivery(epOK.ID, delivered, wait, func(d deliveryOut) bool { return d.State == "delivered" })
		d := shop.waitDelivery(epRetry.ID, pending, wait, func(d deliveryOut) bool { return d.Attempts == 1 })
		b.waitJob(d.JobID, waitingRetry)
		shop.exhaust(epBad.ID, failed)

		prune := func() int64 {
			t.Helper()
			n, _, err := b.h.Engine.Prune(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		ids := func(epID string) []string {
			var out []string
			for _, d := range shop.deliveries(epID) {
				out = append(out, d.EventID)
			}
			return out
		}

		// Just short of 30 days: nothing goes.
		b.clock.Advance(30*24*time.Hour - time.Hour)
		if n := prune(); n != 0 {
			t.Fatalf("pruned %d records younger than 30 days", n)
		}
		recent := shop.publishFor("order.ok", "acme_corp", `{}`)
		shop.waitDelivery(epOK.ID, recent, wait, func(d deliveryOut) bool { return d.State == "delivered" })

		// Past 30 days: the two finished records go; the pending one and the
		// recent one stay.
		b.clock.Advance(2 * time.Hour)
		if n := prune(); n != 2 {
			t.Fatalf("pruned %d records, want the 2 finished over 30 days ago", n)
		}
		if got := ids(epOK.ID); !slices.Equal(got, []string{recent}) {
			t.Fatalf("subscription log after 30 days: %v, want only %s", got, recent)
		}
		if got := ids(epBad.ID); len(got) != 0 {
			t.Fatalf("failed record older than 30 days kept: %v", got)
		}
		if got := shop.deliveries(epRetry.ID); len(got) != 1 || got[0].EventID != pending || got[0].State != "pending" {
			t.Fatalf("unfinished record: %+v", got)
		}

		// Deleting a subscription deletes its records at once, finished or not.
		for _, id := range []string{epOK.ID, epRetry.ID} {
			shop.must(204, "DELETE", "/api/admin/webhooks/"+id, nil, nil)
			left, err := b.h.DB.Q().ListDeliveries(context.Background(), "shop", id, 500, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(left) != 0 {
				t.Fatalf("subscription %s deleted but %d records remain", id, len(left))
			}
			shop.must(404, "GET", "/api/admin/webhooks/"+id+"/deliveries", nil, nil)
		}
	})
}

// TestKworkSendTestAndRedeliver: send_test sends open.ping to that one
// subscription as a new event (not a resend of anything); redeliver re-sends
// a failed delivery with its X-Kwork-Delivery and body unchanged.
func TestKworkSendTestAndRedeliver(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, eng dbtest.Engine) {
		b := setup(t, eng)
		shop := b.kworkOwner("shop", shopApp)
		rc, star, none := newReceiver(t), newReceiver(t), newReceiver(t)
		rc.setRespond(status(400)) // the order is refused until its sends run out
		shop.registerType("order.paid")
		ep := shop.subscribe(rc.URL, []string{"order.paid"}, nil)
		epStar := shop.subscribe(star.URL, []string{"*"}, nil)
		epNone := shop.subscribe(none.URL, nil, nil)

		order := shop.publishFor("order.paid", "acme_corp", `{"order":"o_1"}`)
		failed := shop.exhaust(ep.ID, order)
		sends := profile.KworkRetry.MaxAttempts
		orderReq := rc.waitFor(t, sends, wait)[sends-1]

		rc.setRespond(status(200))
		// The failure made the subscription "failing", and a failing
		// endpoint's new deliveries wait out a 5-minute cooldown — the test
		// event too. Clear it, as an owner who fixed the receiver would.
		shop.must(200, "PATCH", "/api/admin/webhooks/"+ep.ID, map[string]any{"enabled": true}, nil)
		ping := shop.sendTest(ep.ID)
		if ping == order {
			t.Fatal("send_test reused the failed event")
		}
		shop.fanoutNow(ping)

		pd := shop.waitDelivery(ep.ID, ping, wait, func(d deliveryOut) bool { return d.State == "delivered" })
		r := rc.waitFor(t, sends+1, wait)[sends]
		env := checkKwork(t, ep.Secret, r)
		if env.Type != "open.ping" || env.ID != ping || r.Header.Get("X-Kwork-Event") != "open.ping" {
			t.Fatalf("test request: %+v", env)
		}
		if r.Header.Get("X-Kwork-Delivery") != pd.ID || pd.ID == failed.ID || pd.Attempts != 1 {
			t.Fatalf("open.ping delivery %+v reuses the failed delivery %s", pd, failed.ID)
		}
		// Not a redelivery: the failed order stays failed and unsent.
		if d := shop.deliveryOf(ep.ID, order); d == nil || d.State != "failed" || d.Attempts != sends {
			t.Fatalf("send_test touched the failed delivery: %+v", d)
		}
		// That subscription only: the "*" and the empty one have no record of it.
		for _, other := range []string{epStar.ID, epNone.ID} {
			if d := shop.deliveryOf(other, ping); d != nil {
				t.Fatalf("open.ping reached subscription %s: %+v", other, d)
			}
		}
		for _, r := range star.receipts() {
			if r.Header.Get("X-Kwork-Event") == "open.ping" {
				t.Fatal("open.ping reached the * subscription")
			}
		}
		if n := len(none.receipts()); n != 0 {
			t.Fatalf("the subscription listing nothing got %d requests", n)
		}
		// A second send_test is another new event, not a resend.
		if again := shop.sendTest(ep.ID); again == ping {
			t.Fatal("second send_test resent the first test event")
		}
		rc.waitFor(t, sends+2, wait)

		// Redeliver: the failed order again, same delivery id and body.
		var red struct {
			Redelivered int `json:"redelivered"`
		}
		shop.must(202, "POST", "/api/admin/webhooks/"+ep.ID+"/redeliver", nil, &red)
		if red.Redelivered != 1 {
			t.Fatalf("redelivered %d, want 1 (the failed order only)", red.Redelivered)
		}
		d := shop.waitDelivery(ep.ID, order, wait, func(d deliveryOut) bool { return d.State == "delivered" })
		var again receipt
		for _, r := range rc.waitFor(t, sends+3, wait) {
			if r.Header.Get("X-Kwork-Event") == "order.paid" && r.At.After(orderReq.At) {
				again = r
			}
		}
		if again.Body == nil || again.Header.Get("X-Kwork-Delivery") != orderReq.Header.Get("X-Kwork-Delivery") || again.Header.Get("X-Kwork-Delivery") != d.ID || !bytes.Equal(again.Body, orderReq.Body) {
			t.Fatalf("redelivered request differs: %q vs %q", again.Header.Get("X-Kwork-Delivery"), orderReq.Header.Get("X-Kwork-Delivery"))
		}
		checkKwork(t, ep.Secret, again)
		if d.LastStatus != 200 || d.Attempts < 1 {
			t.Fatalf("redelivered record %+v", d)
		}
		if n := len(rc.receipts()); n != sends+3 {
			t.Fatalf("receiver got %d requests, want %d (the order's sends, 2 pings, the redelivered order)", n, sends+3)
		}
	})
}

// lifecycle is seed 002's app lifecycle events with their example data.
var lifecycle = []struct{ typ, data string }{
	{"app.installed", `{"version":"1.0.0","scopes":["tables.base:read"]}`},
	{"app.upgraded", `{"from":"1.0.0","to":"1.1.0","scopes":["tables.base:read"]}`},
	{"app.scopes_changed", `{"scopes":["tables.base:read"],"added":[],"removed":["platform:ping"]}`},
	{"app.uninstalled", `{}`},
}

// TestKworkLifecycleRouting: lifecycle events reach every subscription of
// the app without being listed; app.scopes_changed only an integration app's.
func TestKworkLifecycleRouting(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, eng dbtest.Engine) {
		b := setup(t, eng)
		for _, app := range []struct {
			id    string
			attrs map[string]string
			gets  map[string]bool
		}{
			{"shop", shopApp, map[string]bool{"app.installed": true, "app.upgraded": true, "app.scopes_changed": true, "app.uninstalled": true}},
			{"pages", pageApp, map[string]bool{"app.installed": true, "app.upgraded": true, "app.uninstalled": true}},
		} {
			o := b.kworkOwner(app.id, app.attrs)
			o.registerType("order.paid")
			o.registerType("order.shipped")
			empty, unrelated := newReceiver(t), newReceiver(t)
			epEmpty := o.subscribe(empty.URL, nil, nil)
			epUnrelated := o.subscribe(unrelated.URL, []string{"order.paid"}, nil)
			// A type that is neither listed nor lifecycle reaches neither.
			shipped := o.publishFor("order.shipped", "acme_corp", `{}`)
			o.fanoutNow(shipped)
			var want []string
			for _, e := range lifecycle {
				id := o.publishFor(e.typ, "acme_corp", e.data)
				o.fanoutNow(id)
				for _, ep := range []string{epEmpty.ID, epUnrelated.ID} {
					d := o.deliveryOf(ep, id)
					if app.gets[e.typ] != (d != nil) {
						t.Fatalf("%s (%s app): %s reached subscription %s: %v, want %v", app.id, app.attrs["app_kind"], e.typ, ep, d != nil, app.gets[e.typ])
					}
				}
				if app.gets[e.typ] {
					want = append(want, e.typ)
				}
			}
			for _, ep := range []string{epEmpty.ID, epUnrelated.ID} {
				if d := o.deliveryOf(ep, shipped); d != nil {
					t.Fatalf("order.shipped reached subscription %s", ep)
				}
			}
			for rc, secret := range map[*receiver]string{empty: epEmpty.Secret, unrelated: epUnrelated.Secret} {
				var got []string
				for _, r := range rc.waitFor(t, len(want), wait) {
					env := checkKwork(t, secret, r)
					if env.App != app.attrs["app"] || env.Environment != app.attrs["environment"] {
						t.Fatalf("envelope %+v for app %s", env, app.id)
					}
					got = append(got, env.Type)
				}
				slices.Sort(got)
				w := slices.Clone(want)
				slices.Sort(w)
				if !slices.Equal(got, w) {
					t.Fatalf("%s receiver got %v, want %v", app.id, got, w)
				}
			}
		}
	})
}

// TestKworkPageAppNeverGetsScopesChanged: seed 002 — app.scopes_changed "只发给
// 没有页面的后端应用（integration）… 有页面的应用 … 收不到这个事件". A page app
// never gets it, even from a subscription that lists it or matches it by glob.
func TestKworkPageAppNeverGetsScopesChanged(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, eng dbtest.Engine) {
		b := setup(t, eng)
		pages := b.kworkOwner("pages", pageApp)
		rc := newReceiver(t)
		var eps []endpointOut
		for _, globs := range [][]string{{"app.scopes_changed"}, {"app.*"}, {"*"}} {
			eps = append(eps, pages.subscribe(rc.URL+"/"+globs[0], globs, nil))
		}
		id := pages.publishFor("app.scopes_changed", "acme_corp", lifecycle[2].data)
		pages.fanoutNow(id)
		for _, ep := range eps {
			if d := pages.deliveryOf(ep.ID, id); d != nil {
				t.Errorf("page app subscription %s gets app.scopes_changed: %+v", ep.URL[len(rc.URL):], d)
			}
		}
	})
}

// TestStandardAndKworkSideBySide: one hookd, one event type, a standard
// owner and a kwork owner: each endpoint gets its own profile's wire format.
func TestStandardAndKworkSideBySide(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, eng dbtest.Engine) {
		b := setup(t, eng) // acme: standard
		shop := b.kworkOwner("shop", shopApp)
		rc := newReceiver(t)
		b.registerType("order.paid")
		shop.registerType("order.paid")
		epStd := b.endpoint(rc.URL+"/acme", "order.paid")
		epKw := shop.subscribe(rc.URL+"/shop", []string{"order.paid"}, nil)
		stdID := b.publishFor("order.paid", "acme_corp", `{"order":"o_1"}`)
		kwID := shop.publishFor("order.paid", "acme_corp", `{"order":"o_1"}`)
		byPath := map[string]receipt{}
		for _, r := range rc.waitFor(t, 2, wait) {
			byPath[r.Path] = r
		}
		std, kw := byPath["/acme"], byPath["/shop"]

		ev := verify(t, epStd.Secret, std)
		if ev.ID != stdID || std.Header.Get("webhook-id") != stdID || ev.Subject != "test://x" {
			t.Fatalf("standard delivery: %+v", ev)
		}
		for _, h := range []string{"X-Kwork-Signature", "X-Kwork-Event", "X-Kwork-Delivery"} {
			if std.Header.Get(h) != "" {
				t.Fatalf("standard delivery carries %s", h)
			}
		}
		var thin map[string]json.RawMessage
		if err := json.Unmarshal(std.Body, &thin); err != nil || len(thin) != 5 || thin["tenant"] != nil || thin["createdAt"] != nil {
			t.Fatalf("standard body %s", std.Body)
		}

		env := checkKwork(t, epKw.Secret, kw)
		if env.ID != kwID || env.Type != "order.paid" || env.Tenant != "acme_corp" || env.App != "shop-sync" {
			t.Fatalf("kwork envelope %+v", env)
		}
		// Neither verifies as the other.
		if v, err := webhook.NewVerifier(epStd.Secret); err == nil {
			if _, err := v.Verify(kw.Header, kw.Body); err == nil {
				t.Fatal("the kwork delivery verifies as standard")
			}
		}
		if verifyPlainHMAC(std.Body, std.Header.Get("X-Kwork-Signature"), epStd.Secret, 300*time.Second) {
			t.Fatal("the standard delivery verifies as kwork")
		}
		b.waitDelivery(epStd.ID, stdID, wait, func(d deliveryOut) bool { return d.State == "delivered" })
		shop.waitDelivery(epKw.ID, kwID, wait, func(d deliveryOut) bool { return d.State == "delivered" })
	})
}

// gate makes rc hold every request until release is called (or hookd gives
// up on it).
func gate(t *testing.T, rc *receiver) (release func()) {
	ch := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(ch) }) }
	t.Cleanup(release)
	rc.setRespond(func(r *http.Request, _ int) (int, http.Header) {
		select {
		case <-ch:
		case <-r.Context().Done():
		}
		return 200, nil
	})
	return release
}

// TestKworkParallelDeliveries: deliveries to one kwork subscription run in
// parallel, up to its max_in_flight (default 8) and never more.
func TestKworkParallelDeliveries(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, eng dbtest.Engine) {
		// The receiver holds requests while the test looks; on a loaded
		// machine that can outlast the 10 s HTTP timeout, so every timing
		// that nests around it is stretched in proportion.
		b := setup(t, eng, setupOpts{mutate: func(c *hookd.Config) {
			c.HTTPTimeout, c.JobTimeout, c.LeaseFor, c.RescueStuckJobsAfter = time.Minute, 70*time.Second, 80*time.Second, 2*time.Minute
		}})
		shop := b.kworkOwner("shop", shopApp)
		shop.registerType("load.a")
		shop.registerType("load.b")
		for _, c := range []struct {
			typ     string
			setting int // max_in_flight sent (0: default)
			limit   int
			publish int
		}{
			{"load.a", 0, profile.DefaultKworkInFlight, 12},
			{"load.b", 3, 3, 6},
		} {
			rc := newReceiver(t)
			release := gate(t, rc)
			var extra map[string]any
			if c.setting > 0 {
				extra = map[string]any{"max_in_flight": c.setting}
			}
			ep := shop.subscribe(rc.URL, []string{c.typ}, extra)
			var got struct {
				MaxInFlight int `json:"max_in_flight"`
			}
			shop.must(200, "GET", "/api/admin/webhooks/"+ep.ID, nil, &got)
			if got.MaxInFlight != c.limit {
				t.Fatalf("%s: max_in_flight %d, want %d", c.typ, got.MaxInFlight, c.limit)
			}
			ids := shop.publishMany(c.typ, c.publish)
			// limit requests are held at once …
			rc.waitFor(t, c.limit, wait)
			if !eventually(wait, func() bool { return rc.inFlight.Load() >= int32(c.limit) }) {
				t.Fatalf("%s: only %d in flight, want %d", c.typ, rc.inFlight.Load(), c.limit)
			}
			// … and the others were refused a slot, twice each, while they
			// were held (River counts the snoozes in the job's metadata).
			held := map[string]bool{}
			for _, r := range rc.receipts() {
				held[r.Header.Get("X-Kwork-Delivery")] = true
			}
			var waiting []int64
			for _, id := range ids {
				d := shop.waitDelivery(ep.ID, id, wait, func(d deliveryOut) bool { return d.JobID != 0 })
				if !held[d.ID] {
					waiting = append(waiting, d.JobID)
				}
			}
			if len(waiting) != c.publish-c.limit {
				t.Fatalf("%s: %d deliveries waiting, want %d", c.typ, len(waiting), c.publish-c.limit)
			}
			for _, jobID := range waiting {
				b.waitJob(jobID, func(j *rivertype.JobRow) bool {
					var m struct {
						Snoozes int `json:"snoozes"`
					}
					_ = json.Unmarshal(j.Metadata, &m)
					return m.Snoozes >= 2
				})
			}
			if m := rc.maxInFl.Load(); m != int32(c.limit) {
				t.Fatalf("%s: %d deliveries in flight at once, want %d", c.typ, m, c.limit)
			}
			release()
			rc.waitFor(t, c.publish, wait)
			for _, id := range ids {
				shop.waitDelivery(ep.ID, id, wait, func(d deliveryOut) bool { return d.State == "delivered" })
			}
			if m := rc.maxInFl.Load(); m > int32(c.limit) || m < 2 {
				t.Fatalf("%s: max concurrency %d, want 2..%d", c.typ, m, c.limit)
			}
			for _, r := range rc.receipts() {
				checkKwork(t, ep.Secret, r)
			}
		}
	})
}

// TestKworkSendTestOnFailingSubscription: send_test exists to check the
// address and the signature check (seed 002), which is what an owner does
// right after fixing a failing receiver. The test event must go out then,
// not after the 5-minute cooldown a failing endpoint puts on new events.
func TestKworkSendTestOnFailingSubscription(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, eng dbtest.Engine) {
		b := setup(t, eng)
		shop := b.kworkOwner("shop", shopApp)
		rc := newReceiver(t)
		rc.setRespond(status(500))
		shop.registerType("order.paid")
		ep := shop.subscribe(rc.URL, []string{"order.paid"}, nil)
		order := shop.publishFor("order.paid", "acme_corp", `{}`)
		shop.waitDelivery(ep.ID, order, wait, func(d deliveryOut) bool { return d.Attempts == 1 })
		if e := shop.getEndpoint(ep.ID); e.State != "failing" {
			t.Fatalf("endpoint %+v, want failing", e)
		}
		rc.setRespond(status(200)) // the owner fixed the receiver
		ping := shop.sendTest(ep.ID)
		d := shop.waitDelivery(ep.ID, ping, wait, func(d deliveryOut) bool { return d.JobID != 0 })
		if d.NextAttemptAt != nil && d.NextAttemptAt.After(b.clock.Now().Add(wait)) {
			t.Fatalf("open.ping to a failing subscription is held until %s (cooldown), not sent now", d.NextAttemptAt)
		}
		shop.waitDelivery(ep.ID, ping, wait, func(d deliveryOut) bool { return d.State == "delivered" })
	})
}
