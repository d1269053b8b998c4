package hookd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/webhook"
)

// TestCrossLanguageVerify: hookd delivers a real event in each profile, and
// both the Go SDK and the TypeScript SDK (a node subprocess on the built
// package) verify exactly what arrived.
func TestCrossLanguageVerify(t *testing.T) {
	t.Parallel()
	script := filepath.Join("sdk", "typescript", "test", "verify-stdin.mjs")
	if _, err := os.Stat(filepath.Join("sdk", "typescript", "dist", "esm", "index.js")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the TypeScript SDK is not built; `make test` builds it before the Go tests")
		}
		t.Skip("TypeScript SDK not built: run `make ts-build` (make test does) to include the cross-language check")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node not found: %v", err)
	}
	b := setup(t, dbtest.Engines()[0])
	ctx := context.Background()
	rc := newReceiver(t)

	// standard owner "acme" (from setup) and a kwork owner "shop".
	b.registerType("invoice.paid")
	std := b.endpoint(rc.URL+"/standard", "invoice.*")
	if _, err := b.h.Ops.CreateOwner(ctx, "shop", "kwork", map[string]string{"app": "shop-sync", "environment": "live", "app_kind": "integration", "api_version": "2026-10-28"}); err != nil {
		t.Fatal(err)
	}
	k, err := b.h.Ops.CreateKey(ctx, "shop", owner.Admin)
	if err != nil {
		t.Fatal(err)
	}
	shop := *b
	shop.key = k.Secret
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
