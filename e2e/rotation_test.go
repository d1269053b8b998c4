package e2e_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/webhook"
)

// signingOut is an endpoint record's signing fields.
type signingOut struct {
	endpointOut
	Signature       string     `json:"signature"`
	PublicKey       string     `json:"public_key"`
	OldKeysExpireAt *time.Time `json:"old_keys_expire_at"`
	OldPublicKeys   []string   `json:"old_public_keys"`
	UpdatedAt       time.Time  `json:"updated_at"`
}

func (b *bundle) signing(id string) signingOut {
	b.t.Helper()
	var ep signingOut
	b.must(200, "GET", "/api/admin/webhooks/"+id, nil, &ep)
	return ep
}

// accepts reports whether a receiver holding keys (verifying on hookd's
// clock) accepts r.
func (b *bundle) accepts(t *testing.T, r receipt, keys ...string) bool {
	t.Helper()
	v, err := webhook.NewVerifier(keys[0], webhook.WithKeys(keys[1:]...), webhook.WithClock(b.clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.Verify(r.Header, r.Body)
	if err != nil && !errors.Is(err, webhook.ErrNoMatchingSignature) {
		t.Fatalf("verify: %v (want a signature verdict)", err)
	}
	return err == nil
}

// TestRotationOverlap: a rotation on an injected clock, before, during and
// after its overlap. The receiver verifies every delivery with the old key
// alone, the new key alone and both; each is accepted exactly while its key
// signs. expire_old_secrets ends an overlap early.
func TestRotationOverlap(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		rc := newReceiver(t)
		b.registerType("rot.test")
		ep := b.endpoint(rc.URL, "rot.test")
		oldSecret := ep.Secret
		n := 0
		deliver := func() receipt {
			t.Helper()
			id := b.publish("rot.test", `{}`)
			n++
			r := rc.waitFor(t, n, wait)[n-1]
			if got := r.Header.Get("webhook-id"); got != id {
				for i, r := range rc.receipts() {
					t.Logf("request %d: %s %s", i+1, r.Header.Get("webhook-id"), r.At.Format("15:04:05.000000"))
				}
				t.Fatalf("request %d is for %s, want %s, the event just published", n, got, id)
			}
			return r
		}
		type verdicts struct{ old, new, both bool }
		check := func(phase string, r receipt, newSecret string, want verdicts) {
			t.Helper()
			got := verdicts{
				old:  b.accepts(t, r, oldSecret),
				new:  b.accepts(t, r, newSecret),
				both: b.accepts(t, r, newSecret, oldSecret),
			}
			if got != want {
				t.Errorf("%s: accepted (old, new, both) = %+v, want %+v; webhook-signature %q", phase, got, want, r.Header.Get("webhook-signature"))
			}
		}
		entries := func(r receipt) int { return len(strings.Fields(r.Header.Get("webhook-signature"))) }

		// Before: one v1 entry, the old secret's.
		r := deliver()
		if entries(r) != 1 || !b.accepts(t, r, oldSecret) {
			t.Fatalf("before rotation: %q", r.Header.Get("webhook-signature"))
		}
		if got := b.signing(ep.ID); got.Signature != "hmac" || got.OldKeysExpireAt != nil {
			t.Fatalf("before rotation the record shows %+v", got)
		}

		// Rotate with the default overlap (24 h).
		var rot signingOut
		b.must(200, "POST", "/api/admin/webhooks/"+ep.ID+"/rotate_secret", nil, &rot)
		newSecret := rot.Secret
		if newSecret == "" || newSecret == oldSecret || !strings.HasPrefix(newSecret, "whsec_") {
			t.Fatalf("rotate gave secret %q", newSecret)
		}
		end := b.clock.Now().Add(24 * time.Hour)
		if rot.OldKeysExpireAt == nil || rot.OldKeysExpireAt.Sub(end).Abs() > 5*time.Second {
			t.Fatalf("rotate answer: old keys expire at %v, want about %v", rot.OldKeysExpireAt, end)
		}
		if got := b.signing(ep.ID); got.Secret != "" || got.OldKeysExpireAt == nil || !got.OldKeysExpireAt.Equal(*rot.OldKeysExpireAt) {
			t.Fatalf("the record during the overlap: %+v", got)
		}

		// During: both keys sign, new first.
		check("at the start of the overlap", deliver(), newSecret, verdicts{old: true, new: true, both: true})
		b.waitSlotsFree(ep.ID)
		b.clock.Advance(24*time.Hour - time.Minute)
		r = deliver()
		check("a minute before the overlap ends", r, newSecret, verdicts{old: true, new: true, both: true})
		if entries(r) != 2 || !strings.HasPrefix(r.Header.Get("webhook-signature"), signEntry(t, newSecret, r)+" ") {
			t.Fatalf("during the overlap the header is %q, want v1,<new> v1,<old>", r.Header.Get("webhook-signature"))
		}

		// After: the new key alone.
		b.waitSlotsFree(ep.ID)
		b.clock.Advance(2 * time.Minute)
		r = deliver()
		check("after the overlap", r, newSecret, verdicts{old: false, new: true, both: true})
		if entries(r) != 1 {
			t.Fatalf("after the overlap: %q", r.Header.Get("webhook-signature"))
		}
		if got := b.signing(ep.ID); got.OldKeysExpireAt != nil {
			t.Fatalf("after the overlap the record still shows old keys until %v", got.OldKeysExpireAt)
		}

		// expire_old_secrets ends an overlap early.
		oldSecret = newSecret
		b.must(200, "POST", "/api/admin/webhooks/"+ep.ID+"/rotate_secret", map[string]string{"overlap": "7d"}, &rot)
		newSecret = rot.Secret
		check("second rotation, 7 day overlap", deliver(), newSecret, verdicts{old: true, new: true, both: true})
		var expired signingOut
		b.must(200, "POST", "/api/admin/webhooks/"+ep.ID+"/expire_old_secrets", nil, &expired)
		if expired.OldKeysExpireAt != nil || expired.Secret != "" {
			t.Fatalf("expire_old_secrets answered %+v", expired)
		}
		check("after expire_old_secrets", deliver(), newSecret, verdicts{old: false, new: true, both: true})

		// overlap 0: the old key stops at once.
		oldSecret = newSecret
		rot = signingOut{}
		b.must(200, "POST", "/api/admin/webhooks/"+ep.ID+"/rotate_secret", map[string]any{"overlap": 0}, &rot)
		newSecret = rot.Secret
		if rot.OldKeysExpireAt != nil {
			t.Fatalf("overlap 0 shows old keys until %v", rot.OldKeysExpireAt)
		}
		check("rotation without overlap", deliver(), newSecret, verdicts{old: false, new: true, both: true})
	})
}

// TestRotationKeepsThreeOldKeys: rotating four times within the overlap
// signs with the current key and the three newest old ones.
func TestRotationKeepsThreeOldKeys(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.Backends()[0])
	rc := newReceiver(t)
	b.registerType("rot.many")
	ep := b.endpoint(rc.URL, "rot.many")
	secrets := []string{ep.Secret}
	for range 4 {
		var rot signingOut
		b.must(200, "POST", "/api/admin/webhooks/"+ep.ID+"/rotate_secret", map[string]string{"overlap": "1h"}, &rot)
		secrets = append(secrets, rot.Secret)
		b.clock.Advance(time.Minute)
	}
	b.publish("rot.many", `{}`)
	r := rc.waitFor(t, 1, wait)[0]
	if got := len(strings.Fields(r.Header.Get("webhook-signature"))); got != 4 {
		t.Fatalf("%d entries, want 4 (current + 3 old): %q", got, r.Header.Get("webhook-signature"))
	}
	for i, s := range secrets {
		if want := i >= 1; b.accepts(t, r, s) != want {
			t.Errorf("secret %d of %d: accepted %v, want %v", i, len(secrets), !want, want)
		}
	}
}

// TestRotationBadInput: overlap and signature values that cannot be used
// are answered 422 with what to send, and change nothing.
func TestRotationBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.Backends()[0])
	rc := newReceiver(t)
	b.registerType("rot.bad")
	ep := b.endpoint(rc.URL, "rot.bad")
	before := b.signing(ep.ID)
	for _, c := range []struct {
		name, path string
		body       any
		status     int
		says       string
	}{
		{"too long", "/rotate_secret", map[string]string{"overlap": "8d"}, 422, "maximum of 7 days"},
		{"too long in hours", "/rotate_secret", map[string]string{"overlap": "169h"}, 422, "maximum of 7 days"},
		{"negative", "/rotate_secret", map[string]string{"overlap": "-1h"}, 422, "negative"},
		{"not a duration", "/rotate_secret", map[string]string{"overlap": "soon"}, 422, `like "24h"`},
		{"no unit", "/rotate_secret", map[string]string{"overlap": "24"}, 422, `like "24h"`},
		{"not a string", "/rotate_secret", `{"overlap": true}`, 400, "overlap"},
		{"unknown field", "/rotate_secret", `{"overlapp": "1h"}`, 422, "overlapp"},
		{"bad signature", "", map[string]string{"signature": "rsa"}, 422, "hmac, ed25519, both"},
	} {
		method := "POST"
		if c.path == "" {
			method = "PATCH"
		}
		var raw map[string]any
		got := b.do(method, "/api/admin/webhooks/"+ep.ID+c.path, c.body, &raw)
		msg, _ := raw["error"].(map[string]any)["message"].(string)
		if got != c.status || !strings.Contains(msg, c.says) {
			t.Errorf("%s: %d %q, want %d saying %q", c.name, got, msg, c.status, c.says)
		}
	}
	var bad map[string]any
	b.do("POST", "/api/admin/webhooks", map[string]any{"url": rc.URL, "event_types": []string{"rot.bad"}, "signature": "ED25519"}, &bad)
	if after := b.signing(ep.ID); !after.UpdatedAt.Equal(before.UpdatedAt) || after.Signature != "hmac" {
		t.Fatalf("a refused request changed the endpoint: %+v -> %+v", before, after)
	}
	b.publish("rot.bad", `{}`)
	verify(t, ep.Secret, rc.waitFor(t, 1, wait)[0])

	// kwork signs with one key: no overlap, no Ed25519.
	shop := b.kworkOwner("shop", shopApp)
	shop.registerType("rot.bad")
	kw := shop.endpoint(rc.URL, "rot.bad")
	var raw map[string]any
	if got := shop.do("POST", "/api/admin/webhooks/"+kw.ID+"/rotate_secret", map[string]string{"overlap": "1h"}, &raw); got != 422 || !strings.Contains(raw["error"].(map[string]any)["message"].(string), "one key") {
		t.Errorf("kwork overlap: %d %v", got, raw)
	}
	if got := shop.do("POST", "/api/admin/webhooks", map[string]any{"url": rc.URL, "event_types": []string{"rot.bad"}, "signature": "ed25519"}, &raw); got != 422 {
		t.Errorf("kwork ed25519: %d %v", got, raw)
	}
	var rot signingOut
	shop.must(200, "POST", "/api/admin/webhooks/"+kw.ID+"/rotate_secret", nil, &rot)
	if rot.Secret == "" || rot.Secret == kw.Secret || rot.OldKeysExpireAt != nil {
		t.Fatalf("kwork rotation: %+v", rot)
	}
}

// signEntry is the entry key makes for r.
func signEntry(t *testing.T, key string, r receipt) string {
	t.Helper()
	s, err := webhook.NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := strconv.ParseInt(r.Header.Get("webhook-timestamp"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return s.Sign(r.Header.Get("webhook-id"), ts, r.Body)
}

// TestSignatureSchemeChange: updating an endpoint's signature keeps the keys
// the new scheme still uses, makes the missing ones, and lets the dropped
// ones sign for the default overlap, so no receiver fails at the switch.
func TestSignatureSchemeChange(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.Backends()[0])
	rc := newReceiver(t)
	b.registerType("sig.change")
	ep := b.endpoint(rc.URL, "sig.change")
	n := 0
	labels := func() (string, receipt) {
		t.Helper()
		b.publish("sig.change", `{}`)
		n++
		r := rc.waitFor(t, n, wait)[n-1]
		var ls []string
		for _, e := range strings.Fields(r.Header.Get("webhook-signature")) {
			ls = append(ls, e[:strings.Index(e, ",")])
		}
		return strings.Join(ls, " "), r
	}
	patch := func(scheme string) signingOut {
		t.Helper()
		var out signingOut
		b.must(200, "PATCH", "/api/admin/webhooks/"+ep.ID, map[string]string{"signature": scheme}, &out)
		return out
	}

	// hmac -> both: same secret, a new key pair, nothing old.
	both := patch("both")
	if both.Signature != "both" || !strings.HasPrefix(both.PublicKey, "whpk_") || both.Secret != "" || both.OldKeysExpireAt != nil {
		t.Fatalf("hmac -> both answered %+v", both)
	}
	if got, r := labels(); got != "v1 v1a" || !b.accepts(t, r, ep.Secret) || !b.accepts(t, r, both.PublicKey) {
		t.Fatalf("both signs %q", got)
	}
	// both -> ed25519: the secret keeps signing for 24 h.
	ed := patch("ed25519")
	if ed.PublicKey != both.PublicKey || ed.OldKeysExpireAt == nil || ed.OldKeysExpireAt.Sub(b.clock.Now().Add(24*time.Hour)).Abs() > 5*time.Second {
		t.Fatalf("both -> ed25519 answered %+v", ed)
	}
	if got, r := labels(); got != "v1a v1" || !b.accepts(t, r, ep.Secret) {
		t.Fatalf("during the switch to ed25519: %q", got)
	}
	b.waitSlotsFree(ep.ID)
	b.clock.Advance(24*time.Hour + time.Minute)
	if got, r := labels(); got != "v1a" || b.accepts(t, r, ep.Secret) || !b.accepts(t, r, ed.PublicKey) {
		t.Fatalf("after the switch to ed25519: %q", got)
	}
	// ed25519 -> hmac: a new secret, shown in this answer only.
	hm := patch("hmac")
	if !strings.HasPrefix(hm.Secret, "whsec_") || hm.Secret == ep.Secret || hm.PublicKey != "" || len(hm.OldPublicKeys) != 1 {
		t.Fatalf("ed25519 -> hmac answered %+v", hm)
	}
	if got, r := labels(); got != "v1 v1a" || !b.accepts(t, r, hm.Secret) || !b.accepts(t, r, ed.PublicKey) {
		t.Fatalf("during the switch to hmac: %q", got)
	}
	if again := patch("hmac"); again.Secret != "" {
		t.Fatalf("an update to the same scheme showed a secret: %+v", again)
	}
}
