package endpoint

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"strings"
	"time"
)

// The ways an endpoint's receiver can authenticate hookd, beside the
// signature every delivery carries anyway.
const (
	AuthNone   = ""
	AuthBasic  = "basic"
	AuthBearer = "bearer"
	AuthOAuth2 = "oauth2_client_credentials"
	AuthMTLS   = "mtls"
	authRemove = "none" // what an update sends to remove the auth
)

// AuthTypes lists the auth types an owner can choose, in the order forms
// offer them.
var AuthTypes = []string{AuthBasic, AuthBearer, AuthOAuth2, AuthMTLS}

// Auth is how hookd proves itself to an endpoint's receiver. It is sealed
// at rest with the endpoint's keys (Keys.Auth), so it is unsealed in the
// same one place; only its Info is ever shown.
type Auth struct {
	Type string `json:"type"`
	// basic
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	// bearer
	Token string `json:"token,omitempty"`
	// oauth2_client_credentials
	TokenURL     string   `json:"token_url,omitempty"`
	ClientID     string   `json:"client_id,omitempty"`
	ClientSecret string   `json:"client_secret,omitempty"`
	Scopes       []string `json:"scopes,omitempty"`
	Audience     string   `json:"audience,omitempty"`
	// mtls: PEM; CAPEM (optional) is what the receiver's certificate must
	// chain to instead of the system roots.
	CertPEM       string `json:"cert_pem,omitempty"`
	PrivateKeyPEM string `json:"private_key_pem,omitempty"`
	CAPEM         string `json:"ca_pem,omitempty"`
}

// AuthInfo is the public side of an endpoint's Auth, shown in its record:
// which type, and the fields that are not secret.
type AuthInfo struct {
	Type     string   `json:"type"`
	Username string   `json:"username,omitempty"`
	TokenURL string   `json:"token_url,omitempty"`
	ClientID string   `json:"client_id,omitempty"`
	Scopes   []string `json:"scopes,omitempty"`
	Audience string   `json:"audience,omitempty"`
	// CertSubject, CertNotAfter and CertSHA256 describe the client
	// certificate (mtls), so an owner can tell which one is in use.
	CertSubject  string     `json:"cert_subject,omitempty"`
	CertNotAfter *time.Time `json:"cert_not_after,omitempty"`
	CertSHA256   string     `json:"cert_sha256,omitempty"`
	// ReceiverCA says a receiver CA was given (mtls).
	ReceiverCA bool `json:"receiver_ca,omitempty"`
}

// Info is a's public side (nil for no auth).
func (a *Auth) Info() *AuthInfo {
	if a == nil || a.Type == AuthNone {
		return nil
	}
	i := &AuthInfo{Type: a.Type, Username: a.Username, TokenURL: a.TokenURL, ClientID: a.ClientID, Scopes: a.Scopes, Audience: a.Audience, ReceiverCA: a.CAPEM != ""}
	if a.Type == AuthMTLS {
		if b, _ := pem.Decode([]byte(a.CertPEM)); b != nil {
			sum := sha256.Sum256(b.Bytes)
			i.CertSHA256 = hex.EncodeToString(sum[:])
			if c, err := x509.ParseCertificate(b.Bytes); err == nil {
				i.CertSubject = c.Subject.String()
				after := c.NotAfter.UTC()
				i.CertNotAfter = &after
			}
		}
	}
	return i
}

// RemovesAuth says whether an update's auth type asks to remove the auth.
func RemovesAuth(typ string) bool { return typ == authRemove }

// AuthOf returns the auth sealed with the keys in opened (what
// Sealer.Open returned), nil when there is none. Most endpoints have
// none, and their keys are not decoded here.
func AuthOf(opened string) (*Auth, error) {
	if !strings.Contains(opened, `"auth"`) {
		return nil, nil
	}
	k, err := ParseKeys(opened)
	if err != nil {
		return nil, err
	}
	return k.Auth, nil
}
