package e2e_test

// The kwork test harness: owners with app attributes, subscriptions and
// kwork publishing on a bundle, envelope checks, and a receiver written the
// way the kwork profile's specification tells developers to write one.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/kworkref"
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
	if err := b.h.Delivery.Fanout(context.Background(), eventID); err != nil {
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

// kworkEnvelope is the kwork profile's envelope.
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

// checkKwork checks one kwork request the way the kwork profile's specification says a receiver
// does (the reference verifyPlainHMAC and the SDK's VerifyWebhook), that it
// has the three X-Kwork headers and no standard ones, and that its body is
// exactly the eight-field envelope. It returns the envelope.
func checkKwork(t *testing.T, secret string, r receipt) kworkEnvelope {
	t.Helper()
	sig := r.Header.Get("X-Kwork-Signature")
	if !kworkref.VerifyPlainHMAC(r.Body, sig, secret, 300*time.Second) {
		t.Fatalf("the kwork specification's verifyPlainHMAC rejects the delivery: %s %s", sig, r.Body)
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

// seedReceiver runs the kwork profile's Go webhookHandler, transcribed: the SDK call
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
	if !kworkref.VerifyPlainHMAC(body, sigHeader, secret, 300*time.Second) {
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

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
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
