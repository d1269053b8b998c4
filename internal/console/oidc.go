package console

import (
	"context"
	"crypto/sha256"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zitadel/oidc/v3/pkg/client/rp"
	httphelper "github.com/zitadel/oidc/v3/pkg/http"
	"github.com/zitadel/oidc/v3/pkg/oidc"

	"github.com/hookd/hookd/internal/ops"
	"github.com/hookd/hookd/internal/owner"
)

// Console sign-in through the company's identity provider: OpenID Connect's
// authorization-code flow with PKCE, its state and nonce checked
// (zitadel/oidc's relying party). The user's claims decide the role: a
// value of OIDC.Claim listed in OperatorValues makes an operator, one in
// AdminValues the admin of the owner it maps to; a user with neither is
// refused. The session is then a console session like a key's, stored
// hashed (hookd_console_user_sessions), and the audit log names the user.

// OIDC configures the identity provider sign-in (Issuer empty: off).
type OIDC struct {
	Issuer, ClientID, ClientSecret string
	// RedirectURL is the callback the provider sends the browser back to,
	// as registered with it (default: the origin the browser reached, the
	// prefix, and /admin/oidc/callback).
	RedirectURL string
	// Claim is the claim whose values map to roles (default "groups"); a
	// string or a list of strings.
	Claim string
	// OperatorValues are the claim values that make an operator.
	OperatorValues []string
	// AdminValues map a claim value to the owner its users administer.
	AdminValues map[string]string
	// Scopes asked for (default openid, profile, email, groups).
	Scopes []string
	// CookieKey seals the flow's state, nonce and PKCE cookies (every
	// process of one hookd must share it: hookd derives it from the
	// master key).
	CookieKey []byte
	// HTTPClient reaches the provider (nil: http.DefaultClient).
	HTTPClient *http.Client
}

const (
	nonceCookie  = "hookd_oidc_nonce"
	oidcCallback = "/admin/oidc/callback"
)

// oidcFlow is the relying party, made at the first sign-in (the provider's
// discovery document is read then), one per callback URL.
type oidcFlow struct {
	mu      sync.Mutex
	parties map[string]rp.RelyingParty
}

type nonceKey struct{}

func (c *Console) oidcOn() bool { return c.cfg.OIDC.Issuer != "" }

// relyingParty returns the relying party for r's callback URL.
func (c *Console) relyingParty(r *http.Request) (rp.RelyingParty, *httphelper.CookieHandler, error) {
	o := c.cfg.OIDC
	redirect := o.RedirectURL
	if redirect == "" {
		scheme := "http"
		if secureRequest(r) {
			scheme = "https"
		}
		redirect = scheme + "://" + r.Host + c.cfg.Prefix + oidcCallback
	}
	secure := strings.HasPrefix(redirect, "https://")
	c.oidc.mu.Lock()
	defer c.oidc.mu.Unlock()
	cookies := c.oidcCookies(secure)
	if p, ok := c.oidc.parties[redirect]; ok {
		return p, cookies, nil
	}
	scopes := o.Scopes
	if len(scopes) == 0 {
		scopes = []string{oidc.ScopeOpenID, oidc.ScopeProfile, oidc.ScopeEmail, "groups"}
	}
	opts := []rp.Option{
		rp.WithCookieHandler(cookies), rp.WithPKCE(cookies),
		rp.WithVerifierOpts(rp.WithNonce(func(ctx context.Context) string {
			n, _ := ctx.Value(nonceKey{}).(string)
			return n
		})),
		rp.WithErrorHandler(func(w http.ResponseWriter, r *http.Request, errorType, errorDesc, _ string) {
			c.oidcRefused(w, r, http.StatusUnauthorized, "signin.err.oidc_provider", errorType+": "+errorDesc)
		}),
		rp.WithUnauthorizedHandler(func(w http.ResponseWriter, r *http.Request, desc, _ string) {
			c.cfg.Log.Info("console: OIDC sign-in refused", "reason", desc)
			c.oidcRefused(w, r, http.StatusBadRequest, "signin.err.oidc_state")
		}),
	}
	if o.HTTPClient != nil {
		opts = append(opts, rp.WithHTTPClient(o.HTTPClient))
	}
	p, err := rp.NewRelyingPartyOIDC(r.Context(), o.Issuer, o.ClientID, o.ClientSecret, redirect, scopes, opts...)
	if err != nil {
		return nil, nil, err
	}
	if c.oidc.parties == nil {
		c.oidc.parties = map[string]rp.RelyingParty{}
	}
	c.oidc.parties[redirect] = p
	return p, cookies, nil
}

// oidcCookies seals the flow's cookies with keys derived from CookieKey,
// scoped to the console.
func (c *Console) oidcCookies(secure bool) *httphelper.CookieHandler {
	hash := sha256.Sum256(append([]byte("hookd oidc cookie hash:"), c.cfg.OIDC.CookieKey...))
	enc := sha256.Sum256(append([]byte("hookd oidc cookie encryption:"), c.cfg.OIDC.CookieKey...))
	opts := []httphelper.CookieHandlerOpt{httphelper.WithPath(c.cookiePath()), httphelper.WithMaxAge(600)}
	if !secure {
		opts = append(opts, httphelper.WithUnsecure())
	}
	return httphelper.NewCookieHandler(hash[:], enc[:], opts...)
}

// oidcSignin sends the browser to the provider with a fresh state, nonce
// and PKCE challenge, each kept in a sealed cookie for the callback.
func (c *Console) oidcSignin(w http.ResponseWriter, r *http.Request) {
	p, cookies, err := c.relyingParty(r)
	if err != nil {
		c.cfg.Log.Warn("console: OIDC provider unreachable", "issuer", c.cfg.OIDC.Issuer, "error", err)
		c.oidcRefused(w, r, http.StatusBadGateway, "signin.err.oidc_provider", c.cfg.OIDC.Issuer)
		return
	}
	nonce, err := newToken()
	if err != nil {
		c.fail(w, r, nil, err)
		return
	}
	if err := cookies.SetCookie(w, nonceCookie, nonce); err != nil {
		c.fail(w, r, nil, err)
		return
	}
	// The state carries where to go after: it is checked against its
	// cookie, so nobody else's link can choose it.
	state := func() string {
		s, _ := newToken()
		return s + "." + url.QueryEscape(c.safeNext(r.URL.Query().Get("next")))
	}
	rp.AuthURLHandler(state, p, rp.WithURLParam("nonce", nonce))(w, r)
}

// oidcCallbackHandler checks state (its cookie), exchanges the code with
// the PKCE verifier, verifies the ID token (signature, issuer, audience,
// expiry, nonce) and signs the user in with the role their claims give.
func (c *Console) oidcCallbackHandler(w http.ResponseWriter, r *http.Request) {
	p, cookies, err := c.relyingParty(r)
	if err != nil {
		c.oidcRefused(w, r, http.StatusBadGateway, "signin.err.oidc_provider", c.cfg.OIDC.Issuer)
		return
	}
	nonce, err := cookies.CheckCookie(r, nonceCookie)
	if err != nil {
		c.oidcRefused(w, r, http.StatusBadRequest, "signin.err.oidc_state")
		return
	}
	cookies.DeleteCookie(w, nonceCookie)
	ctx := context.WithValue(r.Context(), nonceKey{}, nonce)
	rp.CodeExchangeHandler(func(w http.ResponseWriter, r *http.Request, tokens *oidc.Tokens[*oidc.IDTokenClaims], state string, _ rp.RelyingParty) {
		c.oidcSession(w, r, tokens.IDTokenClaims, state)
	}, p)(w, r.WithContext(ctx))
}

// oidcSession maps the user's claims to a role and starts the session.
func (c *Console) oidcSession(w http.ResponseWriter, r *http.Request, claims *oidc.IDTokenClaims, state string) {
	ctx := r.Context()
	role, ownerID := c.oidcRole(claims)
	if role == "" {
		c.cfg.Log.Info("console: OIDC user has no role", "subject", claims.Subject, "claim", c.oidcClaim())
		c.oidcRefused(w, r, http.StatusForbidden, "signin.err.oidc_norole", c.oidcClaim())
		return
	}
	started := c.startSession(w, r, role, ownerID, func(hash []byte, actsOn string, now time.Time) error {
		st := &ops.Session{Subject: claims.Subject, User: userName(claims), Role: role, KeyOwner: ownerID, OwnerID: actsOn, ExpiresAt: now.Add(c.cfg.SessionTTL)}
		return c.cfg.Ops.Pages().CreateUserSession(ctx, hash, st, now)
	})
	if !started {
		return
	}
	_, next, _ := strings.Cut(state, ".")
	next, _ = url.QueryUnescape(next)
	// The callback is a navigation from the provider's site: a redirect
	// from it would not carry the session cookie (SameSite=Strict). A page
	// of this site that moves on makes the next request same-site.
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprintf(w, "<!doctype html><meta http-equiv=\"refresh\" content=\"0;url=%s\">", html.EscapeString(c.safeNext(next)))
}

func (c *Console) oidcClaim() string {
	if c.cfg.OIDC.Claim == "" {
		return "groups"
	}
	return c.cfg.OIDC.Claim
}

// oidcRole is the role the claims give: operator before admin; among admin
// values, the first in sorted order. "" when none matches.
func (c *Console) oidcRole(claims *oidc.IDTokenClaims) (owner.Role, string) {
	values := claimValues(claims.Claims[c.oidcClaim()])
	slices.Sort(values)
	for _, v := range values {
		if slices.Contains(c.cfg.OIDC.OperatorValues, v) {
			return owner.Operator, ""
		}
	}
	for _, v := range values {
		if o, ok := c.cfg.OIDC.AdminValues[v]; ok {
			return owner.Admin, o
		}
	}
	return "", ""
}

func claimValues(v any) []string {
	switch t := v.(type) {
	case string:
		return strings.Fields(t)
	case []any:
		var out []string
		for _, e := range t {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	case []string:
		return slices.Clone(t)
	}
	return nil
}

// userName is what the console and the audit log call the user.
func userName(claims *oidc.IDTokenClaims) string {
	for _, n := range []string{claims.Email, claims.PreferredUsername, claims.Name} {
		if n != "" {
			return n
		}
	}
	return claims.Subject
}

// oidcRefused answers a sign-in the provider or hookd refused with the
// sign-in page saying why.
func (c *Console) oidcRefused(w http.ResponseWriter, r *http.Request, status int, key string, args ...any) {
	l := c.localeOf(r, nil)
	c.render(w, r, status, "signin", nil, msg("title.signin"), c.signinData("", "", l.T(key, args...)))
}
