package console

import (
	"net/http"
	"strings"

	"github.com/hookd/hookd/internal/endpoint"
)

// authForm is the endpoint form's receiver authentication section. Its
// secrets (password, token, client secret, private key) are read from a
// post and never written back into a page: an edit shows the current type
// and non-secret fields, and a change enters the secrets again.
type authForm struct {
	// Type is the choice: "keep" (an edit, unchanged), "none", or an
	// endpoint.AuthTypes entry.
	Type    string
	Types   []string
	Current *endpoint.AuthInfo
	// The non-secret fields, shown again after a refusal.
	Username, TokenURL, ClientID, Scopes, Audience string
	secret                                         endpoint.Auth
}

// newAuthForm is the section of a new (current nil) or edited endpoint.
func newAuthForm(current *endpoint.AuthInfo, editing bool) authForm {
	f := authForm{Type: "none", Types: endpoint.AuthTypes, Current: current}
	if editing {
		f.Type = "keep"
	}
	if current != nil {
		f.Username, f.TokenURL, f.ClientID, f.Audience = current.Username, current.TokenURL, current.ClientID, current.Audience
		f.Scopes = strings.Join(current.Scopes, " ")
	}
	return f
}

// readAuthForm reads the section from a post.
func readAuthForm(r *http.Request) authForm {
	v := func(name string) string { return strings.TrimSpace(r.PostFormValue(name)) }
	f := authForm{Type: v("auth_type"), Types: endpoint.AuthTypes,
		Username: v("auth_username"), TokenURL: v("auth_token_url"), ClientID: v("auth_client_id"), Scopes: v("auth_scopes"), Audience: v("auth_audience")}
	if f.Type == "" {
		f.Type = "keep"
	}
	f.secret = endpoint.Auth{Type: f.Type, Username: f.Username, Password: r.PostFormValue("auth_password"), Token: v("auth_token"),
		TokenURL: f.TokenURL, ClientID: f.ClientID, ClientSecret: r.PostFormValue("auth_client_secret"), Scopes: strings.Fields(f.Scopes), Audience: f.Audience,
		CertPEM: r.PostFormValue("auth_cert_pem"), PrivateKeyPEM: r.PostFormValue("auth_private_key_pem"), CAPEM: r.PostFormValue("auth_ca_pem")}
	return f
}

// input is what the op gets: nil keeps the endpoint's auth.
func (f authForm) input() *endpoint.Auth {
	if f.Type == "keep" {
		return nil
	}
	a := f.secret
	return &a
}
