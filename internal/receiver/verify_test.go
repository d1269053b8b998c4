package receiver

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/webhook"
)

func TestVerify(t *testing.T) {
	t.Parallel()
	body := `{"id":"evt_1","type":"post.published","subject":"posts/7","data":{"published":true}}`
	signer, err := webhook.NewSigner(standardSecret)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Unix()
	ts := strconv.FormatInt(now, 10)
	stdHeaders := []string{
		"--header", "webhook-id: msg_1",
		"--header", "webhook-timestamp: " + ts,
		"--header", "webhook-signature: " + signer.Sign("msg_1", now, []byte(body)),
	}
	kworkBody := `{"id":"evt_2","type":"app.installed","tenant":"acme_corp","data":{}}`
	kworkSig := "X-Kwork-Signature: " + webhook.SignKwork(kworkSecret, now, []byte(kworkBody))

	tests := []struct {
		name     string
		args     []string
		stdin    string
		code     int
		stdout   string
		stderr   string
		wantType string
	}{
		{name: "valid standard", args: append([]string{"--secret", standardSecret}, stdHeaders...), stdin: body, code: 0, wantType: "post.published"},
		{name: "valid kwork", args: []string{"--secret", kworkSecret, "--profile", "kwork", "--header", kworkSig}, stdin: kworkBody, code: 0, wantType: "app.installed"},
		{name: "trailing newline", args: append([]string{"--secret", standardSecret}, stdHeaders...), stdin: body + "\n", code: 1, stderr: "no matching signature"},
		{name: "wrong secret", args: []string{"--secret", "kw_other", "--profile", "kwork", "--header", kworkSig}, stdin: kworkBody, code: 1, stderr: "no matching signature"},
		{name: "no signature header", args: append([]string{"--secret", standardSecret}, stdHeaders[:4]...), stdin: body, code: 1, stderr: "missing header: webhook-signature"},
		{name: "no headers", args: []string{"--secret", standardSecret}, stdin: body, code: 1, stderr: "missing header: webhook-id"},
		{name: "no secret", args: stdHeaders, stdin: body, code: 2, stderr: "--secret is required"},
		{name: "bad header flag", args: []string{"--secret", standardSecret, "--header", "no-colon"}, stdin: body, code: 2, stderr: "want 'Name: value'"},
		{name: "bad profile", args: []string{"--secret", standardSecret, "--profile", "v2"}, stdin: body, code: 2, stderr: "want standard or kwork"},
		{name: "stray argument", args: []string{"--secret", standardSecret, "body.json"}, stdin: body, code: 2, stderr: "read from stdin"},
		{name: "help", args: []string{"-h"}, code: 0, stdout: "usage: hookd verify"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Verify(tt.args, strings.NewReader(tt.stdin), &stdout, &stderr)
			if code != tt.code || !strings.Contains(stderr.String(), tt.stderr) {
				t.Fatalf("exit %d, stderr %q; want %d containing %q", code, stderr.String(), tt.code, tt.stderr)
			}
			if tt.stdout != "" {
				if !strings.Contains(stdout.String(), tt.stdout) || stderr.Len() != 0 {
					t.Errorf("stdout %q, stderr %q: want %q on stdout only", stdout.String(), stderr.String(), tt.stdout)
				}
				return
			}
			if tt.wantType == "" {
				if stdout.Len() != 0 {
					t.Errorf("stdout %q, want nothing", stdout.String())
				}
				return
			}
			var ev webhook.Event
			if err := json.Unmarshal(stdout.Bytes(), &ev); err != nil || ev.Type != tt.wantType {
				t.Errorf("stdout %q: event %+v, %v", stdout.String(), ev, err)
			}
			if !strings.Contains(stdout.String(), "\n  \"type\": ") {
				t.Errorf("stdout is not indented: %q", stdout.String())
			}
		})
	}
}

func TestVerifyTooOld(t *testing.T) {
	t.Parallel()
	body := []byte(`{"id":"evt_1","type":"open.ping","data":{}}`)
	old := time.Now().Add(-time.Hour).Unix()
	var stdout, stderr bytes.Buffer
	code := Verify([]string{"--secret", kworkSecret, "--profile", "kwork",
		"--header", "X-Kwork-Signature: " + webhook.SignKwork(kworkSecret, old, body)},
		bytes.NewReader(body), &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "timestamp too old") {
		t.Fatalf("exit %d, stderr %q; want 1 timestamp too old", code, stderr.String())
	}
}
