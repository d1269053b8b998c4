package egress

import (
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/hookd/hookd/internal/endpoint"
)

// AuthError says which field of an endpoint's auth is wrong and how.
// Field is the name inside the auth object (cert_pem, token_url, ...).
type AuthError struct {
	Field   string
	Problem string
}

// Error implements error.
func (e *AuthError) Error() string { return "auth." + e.Field + ": " + e.Problem }

// maxAuthField bounds each text of an auth (a PEM chain fits).
const maxAuthField = 64 << 10

// CheckAuth validates an endpoint's auth when it is set: the fields its
// type needs, PEM that parses and a key that matches its certificate, and
// a token URL that is https (http only to an address allow lets through,
// for local development). allow is [Config.Allow]. The error is an
// [*AuthError] naming the field.
func CheckAuth(a *endpoint.Auth, allow []netip.Prefix) error {
	fields := map[string]string{"username": a.Username, "password": a.Password, "token": a.Token, "token_url": a.TokenURL,
		"client_id": a.ClientID, "client_secret": a.ClientSecret, "audience": a.Audience, "cert_pem": a.CertPEM, "private_key_pem": a.PrivateKeyPEM, "ca_pem": a.CAPEM}
	for name, v := range fields {
		if len(v) > maxAuthField {
			return &AuthError{Field: name, Problem: fmt.Sprintf("is %d bytes; at most %d", len(v), maxAuthField)}
		}
	}
	required := func(names ...string) error {
		for _, f := range names {
			if strings.TrimSpace(fields[f]) == "" {
				return &AuthError{Field: f, Problem: "is required for auth type " + a.Type}
			}
		}
		return nil
	}
	switch a.Type {
	case endpoint.AuthBasic:
		if strings.Contains(a.Username, ":") {
			return &AuthError{Field: "username", Problem: "must not contain ':' (HTTP basic auth joins user and password with it)"}
		}
		return required("username", "password")
	case endpoint.AuthBearer:
		if err := required("token"); err != nil {
			return err
		}
		return printable("token", a.Token)
	case endpoint.AuthOAuth2:
		if err := required("token_url", "client_id", "client_secret"); err != nil {
			return err
		}
		return checkTokenURL(a.TokenURL, allow)
	case endpoint.AuthMTLS:
		if err := required("cert_pem", "private_key_pem"); err != nil {
			return err
		}
		_, err := clientTLS(a)
		return err
	}
	return &AuthError{Field: "type", Problem: fmt.Sprintf("%q is not an auth type: use one of %s (or none to remove it)", a.Type, strings.Join(endpoint.AuthTypes, ", "))}
}

// printable refuses control characters, which cannot ride in a header.
func printable(field, v string) error {
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return &AuthError{Field: field, Problem: "has a control character; it must be printable text"}
		}
	}
	return nil
}

// checkTokenURL wants https; plain http only when allow lets its host
// through (a token server on the developer's machine), since the client
// secret rides in the request.
func checkTokenURL(raw string, allow []netip.Prefix) error {
	if err := CheckURL(raw, allow); err != nil {
		return &AuthError{Field: "token_url", Problem: err.Error()}
	}
	u, _ := url.Parse(raw) // CheckURL parsed it
	if u.Scheme == "https" {
		return nil
	}
	p := newPolicy(allow)
	if a, err := netip.ParseAddr(u.Hostname()); err == nil && classify(a.Unmap()) != "" && p.allowed(a.Unmap()) {
		return nil
	}
	if isLocalhost(u.Hostname()) {
		return nil // CheckURL refused it unless loopback is allowed
	}
	return &AuthError{Field: "token_url", Problem: "must be https (the client secret is sent to it); plain http only to an address in --egress-allow (local development)"}
}

// authorize sets the header a basic or bearer auth sends.
func authorize(h http.Header, a *endpoint.Auth) {
	switch a.Type {
	case endpoint.AuthBasic:
		r := http.Request{Header: h}
		r.SetBasicAuth(a.Username, a.Password)
	case endpoint.AuthBearer:
		h.Set("Authorization", "Bearer "+a.Token)
	}
}
