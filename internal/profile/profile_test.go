package profile

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/webhook"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// goldenSecret is one secret for both profiles: standard decodes the base64
// after whsec_ into the HMAC key, kwork keys the HMAC with the string as
// given. The goldens fail if either profile mixes the two up.
var goldenSecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("hookd golden secret, 32 bytes!!!"))

// goldenAt is the moment of signing: the kwork specification example's createdAt.
var goldenAt = time.Date(2026, 10, 28, 12, 0, 0, 0, time.UTC)

// seedEnvelope is the envelope example of the kwork profile's specification, verbatim.
const seedEnvelope = `{
  "id": "evt_01JBCDEF0123456789ABCDEF01",
  "type": "app.installed",
  "createdAt": "2026-10-28T12:00:00Z",
  "apiVersion": "2026-10-28",
  "tenant": "acme_corp",
  "environment": "live",
  "app": "shop-sync",
  "data": {
    "version": "1.0.0",
    "scopes": ["tables.base:read", "platform:ping"]
  }
}`

type goldenCase struct {
	name string // testdata/<name>.golden
	p    Profile
	ev   *event.Event
	o    *owner.Owner
	dlv  string
}

func goldenCases() []goldenCase {
	shop := &owner.Owner{ID: "shop", Profile: "kwork", Attributes: map[string]string{
		AttrApp: "shop-sync", AttrEnv: "live", AttrAppKind: "integration", AttrAPIVersion: "2026-10-28",
	}}
	odd := &owner.Owner{ID: "odd", Profile: "kwork", Attributes: map[string]string{
		AttrApp: `app "quoted" \ back`, AttrEnv: "test", AttrAPIVersion: "2026-10-28",
	}}
	acme := &owner.Owner{ID: "acme", Profile: "standard", Attributes: map[string]string{}}
	return []goldenCase{
		{
			name: "kwork_app_installed", p: Kwork{}, o: shop, dlv: "dlv_01JBCDEF0123456789ABCDEF02",
			ev: &event.Event{
				ID: "evt_01JBCDEF0123456789ABCDEF01", Type: AppInstalled, Subject: "app://shop-sync",
				// Sub-second precision is dropped: createdAt is RFC 3339 seconds, UTC.
				OccurredAt: time.Date(2026, 10, 28, 20, 0, 0, 123456789, time.FixedZone("CST", 8*3600)),
				Tenant:     "acme_corp",
				Data:       json.RawMessage(`{"version":"1.0.0","scopes":["tables.base:read","platform:ping"]}`),
			},
		},
		{
			// Strings from callers (tenant, app) are escaped; data is appended as published.
			name: "kwork_escaping", p: Kwork{}, o: odd, dlv: "dlv_01JBCDEF0123456789ABCDEF03",
			ev: &event.Event{
				ID: "evt_01JBCDEF0123456789ABCDEF04", Type: AppScopesChanged,
				OccurredAt: goldenAt,
				Tenant:     "租户\t</script>\u2028\x01\"",
				Data:       json.RawMessage(`{"scopes":["a"],"added":["a"],"removed":[],"note":"\u00e9\n"}`),
			},
		},
		{
			name: "standard_invoice_paid", p: Standard{}, o: acme, dlv: "dlv_01JBCDEF0123456789ABCDEF05",
			ev: &event.Event{
				ID: "evt_01JBCDEF0123456789ABCDEF06", Type: "invoice.paid", Subject: "invoice://inv_123",
				OccurredAt: time.Date(2026, 10, 28, 11, 59, 59, 500000000, time.UTC),
				Tenant:     "ignored_by_standard",
				Data:       json.RawMessage(`{"amount":42,"published":true}`),
			},
		},
	}
}

// render is one request as the golden file keeps it: the headers the profile
// set, sorted, one per line; a blank line; the body bytes; a newline.
func render(t *testing.T, c goldenCase) (http.Header, []byte, []byte) {
	t.Helper()
	body, err := c.p.AppendBody(nil, c.ev, c.o)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	m := Message{DeliveryID: c.dlv, EventID: c.ev.ID, EventType: c.ev.Type, Body: body}
	if err := c.p.Sign(h, goldenSecret, m, goldenAt); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range h {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		for _, v := range h[k] {
			fmt.Fprintf(&out, "%s: %s\n", k, v)
		}
	}
	out.WriteByte('\n')
	out.Write(body)
	out.WriteByte('\n')
	return h, body, out.Bytes()
}

func TestGolden(t *testing.T) {
	t.Parallel()
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			_, body, got := render(t, c)
			path := filepath.Join("testdata", c.name+".golden")
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/profile -run TestGolden -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s changed (run with -update if the wire change is intended):\n--- got\n%s\n--- want\n%s", path, got, want)
			}
			// The body bytes in the golden are exactly what is sent.
			_, wantBody, _ := bytes.Cut(want, []byte("\n\n"))
			if !bytes.Equal(body, bytes.TrimSuffix(wantBody, []byte("\n"))) {
				t.Fatalf("body differs from the golden body")
			}
			if !json.Valid(body) {
				t.Fatalf("body is not JSON: %s", body)
			}
		})
	}
}

// TestKworkEnvelopeIsTheSeedExample checks the kwork body against the kwork profile's
// example independently of the golden file (which -update could rewrite).
func TestKworkEnvelopeIsTheSeedExample(t *testing.T) {
	t.Parallel()
	c := goldenCases()[0]
	_, body, _ := render(t, c)
	var want bytes.Buffer
	if err := json.Compact(&want, []byte(seedEnvelope)); err != nil {
		t.Fatal(err)
	}
	if string(body) != want.String() {
		t.Fatalf("kwork envelope\n got %s\nwant %s", body, want.Bytes())
	}
	// Field order is the specification's.
	var keys []string
	dec := json.NewDecoder(bytes.NewReader(body))
	_, _ = dec.Token()
	for dec.More() {
		k, _ := dec.Token()
		keys = append(keys, k.(string))
		var skip json.RawMessage
		_ = dec.Decode(&skip)
	}
	if got := strings.Join(keys, ","); got != "id,type,createdAt,apiVersion,tenant,environment,app,data" {
		t.Fatalf("envelope keys %s", got)
	}
}

// TestKworkHeaders: X-Kwork-Signature is t=<unix>,v1=<hex HMAC-SHA256 of
// the secret string over "t.body">; Event is the type; Delivery is the
// delivery id (not the event id). Each attempt's t is its own.
func TestKworkHeaders(t *testing.T) {
	t.Parallel()
	c := goldenCases()[0]
	h, body, _ := render(t, c)
	if len(h) != 3 {
		t.Fatalf("kwork sets %d headers, want exactly 3: %v", len(h), h)
	}
	if got := h.Get(webhook.HeaderKworkEvent); got != AppInstalled {
		t.Fatalf("X-Kwork-Event %q", got)
	}
	if got := h.Get(webhook.HeaderKworkDelivery); got != c.dlv {
		t.Fatalf("X-Kwork-Delivery %q, want the delivery id %q", got, c.dlv)
	}
	mac := hmac.New(sha256.New, []byte(goldenSecret))
	fmt.Fprintf(mac, "%d.", goldenAt.Unix())
	mac.Write(body)
	want := fmt.Sprintf("t=%d,v1=%s", goldenAt.Unix(), hex.EncodeToString(mac.Sum(nil)))
	if got := h.Get(webhook.HeaderKworkSignature); got != want {
		t.Fatalf("X-Kwork-Signature\n got %s\nwant %s", got, want)
	}
	ev, err := webhook.VerifyWebhookAt(body, want, goldenSecret, 300*time.Second, goldenAt.Add(300*time.Second))
	if err != nil || ev.ID != c.ev.ID || ev.Tenant != "acme_corp" || ev.App != "shop-sync" || ev.Environment != "live" || ev.APIVersion != "2026-10-28" {
		t.Fatalf("SDK verify: %+v, %v", ev, err)
	}

	// A later attempt: same body and delivery id, fresh t and v1.
	later := http.Header{}
	m := Message{DeliveryID: c.dlv, EventID: c.ev.ID, EventType: c.ev.Type, Body: body}
	if err := (Kwork{}).Sign(later, goldenSecret, m, goldenAt.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if later.Get(webhook.HeaderKworkDelivery) != c.dlv || later.Get(webhook.HeaderKworkSignature) == want ||
		!strings.HasPrefix(later.Get(webhook.HeaderKworkSignature), fmt.Sprintf("t=%d,", goldenAt.Unix()+30)) {
		t.Fatalf("retry headers %v", later)
	}
	if err := (Kwork{}).Sign(http.Header{}, "", m, goldenAt); err == nil {
		t.Fatal("signed with an empty secret")
	}
}

func TestStandardHeaders(t *testing.T) {
	t.Parallel()
	c := goldenCases()[2]
	h, body, _ := render(t, c)
	if len(h) != 3 || h.Get("webhook-id") != c.ev.ID || h.Get("webhook-timestamp") != fmt.Sprint(goldenAt.Unix()) {
		t.Fatalf("standard headers %v", h)
	}
	v, err := webhook.NewVerifier(goldenSecret, webhook.WithClock(func() time.Time { return goldenAt }))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := v.Verify(h, body)
	if err != nil || ev.ID != c.ev.ID || ev.Subject != "invoice://inv_123" || !ev.OccurredAt.Equal(c.ev.OccurredAt) {
		t.Fatalf("verify: %+v, %v", ev, err)
	}
	var env map[string]json.RawMessage
	if err := json.Unmarshal(body, &env); err != nil || len(env) != 5 || env["tenant"] != nil {
		t.Fatalf("thin envelope %s", body)
	}
}

func TestRetrySchedules(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		r        Retry
		backoffs []time.Duration // waits after sends 1..MaxAttempts-1
		total    time.Duration
	}{
		{"kwork", Kwork{}.Retry(), []time.Duration{30 * time.Second, 2 * time.Minute, 10 * time.Minute, time.Hour, 6 * time.Hour}, 7*time.Hour + 12*time.Minute + 30*time.Second},
		{"standard", Standard{}.Retry(), []time.Duration{
			5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour,
			10 * time.Hour, 10 * time.Hour, 10 * time.Hour, 10 * time.Hour, 10 * time.Hour, 10 * time.Hour,
			10 * time.Hour, 10 * time.Hour, 10 * time.Hour, 10 * time.Hour, 10 * time.Hour, 10 * time.Hour,
		}, 127*time.Hour + 35*time.Minute + 5*time.Second},
	}
	for _, c := range cases {
		if c.r.MaxAttempts != len(c.backoffs)+1 {
			t.Errorf("%s: %d sends, want %d", c.name, c.r.MaxAttempts, len(c.backoffs)+1)
		}
		for i, want := range c.backoffs {
			if got := c.r.After(i + 1); got != want {
				t.Errorf("%s: wait after send %d = %s, want %s", c.name, i+1, got, want)
			}
		}
		if got := c.r.Total(); got != c.total {
			t.Errorf("%s: total %s, want %s", c.name, got, c.total)
		}
	}
	// The kwork profile's specification: "从第一次到最后一次大约 7 小时 12 分钟".
	if got := KworkRetry.Total(); got.Round(time.Minute) != 7*time.Hour+13*time.Minute && got.Truncate(time.Minute) != 7*time.Hour+12*time.Minute {
		t.Errorf("kwork total %s is not about 7h12m", got)
	}
	// The standard profile's specification: ~5.3 days.
	if d := StandardRetry.Total().Hours() / 24; d < 5.25 || d > 5.35 {
		t.Errorf("standard total %.2f days, want about 5.3", d)
	}
}

// TestRetryAfterBudget: the floor under a Retry-After is the first
// backoff step; the standard profile lets a receiver's Retry-After hold a
// delivery back 10 times for free, kwork never (every send counts), so a
// delivery ends after 28 sends at most (standard) or exactly 6 (kwork).
func TestRetryAfterBudget(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name            string
		r               Retry
		floor           time.Duration
		free, mostSends int
	}{
		{"standard", Standard{}.Retry(), 5 * time.Second, 10, 28},
		{"kwork", Kwork{}.Retry(), 30 * time.Second, 0, 6},
	} {
		if got := c.r.Floor(); got != c.floor {
			t.Errorf("%s: floor %s, want %s", c.name, got, c.floor)
		}
		if c.r.FreeSnoozes != c.free || c.r.MostSends() != c.mostSends {
			t.Errorf("%s: %d free snoozes, %d sends at most; want %d, %d", c.name, c.r.FreeSnoozes, c.r.MostSends(), c.free, c.mostSends)
		}
	}
}

func TestProfileSettings(t *testing.T) {
	t.Parallel()
	k, s := Kwork{}, Standard{}
	for _, c := range []struct {
		setting, kwork int
	}{{0, 8}, {-1, 8}, {1, 1}, {3, 3}, {8, 8}, {64, 64}} {
		if got := k.MaxInFlight(c.setting); got != c.kwork {
			t.Errorf("kwork MaxInFlight(%d) = %d, want %d", c.setting, got, c.kwork)
		}
		if got := s.MaxInFlight(c.setting); got != 1 {
			t.Errorf("standard MaxInFlight(%d) = %d, want 1 (the lease)", c.setting, got)
		}
	}
	if k.TestEventType() != "open.ping" || s.TestEventType() != "webhook.test" {
		t.Errorf("test events %q, %q", k.TestEventType(), s.TestEventType())
	}
	if k.LogWindow() != 50 || s.LogWindow() != 0 {
		t.Errorf("log windows %d, %d", k.LogWindow(), s.LogWindow())
	}
	// kwork: a 2xx not answered to its end in 10 s is retried; standard:
	// the status decides.
	if !k.WholeAnswer() || s.WholeAnswer() {
		t.Errorf("whole answer: kwork %v, standard %v; want true, false", k.WholeAnswer(), s.WholeAnswer())
	}
	if _, err := Default().Get("kwork"); err != nil {
		t.Error(err)
	}
	if _, err := Default().Get("v2"); err == nil {
		t.Error("unknown profile accepted")
	}
	if got := Default().Names(); !slices.Equal(got, []string{"kwork", "standard"}) {
		t.Errorf("names %v", got)
	}
	// Kwork secrets are fresh strings; short ones are refused.
	sec, err := k.NewSecret()
	if err != nil || k.ValidateSecret(sec) != nil {
		t.Errorf("kwork secret %q: %v", sec, err)
	}
	if k.ValidateSecret("short") == nil {
		t.Error("kwork accepted a 5-character secret")
	}
	if s.ValidateSecret("not-whsec") == nil {
		t.Error("standard accepted a secret that is not base64")
	}
}

func TestAppendString(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain", `"`, `\`, "\n\r\t\b\f", "\x00\x1f\x7f", "é租户", "\u2028\u2029", "\xff", "a\xc3", "\xed\xa0\x80", "\ufffd", "</script>&"} {
		checkAppendString(t, s)
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"acme_corp", "租户\t\"", "\u2028", "\xff\xfe", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkAppendString(t, s) })
}

// FuzzKworkBody: whatever tenant and attributes are, the kwork body is
// JSON whose fields decode back to them.
func FuzzKworkBody(f *testing.F) {
	f.Add("acme_corp", "shop-sync", "2026-10-28", int64(1793188800))
	f.Add("\xff\"", "a\u2028", "", int64(-1))
	f.Fuzz(func(t *testing.T, tenant, app, version string, unix int64) {
		at := time.Unix(unix%(1<<34), 0)
		o := &owner.Owner{Attributes: map[string]string{AttrApp: app, AttrEnv: "live", AttrAPIVersion: version}}
		body, err := Kwork{}.Body(&event.Event{ID: "evt_1", Type: "t", OccurredAt: at, Tenant: tenant, Data: json.RawMessage(`{}`)}, o)
		if err != nil {
			t.Fatal(err)
		}
		var env struct {
			Tenant, App, APIVersion string
			CreatedAt               string `json:"createdAt"`
		}
		if err := json.Unmarshal(body, &env); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if version == "" {
			version = DefaultKworkAPIVersion // never empty
		}
		if !utf8Lossy(tenant, env.Tenant) || !utf8Lossy(app, env.App) || !utf8Lossy(version, env.APIVersion) {
			t.Fatalf("%q %q %q came back as %+v", tenant, app, version, env)
		}
		if env.CreatedAt != at.UTC().Format(time.RFC3339) {
			t.Fatalf("createdAt %q for %s", env.CreatedAt, at)
		}
	})
}

// utf8Lossy: each invalid byte became one U+FFFD (encoding/json's rule).
func utf8Lossy(in, out string) bool {
	std, _ := json.Marshal(in)
	var ref string
	_ = json.Unmarshal(std, &ref)
	return ref == out
}

// TestSignersPerSecret: signers are cached per secret; each secret still
// signs with its own key, for both profiles, also past the cache bound.
func TestSignersPerSecret(t *testing.T) {
	t.Parallel()
	body := []byte(`{"id":"evt_1"}`)
	m := Message{DeliveryID: "dlv_1", EventID: "evt_1", EventType: "t", Body: body}
	secrets := []string{goldenSecret, "whsec_" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32)), goldenSecret}
	for round := 0; round < 2; round++ {
		for _, secret := range secrets {
			h := http.Header{}
			if err := (Kwork{}).Sign(h, secret, m, goldenAt); err != nil {
				t.Fatal(err)
			}
			mac := hmac.New(sha256.New, []byte(secret))
			fmt.Fprintf(mac, "%d.%s", goldenAt.Unix(), body)
			if want := fmt.Sprintf("t=%d,v1=%x", goldenAt.Unix(), mac.Sum(nil)); h.Get(webhook.HeaderKworkSignature) != want {
				t.Fatalf("kwork signed with the wrong key for %s", secret)
			}
			sh := http.Header{}
			if err := (Standard{}).Sign(sh, secret, m, goldenAt); err != nil {
				t.Fatal(err)
			}
			v, _ := webhook.NewVerifier(secret, webhook.WithClock(func() time.Time { return goldenAt }))
			if _, err := v.Verify(sh, body); err != nil {
				t.Fatalf("standard signed with the wrong key for %s: %v", secret, err)
			}
		}
		// Push the cache past its bound, then sign again.
		for i := 0; i <= maxSigners; i++ {
			if _, err := kworkSigners.get(fmt.Sprintf("filler-secret-%06d", i)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestSignHeadersIndependent: the three header values share one backing
// array; adding to one header must not overwrite another.
func TestSignHeadersIndependent(t *testing.T) {
	t.Parallel()
	m := Message{DeliveryID: "dlv_1", EventID: "evt_1", EventType: "t", Body: []byte(`{}`)}
	for _, p := range []Profile{Kwork{}, Standard{}} {
		h := http.Header{}
		if err := p.Sign(h, goldenSecret, m, goldenAt); err != nil {
			t.Fatal(err)
		}
		before := h.Clone()
		for k := range before {
			h.Add(k, "extra")
		}
		for k, v := range before {
			if got := h.Values(k); len(got) != 2 || got[0] != v[0] || got[1] != "extra" {
				t.Fatalf("%s: header %s became %v (was %v)", p.Name(), k, got, v)
			}
		}
	}
}
