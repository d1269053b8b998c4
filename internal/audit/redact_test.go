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
