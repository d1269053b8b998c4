package profile_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/profile"
	"github.com/hookd/hookd/webhook"
)

func newKeySet(t testing.TB, scheme string) endpoint.KeySet {
	t.Helper()
	k, err := profile.NewKeys(profile.Standard{}, scheme)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func encodeKeys(t testing.TB, k endpoint.Keys) string {
	t.Helper()
	s, err := k.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestStandardSignKeySets: the header carries one entry per key signing at
// now, current first; an old generation stops at its end; kwork signs with
// the current secret alone.
func TestStandardSignKeySets(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	cur := newKeySet(t, endpoint.SignBoth)
	old := newKeySet(t, endpoint.SignBoth)
	older := newKeySet(t, endpoint.SignHMAC)
	keys := endpoint.Keys{Current: old}.Rotate(cur, now, time.Hour)
	keys.Old = append(keys.Old, endpoint.OldKeySet{KeySet: older, Until: now.Add(time.Minute)})
	opened := encodeKeys(t, keys)
	m := profile.Message{EventID: "evt_1", Body: []byte(`{"a":1}`)}

	sign := func(at time.Time) []string {
		h := http.Header{}
		if err := (profile.Standard{}).Sign(h, opened, m, at); err != nil {
			t.Fatal(err)
		}
		if h.Get("Webhook-Timestamp") != strconv.FormatInt(at.Unix(), 10) {
			t.Fatalf("timestamp %q", h.Get("Webhook-Timestamp"))
		}
		return strings.Fields(h.Get("Webhook-Signature"))
	}
	entry := func(key string, at time.Time) string {
		s, err := webhook.NewSigner(key)
		if err != nil {
			t.Fatal(err)
		}
		return s.Sign("evt_1", at.Unix(), m.Body)
	}
	for _, c := range []struct {
		at   time.Time
		want []string
	}{
		{now, []string{cur.Secret, cur.SigningKey, old.Secret, old.SigningKey, older.Secret}},
		{now.Add(time.Minute), []string{cur.Secret, cur.SigningKey, old.Secret, old.SigningKey}},
		{now.Add(time.Hour - time.Microsecond), []string{cur.Secret, cur.SigningKey, old.Secret, old.SigningKey}},
		{now.Add(time.Hour), []string{cur.Secret, cur.SigningKey}},
	} {
		got := sign(c.at)
		var want []string
		for _, k := range c.want {
			want = append(want, entry(k, c.at))
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("at now+%s: %d entries %v, want %d", c.at.Sub(now), len(got), got, len(want))
		}
	}

	// kwork: one v1= with the current secret, whatever the key set holds.
	h := http.Header{}
	kw := encodeKeys(t, endpoint.Keys{Current: endpoint.KeySet{Secret: "kw_old"}}.Rotate(endpoint.KeySet{Secret: "kw_new"}, now, time.Hour))
	if err := (profile.Kwork{}).Sign(h, kw, m, now); err != nil {
		t.Fatal(err)
	}
	if got, want := h.Get(webhook.HeaderKworkSignature), webhook.SignKwork("kw_new", now.Unix(), m.Body); got != want {
		t.Fatalf("kwork signature %q, want %q", got, want)
	}
}

func TestKeysRotateKeepsThreeNewest(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	keys := endpoint.Keys{Current: endpoint.KeySet{Secret: "s0"}}
	for i := 1; i <= 5; i++ {
		keys = keys.Rotate(endpoint.KeySet{Secret: "s" + strconv.Itoa(i)}, now, time.Hour)
	}
	var got []string
	for _, o := range keys.Old {
		got = append(got, o.Secret)
	}
	if keys.Current.Secret != "s5" || strings.Join(got, " ") != "s4 s3 s2" {
		t.Fatalf("current %s, old %v; want s5 and s4 s3 s2", keys.Current.Secret, got)
	}
	if s := keys.Signing(now); s.OldKeysExpireAt == nil || !s.OldKeysExpireAt.Equal(now.Add(time.Hour)) {
		t.Fatalf("signing record %+v", s)
	}
	if k := keys.Rotate(endpoint.KeySet{Secret: "s6"}, now, 0); len(k.Old) != 0 {
		t.Fatalf("overlap 0 kept %d old keys", len(k.Old))
	}
	if k := keys.ExpireOld(); len(k.Old) != 0 || k.Current.Secret != "s5" {
		t.Fatalf("ExpireOld: %+v", k)
	}
	// Switching hmac -> both keeps the secret and adds no old generation.
	both := endpoint.KeySet{Secret: "s5", SigningKey: "whsk_x", PublicKey: "whpk_x"}
	if k := (endpoint.Keys{Current: endpoint.KeySet{Secret: "s5"}}).Rotate(both, now, time.Hour); len(k.Old) != 0 {
		t.Fatalf("hmac -> both made old keys %+v", k.Old)
	}
	// A lone secret encodes as itself (what endpoints held before key sets).
	if s, _ := (endpoint.Keys{Current: endpoint.KeySet{Secret: "whsec_abc"}}).Encode(); s != "whsec_abc" {
		t.Fatalf("lone secret encodes as %q", s)
	}
}
