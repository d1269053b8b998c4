package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/audit"
	"github.com/hookd/hookd/internal/ops"
	"github.com/hookd/hookd/internal/owner"
)

const cookieName = "hookd_session"

// session is a signed-in browser: the stored session and its token's CSRF
// value.
type session struct {
	*ops.Session
	hash []byte
	csrf string
	// portal is set for a portal session (nil: a console sign-in).
	portal *portalSession
	// actor is who the audit log names for the session's changes.
	actor audit.Actor
}

func (s *session) principal() ops.Principal {
	return ops.Principal{KeyID: s.KeyID, Role: s.Role, OwnerID: s.OwnerID, Actor: s.actor}
}

func (s *session) operator() bool { return s.Role == owner.Operator }

// csrfToken derives the session's CSRF token from its secret token: the
// database holds only SHA-256(token), from which it cannot be computed.
func csrfToken(token string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("hookd console csrf"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func hashToken(token string) []byte {
	h := sha256.Sum256([]byte("hookd console session:" + token))
	return h[:]
}

type authedHandler func(w http.ResponseWriter, r *http.Request, s *session)

// authed resolves the session cookie, refusing (sign-in page for a GET, 401
// otherwise) when there is none, it expired, or its key was revoked; and
// checks Origin and the CSRF token on every state change.
func (c *Console) authed(h authedHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := c.session(r)
		if err != nil {
			if r.Method == http.MethodGet && r.Header.Get("Accept") != "application/json" {
				c.redirect(w, r, "/admin/signin?next="+url.QueryEscape(c.cfg.Prefix+r.URL.RequestURI()))
				return
			}
			c.fail(w, r, nil, err)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if err := c.checkForm(r, s); err != nil {
				c.fail(w, r, s, err)
				return
			}
		}
		h(w, r, s)
	})
}

// checkForm refuses a state change from another site (Origin) or without
// the session's CSRF token.
func (c *Console) checkForm(r *http.Request, s *session) error {
	if err := checkOrigin(r); err != nil {
		return err
	}
	got := r.Header.Get("X-CSRF-Token")
	if got == "" {
		got = r.PostFormValue("csrf")
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) != 1 {
		return apperr.New(apperr.Forbidden, "the form's CSRF token is missing or stale: reload the page and try again").Keyed("csrf")
	}
	return nil
}

func (c *Console) session(r *http.Request) (*session, error) {
	ck, err := r.Cookie(cookieName)
	if err != nil || ck.Value == "" {
		return nil, apperr.New(apperr.Unauthorized, "not signed in: sign in at %s/admin/signin", c.cfg.Prefix)
	}
	hash := hashToken(ck.Value)
	st, err := c.cfg.Ops.Pages().SessionByHash(r.Context(), hash, c.cfg.Now())
	if err != nil {
		return nil, err
	}
	if st.Revoked {
		// A revoked key ends its sessions at their next request: this
		// one, and with it every other of the key.
		if err := c.cfg.Ops.Pages().DeleteKeySessions(r.Context(), st.KeyID); err != nil {
			c.cfg.Log.Warn("end revoked session", "error", err)
		}
		return nil, apperr.New(apperr.Unauthorized, "API key %s was revoked: sign in with another key", st.KeyID)
	}
	actor := audit.Actor{Kind: audit.KindConsole, ID: st.KeyID, Remote: r.RemoteAddr}
	if st.Subject != "" {
		actor = audit.Actor{Kind: audit.KindOIDC, ID: st.Subject, Name: st.User, Remote: r.RemoteAddr}
	}
	return &session{Session: st, hash: hash, csrf: csrfToken(ck.Value), actor: actor}, nil
}

// checkOrigin refuses a state change whose Origin (or, without one, whose
// Referer) is not this site: a cross-site form post.
func checkOrigin(r *http.Request) error {
	origin := r.Header.Get("Origin")
	if origin == "" {
		if ref, err := url.Parse(r.Header.Get("Referer")); err == nil && ref.Host != "" {
			origin = ref.Scheme + "://" + ref.Host
		}
	}
	if origin == "" || origin == "null" {
		return apperr.New(apperr.Forbidden, "a state change needs an Origin header (sent by every browser): refused").Keyed("origin.missing")
	}
	u, err := url.Parse(origin)
	if err != nil || !strings.EqualFold(u.Host, r.Host) {
		return apperr.New(apperr.Forbidden, "origin %q is not this site (%s): cross-site requests are refused", origin, r.Host).Keyed("origin.other", origin)
	}
	return nil
}

func secureRequest(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

type signinData struct {
	Next, Error string
	// Refused says why the identity provider's sign-in was refused.
	Refused string
	// OIDC offers the identity provider; KeySignin the API key form.
	OIDC, KeySignin bool
}

func (c *Console) signinData(next, keyError, refused string) signinData {
	return signinData{Next: next, Error: keyError, Refused: refused, OIDC: c.oidcOn(), KeySignin: !c.cfg.NoKeySignin}
}

func (c *Console) signinPage(w http.ResponseWriter, r *http.Request) {
	if _, err := c.session(r); err == nil {
		http.Redirect(w, r, c.safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	c.render(w, r, http.StatusOK, "signin", nil, msg("title.signin"), c.signinData(r.URL.Query().Get("next"), "", ""))
}

// signin starts a session from an API key of role admin or operator.
func (c *Console) signin(w http.ResponseWriter, r *http.Request) {
	next := r.PostFormValue("next")
	l := c.localeOf(r, nil)
	again := func(status int, says string) {
		c.render(w, r, status, "signin", nil, msg("title.signin"), c.signinData(next, says, ""))
	}
	if c.cfg.NoKeySignin {
		again(http.StatusForbidden, l.T("signin.err.keys_off"))
		return
	}
	if err := checkOrigin(r); err != nil {
		again(http.StatusForbidden, l.Err(err))
		return
	}
	key := strings.TrimSpace(r.PostFormValue("key"))
	if key == "" {
		again(http.StatusUnprocessableEntity, l.T("signin.err.empty"))
		return
	}
	ctx := r.Context()
	k, err := c.cfg.Ops.Pages().APIKey(ctx, owner.HashKey(key))
	switch {
	case apperr.CodeOf(err) == apperr.Unauthorized:
		again(http.StatusUnauthorized, l.T("signin.err.unknown"))
		return
	case err != nil:
		c.fail(w, r, nil, err)
		return
	case k.RevokedAt != nil:
		again(http.StatusUnauthorized, l.T("signin.err.revoked"))
		return
	case k.Role != owner.Admin && k.Role != owner.Operator:
		again(http.StatusForbidden, l.T("signin.err.role", l.T("role."+string(k.Role))))
		return
	}
	started := c.startSession(w, r, k.Role, k.OwnerID, func(hash []byte, ownerID string, now time.Time) error {
		return c.cfg.Ops.Pages().CreateSession(ctx, hash, k.ID, ownerID, now, now.Add(c.cfg.SessionTTL))
	})
	if started {
		http.Redirect(w, r, c.safeNext(next), http.StatusSeeOther)
	}
}

// startSession makes a session token, stores the session with save (the
// token's hash, the owner it acts on: an operator's first), and gives the
// browser its cookie; false when that failed (answered already). Expired
// sessions go when anyone signs in: no job of their own.
func (c *Console) startSession(w http.ResponseWriter, r *http.Request, role owner.Role, ownerID string, save func(hash []byte, ownerID string, now time.Time) error) bool {
	token, err := newToken()
	if err != nil {
		c.fail(w, r, nil, err)
		return false
	}
	if role == owner.Operator {
		ownerID = c.firstOwner(r.Context())
	}
	if err := save(hashToken(token), ownerID, c.cfg.Now()); err != nil {
		c.fail(w, r, nil, err)
		return false
	}
	if _, err := c.cfg.Ops.Pages().PruneSessions(r.Context(), c.cfg.Now()); err != nil {
		c.cfg.Log.Warn("prune console sessions", "error", err)
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: token, Path: c.cookiePath(), HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: secureRequest(r), MaxAge: int(c.cfg.SessionTTL.Seconds())})
	return true
}

func (c *Console) firstOwner(ctx context.Context) string {
	all, err := c.cfg.Ops.Pages().ListOwners(ctx)
	if err != nil || len(all) == 0 {
		return ""
	}
	return all[0].ID
}

// signout ends every session the browser sent a cookie for: this one, and
// one set at path / by a hookd before the cookie was scoped to the
// console, which would otherwise still sign the browser in.
func (c *Console) signout(w http.ResponseWriter, r *http.Request, s *session) {
	for _, ck := range r.CookiesNamed(cookieName) {
		if err := c.cfg.Ops.Pages().DeleteSession(r.Context(), hashToken(ck.Value)); err != nil {
			c.fail(w, r, s, err)
			return
		}
	}
	for _, path := range []string{c.cookiePath(), c.cfg.Prefix + "/"} {
		http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: path, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secureRequest(r), MaxAge: -1})
	}
	c.redirect(w, r, "/admin/signin")
}

// switchOwner lets an operator act on another owner (owners.get checks it
// exists and that the key may).
func (c *Console) switchOwner(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PostFormValue("owner")
	if !s.operator() {
		c.fail(w, r, s, apperr.New(apperr.Forbidden, "only an operator session can switch owners"))
		return
	}
	if _, err := c.call(r.Context(), s, "owners.get", &ops.OwnerRef{ID: id}); err != nil {
		c.fail(w, r, s, err)
		return
	}
	if err := c.cfg.Ops.Pages().SetSessionOwner(r.Context(), s.hash, id); err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.redirect(w, r, "/admin/webhooks")
}

func newToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// safeNext keeps a post-sign-in redirect on this site's console.
func (c *Console) safeNext(next string) string {
	if !strings.HasPrefix(next, c.cfg.Prefix+"/admin/") || strings.HasPrefix(next, "//") || strings.Contains(next, "\\") {
		return c.cfg.Prefix + "/admin/webhooks"
	}
	return next
}

// cookiePath scopes the session cookie to the console: the browser sends
// it to nothing else of the app that mounts hookd.
func (c *Console) cookiePath() string { return c.cfg.Prefix + "/admin" }
