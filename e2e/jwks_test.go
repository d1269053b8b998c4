package e2e_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/webhook"
)

// jwksDoc is an owner's key set as published.
type jwksDoc struct {
	Keys []map[string]any `json:"keys"`
}

// getJWKS fetches an owner's key set without any credential.
func (b *bundle) getJWKS(owner string) (jwksDoc, http.Header) {
	b.t.Helper()
	resp, err := http.Get(b.api.URL + "/.well-known/hookd/" + owner + "/jwks.json")
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.t.Fatalf("jwks of %s: HTTP %d", owner, resp.StatusCode)
	}
	var doc jwksDoc
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		b.t.Fatal(err)
	}
	return doc, resp.Header
}

// checkJWKShape checks RFC 7517's shape (and RFC 8037's for Ed25519): a
// "keys" array of objects with kty, and for OKP keys crv Ed25519 and x the
// 32-byte key in unpadded base64url; kid unique and the RFC 7638
// thumbprint; no private member (d).
func checkJWKShape(t *testing.T, doc jwksDoc) {
	t.Helper()
	kids := map[string]bool{}
	for _, k := range doc.Keys {
		x, _ := k["x"].(string)
		raw, err := base64.RawURLEncoding.DecodeString(x)
		if k["kty"] != "OKP" || k["crv"] != "Ed25519" || err != nil || len(raw) != 32 || k["use"] != "sig" || k["alg"] != "EdDSA" {
			t.Errorf("key %v is not an RFC 8037 Ed25519 signing JWK", k)
		}
		if _, private := k["d"]; private {
			t.Fatalf("key %v carries its private part", k)
		}
		kid, _ := k["kid"].(string)
		want, err := webhook.JWKThumbprint(webhook.PublicKeyPrefix + base64.StdEncoding.EncodeToString(raw))
		if err != nil || kid != want {
			t.Errorf("kid %q, want the RFC 7638 thumbprint %q", kid, want)
		}
		if kids[kid] {
			t.Errorf("kid %q twice", kid)
		}
		kids[kid] = true
	}
}

// TestJWKS: the public keys of an owner's Ed25519 endpoints are published
// at a stable URL with no key needed; the Go SDK verifies real deliveries
// against it, across a rotation whose old key stays in the set while it
// still signs. HMAC-only endpoints and other owners' keys are not in it.
func TestJWKS(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		rc := newReceiver(t)
		b.registerType("jwks.thing")
		var ep struct {
			endpointOut
			PublicKey string `json:"public_key"`
		}
		b.must(201, "POST", "/api/admin/webhooks", map[string]any{"url": rc.URL + "/signed", "event_types": []string{"jwks.thing"}, "signature": "ed25519"}, &ep)
		b.endpoint(rc.URL+"/hmac", "never.*") // hmac only: nothing to publish

		doc, h := b.getJWKS("acme")
		if ct := h.Get("Content-Type"); ct != "application/jwk-set+json" {
			t.Errorf("Content-Type %q, want application/jwk-set+json", ct)
		}
		checkJWKShape(t, doc)
		if len(doc.Keys) != 1 || doc.Keys[0]["endpoint_id"] != ep.ID {
			t.Fatalf("set %v: want the one Ed25519 endpoint's key", doc.Keys)
		}
		if other, _ := b.getJWKS("nobody"); len(other.Keys) != 0 {
			t.Fatalf("an unknown owner's set has %d keys", len(other.Keys))
		}

		v, err := webhook.NewJWKSVerifier(webhook.JWKSConfig{URL: b.api.URL + "/.well-known/hookd/acme/jwks.json", EndpointID: ep.ID, MinRefetch: time.Nanosecond})
		if err != nil {
			t.Fatal(err)
		}
		b.publish("jwks.thing", `{"n":1}`)
		first := rc.waitFor(t, 1, 60*time.Second)[0]
		if _, err := v.Verify(first.Header, first.Body); err != nil {
			t.Fatalf("first delivery does not verify against the JWKS: %v", err)
		}

		var rotated struct {
			PublicKey     string   `json:"public_key"`
			OldPublicKeys []string `json:"old_public_keys"`
		}
		b.must(200, "POST", "/api/admin/webhooks/"+ep.ID+"/rotate_secret", map[string]any{"overlap": "1h"}, &rotated)
		doc, _ = b.getJWKS("acme")
		checkJWKShape(t, doc)
		if len(doc.Keys) != 2 {
			t.Fatalf("during the overlap the set has %d keys, want the new and the old", len(doc.Keys))
		}
		var expiring int
		for _, k := range doc.Keys {
			if k["expires_at"] != nil {
				expiring++
			}
		}
		if expiring != 1 {
			t.Errorf("%d keys say when they expire, want the old one", expiring)
		}

		// A verifier that knows only the new key still verifies: the
		// delivery carries both signatures during the overlap.
		b.publish("jwks.thing", `{"n":2}`)
		second := rc.waitFor(t, 2, 60*time.Second)[1]
		if n := strings.Count(second.Header.Get("webhook-signature"), "v1a,"); n != 2 {
			t.Fatalf("during the overlap the delivery carries %d v1a signatures, want 2", n)
		}
		if _, err := v.Verify(second.Header, second.Body); err != nil {
			t.Fatalf("delivery after the rotation does not verify against the JWKS: %v", err)
		}
		newOnly, err := webhook.NewVerifier(rotated.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := newOnly.Verify(second.Header, second.Body); err != nil {
			t.Fatalf("the new key does not verify: %v", err)
		}

		tsVerifyJWKS(t, b.api.URL+"/.well-known/hookd/acme/jwks.json", ep.ID, first, second) // old-key and overlap deliveries, one set

		b.must(200, "POST", "/api/admin/webhooks/"+ep.ID+"/expire_old_secrets", nil, nil)
		if doc, _ = b.getJWKS("acme"); len(doc.Keys) != 1 || doc.Keys[0]["expires_at"] != nil {
			t.Fatalf("after the overlap ended the set is %v, want the new key only", doc.Keys)
		}
		b.publish("jwks.thing", `{"n":3}`)
		third := rc.waitFor(t, 3, 60*time.Second)[2]
		if _, err := v.Verify(third.Header, third.Body); err != nil {
			t.Fatalf("delivery after the overlap does not verify against the JWKS: %v", err)
		}
		tsVerifyJWKS(t, b.api.URL+"/.well-known/hookd/acme/jwks.json", ep.ID, third)
		// A forged body fails however fresh the set.
		if _, err := v.Verify(third.Header, append([]byte(nil), strings.Replace(string(third.Body), "3", "4", 1)...)); err == nil {
			t.Fatal("a changed body verified")
		}
	})
}

// tsVerifyJWKS has the TypeScript SDK (createJwksVerifier, in a node
// subprocess on the built package) verify rs against the key set at url,
// in order, with one cached verifier. Where the SDK is not built it says
// so and checks nothing more (CI builds it and fails without it).
func tsVerifyJWKS(t *testing.T, url, endpointID string, rs ...receipt) {
	t.Helper()
	if _, err := os.Stat(filepath.Join("..", "sdk", "typescript", "dist", "esm", "index.js")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the TypeScript SDK is not built; `make test` builds it before the Go tests")
		}
		t.Log("TypeScript SDK not built (make ts-build): its JWKS check is left out")
		return
	}
	type message struct {
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
	}
	in := struct {
		URL        string    `json:"url"`
		EndpointID string    `json:"endpoint_id"`
		Messages   []message `json:"messages"`
	}{URL: url, EndpointID: endpointID}
	var want []string
	for _, r := range rs {
		h := map[string]string{}
		for _, name := range []string{"webhook-id", "webhook-timestamp", "webhook-signature"} {
			h[name] = r.Header.Get(name)
		}
		in.Messages = append(in.Messages, message{Headers: h, Body: string(r.Body)})
		var ev struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(r.Body, &ev); err != nil {
			t.Fatal(err)
		}
		want = append(want, "ok "+ev.ID)
	}
	stdin, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", filepath.Join("..", "sdk", "typescript", "test", "verify-jwks.mjs"))
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node verify-jwks: %v: %s", err, out)
	}
	if got, w := strings.Join(strings.Fields(string(out)), " "), strings.Join(want, " "); got != w {
		t.Fatalf("the TypeScript SDK answered %q, want %q", got, w)
	}
}
