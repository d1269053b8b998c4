package e2e_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/webhook"
)

// tsVerifier returns node and the TypeScript SDK's verify-stdin script, or
// skips the test when the SDK is not built (fails in CI, where it must be).
func tsVerifier(t *testing.T) (node, script string) {
	t.Helper()
	script = filepath.Join("..", "sdk", "typescript", "test", "verify-stdin.mjs")
	if _, err := os.Stat(filepath.Join("..", "sdk", "typescript", "dist", "esm", "index.js")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the TypeScript SDK is not built; `make test` builds it before the Go tests")
		}
		t.Skip("TypeScript SDK not built: run `make ts-build` (make test does) to include the cross-language check")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node not found: %v", err)
	}
	return node, script
}

// TestCrossLanguageVerify: hookd delivers a real event in each profile, and
// both the Go SDK and the TypeScript SDK (a node subprocess on the built
// package) verify exactly what arrived.
func TestCrossLanguageVerify(t *testing.T) {
	t.Parallel()
	node, script := tsVerifier(t)
	b := setup(t, dbtest.Backends()[0])
	rc := newReceiver(t)

	// standard owner "acme" (from setup) and a kwork owner "shop".
	b.registerType("invoice.paid")
	std := b.endpoint(rc.URL+"/standard", "invoice.*")
	shop := b.kworkOwner("shop", shopApp)
	shop.registerType("invoice.paid")
	kw := shop.endpoint(rc.URL+"/kwork", "invoice.*")

	b.publish("invoice.paid", `{"amount": 1, "note": "héllo ✓"}`)
	shop.must(202, "POST", "/api/v1/events", map[string]any{"type": "invoice.paid", "tenant": "acme_corp", "data": map[string]any{"amount": 2}}, nil)
	got := rc.waitFor(t, 2, wait)

	for _, r := range got {
		var scheme, secret string
		headers := map[string]string{}
		switch r.Path {
		case "/standard":
			scheme, secret = "standard", std.Secret
			if _, err := webhook.NewVerifier(secret); err != nil {
				t.Fatal(err)
			}
			verify(t, secret, r)
			for _, h := range []string{"webhook-id", "webhook-timestamp", "webhook-signature"} {
				headers[h] = r.Header.Get(h)
			}
		case "/kwork":
			scheme, secret = "kwork", kw.Secret
			if _, err := webhook.VerifyWebhook(r.Body, r.Header.Get("X-Kwork-Signature"), secret, 300*time.Second); err != nil {
				t.Fatalf("Go SDK rejects the kwork delivery: %v", err)
			}
			headers["X-Kwork-Signature"] = r.Header.Get("X-Kwork-Signature")
		}
		in, _ := json.Marshal(map[string]any{"scheme": scheme, "secret": secret, "headers": headers, "body": string(r.Body)})
		cmd := exec.Command(node, script)
		cmd.Stdin = bytes.NewReader(in)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("TypeScript SDK rejects the %s delivery: %v: %s %s", scheme, err, out, stderr.String())
		}
		var ev map[string]any
		if err := json.Unmarshal(out, &ev); err != nil || ev["type"] != "invoice.paid" {
			t.Fatalf("TypeScript SDK returned %s (%v)", out, err)
		}
		// Tampering is caught on the TypeScript side too.
		bad, _ := json.Marshal(map[string]any{"scheme": scheme, "secret": secret, "headers": headers, "body": strings.Replace(string(r.Body), "invoice", "invoicf", 1)})
		cmd = exec.Command(node, script)
		cmd.Stdin = bytes.NewReader(bad)
		if out, err := cmd.Output(); err == nil || !strings.Contains(string(out), "no_matching_signature") {
			t.Fatalf("tampered %s body: exit %v, output %s", scheme, err, out)
		}
	}
}

// specVerifyJS is a Standard Webhooks v1a verifier written straight from the
// spec with node:crypto only (no package): for each check it answers "valid"
// when some v1a entry of the header is an Ed25519 signature of
// "<webhook-id>.<webhook-timestamp>.<body>" under the whpk_ key.
const specVerifyJS = `
import { createPublicKey, verify } from 'node:crypto';
const chunks = [];
for await (const c of process.stdin) chunks.push(c);
const out = [];
for (const c of JSON.parse(Buffer.concat(chunks).toString('utf8'))) {
  const raw = Buffer.from(c.public_key.slice('whpk_'.length), 'base64');
  const key = createPublicKey({ format: 'jwk', key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') } });
  const content = Buffer.concat([Buffer.from(c.id + '.' + c.timestamp + '.'), Buffer.from(c.body_base64, 'base64')]);
  let verdict = 'invalid';
  for (const entry of c.signature.split(' ')) {
    const [label, value] = entry.split(',');
    if (label === 'v1a' && verify(null, content, key, Buffer.from(value, 'base64'))) verdict = 'valid';
  }
  out.push(verdict);
}
process.stdout.write(JSON.stringify(out));
`

// TestCrossLanguageEd25519: real deliveries of an ed25519 endpoint, and of a
// "both" endpoint during a rotation's overlap (four entries: v1 and v1a of
// the new and of the old keys), verified by the Go SDK, the TypeScript SDK
// and node:crypto following the spec; a tampered body fails all three.
func TestCrossLanguageEd25519(t *testing.T) {
	t.Parallel()
	node, script := tsVerifier(t)
	b := setup(t, dbtest.Backends()[0])
	rc := newReceiver(t)
	b.registerType("invoice.paid")
	var ed, both signingOut
	b.must(201, "POST", "/api/admin/webhooks", map[string]any{"url": rc.URL + "/ed25519", "event_types": []string{"invoice.*"}, "signature": "ed25519"}, &ed)
	b.must(201, "POST", "/api/admin/webhooks", map[string]any{"url": rc.URL + "/both", "event_types": []string{"invoice.*"}, "signature": "both"}, &both)
	if ed.Signature != "ed25519" || !strings.HasPrefix(ed.PublicKey, "whpk_") || ed.Secret != "" {
		t.Fatalf("ed25519 endpoint record: %+v (want a whpk_ key and no secret)", ed)
	}
	if got := b.signing(ed.ID); got.PublicKey != ed.PublicKey {
		t.Fatalf("the record's public key %q differs from the create answer's %q", got.PublicKey, ed.PublicKey)
	}
	if both.Signature != "both" || both.Secret == "" || both.PublicKey == "" {
		t.Fatalf("both endpoint record: %+v", both)
	}
	oldSecret, oldPK := both.Secret, both.PublicKey
	var rot signingOut
	b.must(200, "POST", "/api/admin/webhooks/"+both.ID+"/rotate_secret", map[string]string{"overlap": "1h"}, &rot)
	newSecret, newPK := rot.Secret, rot.PublicKey
	if newPK == oldPK || newSecret == oldSecret || len(rot.OldPublicKeys) != 1 || rot.OldPublicKeys[0] != oldPK {
		t.Fatalf("rotating a both endpoint: %+v", rot)
	}

	b.publish("invoice.paid", `{"amount": 3, "note": "héllo ✓"}`)
	var edR, bothR receipt
	for _, r := range rc.waitFor(t, 2, wait) {
		switch r.Path {
		case "/ed25519":
			edR = r
		case "/both":
			bothR = r
		}
	}
	if sig := edR.Header.Get("webhook-signature"); !strings.HasPrefix(sig, "v1a,") || strings.Contains(sig, " ") {
		t.Fatalf("ed25519 endpoint header %q, want one v1a entry", sig)
	}
	labels := []string{}
	for _, e := range strings.Fields(bothR.Header.Get("webhook-signature")) {
		labels = append(labels, e[:strings.Index(e, ",")])
	}
	if strings.Join(labels, " ") != "v1 v1a v1 v1a" {
		t.Fatalf("both endpoint during the overlap signs %v, want v1 v1a (new) v1 v1a (old)", labels)
	}
	tamper := func(r receipt) receipt {
		r.Body = bytes.Replace(r.Body, []byte(`"amount":3`), []byte(`"amount":4`), 1)
		if bytes.Equal(r.Body, bothR.Body) && bytes.Equal(r.Body, edR.Body) {
			t.Fatal("tamper changed nothing")
		}
		return r
	}

	type check struct {
		name string
		r    receipt
		keys []string
		ok   bool
	}
	checks := []check{
		{"ed25519, its public key", edR, []string{ed.PublicKey}, true},
		{"ed25519, tampered", tamper(edR), []string{ed.PublicKey}, false},
		{"ed25519, another endpoint's key", edR, []string{newPK}, false},
		{"both, new public key", bothR, []string{newPK}, true},
		{"both, old public key", bothR, []string{oldPK}, true},
		{"both, new secret", bothR, []string{newSecret}, true},
		{"both, old secret", bothR, []string{oldSecret}, true},
		{"both, tampered, every key", tamper(bothR), []string{newPK, oldPK, newSecret, oldSecret}, false},
	}
	var spec []map[string]string
	var specWant []string
	for _, c := range checks {
		// Go SDK.
		v, err := webhook.NewVerifier(c.keys[0], webhook.WithKeys(c.keys[1:]...))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.Verify(c.r.Header, c.r.Body); (err == nil) != c.ok {
			t.Errorf("Go SDK, %s: %v (want ok=%v)", c.name, err, c.ok)
		}
		// TypeScript SDK.
		var secret any = c.keys
		if len(c.keys) == 1 {
			secret = c.keys[0]
		}
		headers := map[string]string{}
		for _, h := range []string{"webhook-id", "webhook-timestamp", "webhook-signature"} {
			headers[h] = c.r.Header.Get(h)
		}
		in, _ := json.Marshal(map[string]any{"scheme": "standard", "secret": secret, "headers": headers, "body_base64": c.r.Body})
		cmd := exec.Command(node, script)
		cmd.Stdin = bytes.NewReader(in)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		switch {
		case c.ok && (err != nil || !strings.Contains(string(out), `"invoice.paid"`)):
			t.Errorf("TypeScript SDK, %s: %v: %s %s", c.name, err, out, stderr.String())
		case !c.ok && !strings.Contains(string(out), "no_matching_signature"):
			t.Errorf("TypeScript SDK, %s: accepted or failed otherwise: %v: %s %s", c.name, err, out, stderr.String())
		}
		// node:crypto from the spec, for every public key of the check.
		for _, k := range c.keys {
			if strings.HasPrefix(k, webhook.PublicKeyPrefix) {
				spec = append(spec, map[string]string{"public_key": k, "id": c.r.Header.Get("webhook-id"), "timestamp": c.r.Header.Get("webhook-timestamp"),
					"signature": c.r.Header.Get("webhook-signature"), "body_base64": base64.StdEncoding.EncodeToString(c.r.Body)})
				specWant = append(specWant, map[bool]string{true: "valid", false: "invalid"}[c.ok])
			}
		}
	}
	in, _ := json.Marshal(spec)
	cmd := exec.Command(node, "--input-type=module", "-e", specVerifyJS)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node:crypto spec verifier: %v: %s", err, stderr.String())
	}
	var got []string
	if err := json.Unmarshal(out, &got); err != nil || strings.Join(got, " ") != strings.Join(specWant, " ") {
		t.Fatalf("node:crypto spec verifier says %s, want %v (%v)", out, specWant, err)
	}
}
