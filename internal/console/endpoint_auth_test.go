package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/egress/egresstest"
)

// TestEndpointAuthForm: the endpoint form's receiver authentication
// section creates an endpoint with basic auth, shows the type (never the
// password) when editing, keeps it when left alone, refuses a bad PEM next
// to the section with a 422, and removes it.
func TestEndpointAuthForm(t *testing.T) {
	t.Parallel()
	for _, backend := range dbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			s := startSite(t, backend)
			c := newFormClient(t, s)
			if resp := c.signIn(s.keys["acme"]); resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("sign-in: %d", resp.StatusCode)
			}
			_, page := c.get("/admin/webhooks/new")
			for _, want := range []string{`name="auth_type"`, `value="oauth2_client_credentials"`, `name="auth_private_key_pem"`, "Receiver authentication"} {
				if !strings.Contains(page, want) {
					t.Fatalf("the new endpoint form has no %s", want)
				}
			}
			form := url.Values{"csrf": {c.csrf()}, "kind": {"http"}, "url": {"https://receiver.example/hooks"}, "types": {"invoice.paid"}, "enabled": {"on"},
				"auth_type": {"basic"}, "auth_username": {"hookd"}, "auth_password": {"form-pa55word"}}
			if resp, body := c.post("/admin/webhooks", s.srv.URL, form); resp.StatusCode != http.StatusCreated || strings.Contains(body, "form-pa55word") {
				t.Fatalf("create with basic auth: %d (password shown: %v)", resp.StatusCode, strings.Contains(body, "form-pa55word"))
			}
			var list struct {
				Data []struct {
					ID   string `json:"id"`
					Auth *struct {
						Type     string `json:"type"`
						Username string `json:"username"`
					} `json:"auth"`
				} `json:"data"`
			}
			s.api(s.keys["acme"], "GET", "/api/admin/webhooks", nil, &list)
			if len(list.Data) != 1 || list.Data[0].Auth == nil || list.Data[0].Auth.Type != "basic" || list.Data[0].Auth.Username != "hookd" {
				t.Fatalf("the form made %+v, want one endpoint with basic auth for hookd", list.Data)
			}
			id := list.Data[0].ID

			_, edit := c.get("/admin/webhooks/" + id + "/edit")
			if !strings.Contains(edit, `id="auth-current"`) || !strings.Contains(edit, "HTTP basic") || strings.Contains(edit, "form-pa55word") {
				t.Fatalf("the edit form does not show the current auth, or shows its password")
			}
			keep := url.Values{"csrf": {c.csrf()}, "url": {"https://receiver.example/hooks"}, "types": {"invoice.paid"}, "description": {"renamed"}, "auth_type": {"keep"}}
			if resp, _ := c.post("/admin/webhooks/"+id, s.srv.URL, keep); resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("save keeping the auth: %d", resp.StatusCode)
			}
			list.Data = nil
			s.api(s.keys["acme"], "GET", "/api/admin/webhooks", nil, &list)
			if list.Data[0].Auth == nil || list.Data[0].Auth.Type != "basic" {
				t.Fatalf("keep changed the auth to %+v", list.Data[0].Auth)
			}

			pair := egresstest.NewCA(t, "CA").Client(t, "hookd")
			bad := url.Values{"csrf": {c.csrf()}, "url": {"https://receiver.example/hooks"}, "types": {"invoice.paid"}, "auth_type": {"mtls"},
				"auth_cert_pem": {pair.CertPEM}, "auth_private_key_pem": {"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"}}
			resp, body := c.post("/admin/webhooks/"+id, s.srv.URL, bad)
			if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, `id="auth-error"`) || !strings.Contains(body, "auth.private_key_pem") {
				t.Fatalf("a bad key: %d, want 422 with the error at the auth section naming auth.private_key_pem", resp.StatusCode)
			}
			if strings.Contains(body, strings.Split(pair.KeyPEM, "\n")[1]) {
				t.Fatal("the refusal shows a private key")
			}

			none := url.Values{"csrf": {c.csrf()}, "url": {"https://receiver.example/hooks"}, "types": {"invoice.paid"}, "auth_type": {"none"}}
			if resp, _ := c.post("/admin/webhooks/"+id, s.srv.URL, none); resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("remove the auth: %d", resp.StatusCode)
			}
			list.Data = nil // a fresh decode: an absent auth must read as none
			s.api(s.keys["acme"], "GET", "/api/admin/webhooks", nil, &list)
			if list.Data[0].Auth != nil {
				t.Fatalf("none left auth %+v", list.Data[0].Auth)
			}
		})
	}
}
