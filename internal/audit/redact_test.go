package audit_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/audit"
)

type creds struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers" audit:"secret"`
}

type withSecrets struct {
	creds
	Name         string         `json:"name"`
	ClientSecret string         `json:"client_secret"`
	Nested       map[string]any `json:"nested"`
}

// TestFields: a field marked in its type keeps its name and loses its
// values (even a credential header's name goes), a field named like a
// secret loses its value at any depth, and the rest stays as is.
func TestFields(t *testing.T) {
	v := withSecrets{
		creds:        creds{URL: "https://r.example/hook", Headers: map[string]string{"X-Team": "s3cr3t-a", "Authorization": "Bearer s3cr3t-b"}},
		Name:         "plain",
		ClientSecret: "s3cr3t-c",
		Nested:       map[string]any{"list": []any{map[string]any{"api_token": "s3cr3t-d", "ok": "fine"}}},
	}
	m := audit.Fields(v)
	b, _ := json.Marshal(m)
	if strings.Contains(string(b), "s3cr3t") || strings.Contains(string(b), "Authorization") {
		t.Errorf("a secret survived: %s", b)
	}
	for _, want := range []string{`"url":"https://r.example/hook"`, `"name":"plain"`, `"X-Team":"[redacted]"`, `"client_secret":"[redacted]"`, `"ok":"fine"`, `"api_token":"[redacted]"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
}

func TestDenied(t *testing.T) {
	for name, want := range map[string]bool{"secret": true, "Client_Secret": true, "X-Api-Key": true, "api_key": true, "AUTHORIZATION": true, "public_key": false, "url": false, "session_token": true, "password_hash": true} {
		if got := audit.Denied(name); got != want {
			t.Errorf("Denied(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestURLPasswords: a URL's password is masked in any string at any depth
// (a broker destination's, an SQS access key's), the rest of the URL
// kept; a URL without one, or a string that is not a URL, stays as is.
func TestURLPasswords(t *testing.T) {
	v := map[string]any{
		"url":   "amqp://app:s3cr3t-e@rabbit.internal:5672/prod?exchange=x&routing_key=k",
		"list":  []any{"sqs://AKIAEXAMPLE:s3cr3t-f@sqs.eu-west-1.amazonaws.com/1/orders"},
		"kafka": "kafka://user:s3cr3t-g@b1:9092,b2:9092/topic",
		"plain": "https://r.example/hook?a=b",
		"user":  "https://someone@r.example/hook",
		"text":  "mail me @ noon: a://b",
	}
	b, _ := json.Marshal(audit.Fields(v))
	if strings.Contains(string(b), "s3cr3t") {
		t.Errorf("a URL's password survived: %s", b)
	}
	for _, want := range []string{
		`"url":"amqp://app:***@rabbit.internal:5672/prod?exchange=x\u0026routing_key=k"`,
		`"sqs://AKIAEXAMPLE:***@sqs.eu-west-1.amazonaws.com/1/orders"`,
		`"plain":"https://r.example/hook?a=b"`,
		`"user":"https://someone@r.example/hook"`,
		`"text":"mail me @ noon: a://b"`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
}
