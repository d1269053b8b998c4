package receiver

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/webhook"
)

// TestVerifySeveralKeys: hookd verify with a whpk_ key, and with several
// --secret values (the receiver's side of a rotation).
func TestVerifySeveralKeys(t *testing.T) {
	t.Parallel()
	body := `{"id":"evt_1","type":"post.published","subject":"posts/7","data":{}}`
	oldSecret, _ := webhook.NewSecret()
	newSecret, _ := webhook.NewSecret()
	sk, pk, err := webhook.NewSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Unix()
	headers := func(keys ...string) []string {
		var entries []string
		for _, k := range keys {
			s, err := webhook.NewSigner(k)
			if err != nil {
				t.Fatal(err)
			}
			entries = append(entries, s.Sign("msg_1", now, []byte(body)))
		}
		return []string{
			"--header", "webhook-id: msg_1",
			"--header", "webhook-timestamp: " + strconv.FormatInt(now, 10),
			"--header", "webhook-signature: " + strings.Join(entries, " "),
		}
	}
	for _, tt := range []struct {
		name    string
		secrets []string
		signers []string
		code    int
		stderr  string
	}{
		{"public key", []string{pk}, []string{sk}, 0, ""},
		{"public key, hmac entry only", []string{pk}, []string{oldSecret}, 1, "no v1a entry made for this public key"},
		{"old and new, old signs", []string{newSecret, oldSecret}, []string{oldSecret}, 0, ""},
		{"old and new, new signs", []string{newSecret, oldSecret}, []string{newSecret}, 0, ""},
		{"new alone, old signs", []string{newSecret}, []string{oldSecret}, 1, "no matching signature"},
		{"secret and public key, both sign", []string{oldSecret, pk}, []string{newSecret, sk}, 0, ""},
		{"signing key given", []string{sk}, []string{sk}, 2, "whpk_"},
		{"empty second key", []string{oldSecret, ""}, []string{oldSecret}, 2, "empty key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var args []string
			for _, s := range tt.secrets {
				args = append(args, "--secret", s)
			}
			var stdout, stderr bytes.Buffer
			code := Verify(append(args, headers(tt.signers...)...), strings.NewReader(body), &stdout, &stderr)
			if code != tt.code || !strings.Contains(stderr.String(), tt.stderr) {
				t.Fatalf("exit %d, stderr %q; want %d containing %q", code, stderr.String(), tt.code, tt.stderr)
			}
		})
	}
	// listen takes the same flags.
	cfg, err := parseListenFlags([]string{"--secret", newSecret, "--secret", pk})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := webhook.NewSigner(sk)
	h := map[string][]string{"Webhook-Id": {"msg_1"}, "Webhook-Timestamp": {strconv.FormatInt(now, 10)}, "Webhook-Signature": {s.Sign("msg_1", now, []byte(body))}}
	if _, err := cfg.profile.verifier.Verify(h, []byte(body)); err != nil {
		t.Fatalf("listen with --secret whsec_ --secret whpk_: %v", err)
	}
}
