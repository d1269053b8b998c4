// Package console is hookd's admin web page: server-rendered with
// html/template, a little progressive-enhancement JavaScript, every asset
// embedded. It is one more projection of the declared ops (internal/ops),
// like REST and MCP: each page calls ops and holds no rule of its own.
//
// A browser signs in with an API key (admin or operator) and gets a session
// cookie; the session is stored hashed in the database, so it works across
// processes and survives a restart, and it ends when its key is revoked.
// Every state change checks a CSRF token and the Origin header.
package console

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/hookd/hookd/internal/ops"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Config wires the console.
type Config struct {
	Ops *ops.Service
	// Tasks is River UI, served at /admin/tasks/ to operator sessions only
	// (nil: no River UI); build it with NewRiverUI and the same Prefix.
	Tasks http.Handler
	// Prefix is the path the console's handler is mounted under, with the
	// prefix stripped from each request (http.StripPrefix): "" at the root,
	// "/webhooks" for /webhooks/admin/. Every link, form, redirect, asset
	// and the session cookie's path carry it.
	Prefix string
	// FrameOrigins may frame every owner's portal pages (CSP
	// frame-ancestors), besides each owner's own portal_frame_origins.
	FrameOrigins []string
	// SessionTTL is how long a session lasts (default 12 h).
	SessionTTL time.Duration
	// OIDC turns on sign-in through the identity provider (oidc.go).
	OIDC OIDC
	// NoKeySignin turns API key sign-in off (with OIDC on, the provider is
	// then the only way in).
	NoKeySignin bool
	Now         func() time.Time
	Log         *slog.Logger
}

// Console is the web page.
type Console struct {
	cfg    Config
	pages  *pages
	mux    *http.ServeMux
	portal *http.ServeMux
	oidc   oidcFlow
}

// New builds the console.
func New(cfg Config) (*Console, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.SessionTTL == 0 {
		cfg.SessionTTL = 12 * time.Hour
	}
	p, err := parsePages(cfg.Prefix, cfg.Now)
	if err != nil {
		return nil, err
	}
	c := &Console{cfg: cfg, pages: p, mux: http.NewServeMux()}
	c.portal = c.portalMux()
	if err := c.routes(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Console) routes() error {
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return fmt.Errorf("console assets: %w", err)
	}
	m := c.mux
	m.Handle("GET /admin/static/", http.StripPrefix("/admin/static/", cacheStatic(http.FileServerFS(static))))
	// The portal's own copy: a proxy may expose /portal/ alone.
	m.Handle("GET /portal/static/", http.StripPrefix("/portal/static/", cacheStatic(http.FileServerFS(static))))
	toAdmin := func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, c.cfg.Prefix+"/admin/", http.StatusFound)
	}
	m.HandleFunc("GET /{$}", toAdmin)
	m.HandleFunc("GET /admin", toAdmin)
	m.HandleFunc("GET /admin/signin", c.signinPage)
	m.HandleFunc("POST /admin/signin", c.signin)
	if c.oidcOn() {
		m.HandleFunc("GET /admin/oidc/signin", c.oidcSignin)
		m.HandleFunc("GET "+oidcCallback, c.oidcCallbackHandler)
	}
	m.Handle("POST /admin/signout", c.authed(c.signout))
	m.Handle("POST /admin/owner", c.authed(c.switchOwner))
	m.Handle("GET /admin/{$}", c.authed(c.home))
	m.Handle("GET /admin/webhooks", c.authed(c.listEndpoints))
	m.Handle("GET /admin/webhooks/new", c.authed(c.newEndpoint))
	m.Handle("POST /admin/webhooks", c.authed(c.createEndpoint))
	m.Handle("POST /admin/webhooks/try", c.authed(c.tryCode))
	m.Handle("GET /admin/webhooks/{id}", c.authed(c.showEndpoint))
	m.Handle("GET /admin/webhooks/{id}/edit", c.authed(c.editEndpoint))
	m.Handle("POST /admin/webhooks/{id}", c.authed(c.updateEndpoint))
	m.Handle("POST /admin/webhooks/{id}/enabled", c.authed(c.setEnabled))
	m.Handle("POST /admin/webhooks/{id}/delete", c.authed(c.deleteEndpoint))
	m.Handle("POST /admin/webhooks/{id}/rotate_secret", c.authed(c.rotateSecret))
	m.Handle("POST /admin/webhooks/{id}/send_test", c.authed(c.sendTest))
	m.Handle("POST /admin/webhooks/{id}/redeliver", c.authed(c.redeliver))
	m.Handle("POST /admin/webhooks/{id}/retry_now", c.authed(c.retryNow))
	m.Handle("POST /admin/webhooks/{id}/expire_old_secrets", c.authed(c.expireOldSecrets))
	m.Handle("GET /admin/webhooks/{id}/deliveries", c.authed(c.deliveryLog))
	m.Handle("GET /admin/webhooks/{id}/deliveries/{delivery}", c.authed(c.showDelivery))
	m.Handle("POST /admin/webhooks/{id}/recover", c.authed(c.recover))
	m.Handle("GET /admin/webhooks/{id}/recoveries/{task}", c.authed(c.showRecovery))
	m.Handle("GET /admin/webhooks/{id}/deliveries/export", c.authed(c.export))
	m.Handle("GET /admin/events", c.authed(c.listEvents))
	m.Handle("POST /admin/events/{id}/resend", c.authed(c.resendEvent))
	m.Handle("GET /admin/branding", c.authed(c.showBranding))
	m.Handle("POST /admin/branding", limitBody(maxBrandingForm, c.authed(c.updateBranding)))
	m.Handle("GET /admin/branding/logo", c.authed(c.consoleLogo))
	m.Handle("GET /admin/event_types", c.authed(c.eventTypes))
	m.Handle("POST /admin/event_types/{name}", c.authed(c.putEventType))
	m.Handle("GET /admin/grants", c.authed(c.listGrants))
	m.Handle("GET /admin/grants/new", c.authed(c.newGrant))
	m.Handle("POST /admin/grants", c.authed(c.createGrant))
	m.Handle("GET /admin/grants/{id}", c.authed(c.showGrant))
	m.Handle("GET /admin/grants/{id}/edit", c.authed(c.editGrant))
	m.Handle("POST /admin/grants/{id}", c.authed(c.updateGrant))
	m.Handle("POST /admin/grants/{id}/revoke", c.authed(c.grantAction("revoke")))
	m.Handle("POST /admin/grants/{id}/delete", c.authed(c.grantAction("delete")))
	m.Handle("GET /admin/workers", c.authed(c.workers))
	m.Handle("GET /admin/audit", c.authed(c.audit))
	m.Handle("GET /admin/tasks", c.authed(c.task))
	m.Handle("/admin/tasks/", c.authed(c.riverUI))
	m.HandleFunc("GET /portal/{link}", c.openLink)
	m.HandleFunc("GET /portal.js", portalScript)
	m.HandleFunc("/portal/s/{token}/", c.servePortal)
	m.HandleFunc("/admin/", func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, nil, notFound("no page %s", r.URL.Path))
	})
	return nil
}

// ServeHTTP serves the console with its security headers.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	if isRiverUI(r.URL.Path) {
		// River UI's own bundle: scripts only from here too; it sets
		// styles from script, so inline styles are allowed for it alone.
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	} else {
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
		h.Set("Cache-Control", "no-store")
	}
	c.mux.ServeHTTP(w, r)
}

func isRiverUI(path string) bool {
	return len(path) > len("/admin/tasks/") && path[:len("/admin/tasks/")] == "/admin/tasks/"
}

func cacheStatic(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=300")
		h.ServeHTTP(w, r)
	})
}

// redirect sends the browser to path (a console path, /admin/…) under the
// prefix: 303, so a form post is followed by a GET.
// In the portal, /admin is the session's base.
func (c *Console) redirect(w http.ResponseWriter, r *http.Request, path string) {
	if p := portalOf(r); p != nil {
		http.Redirect(w, r, p.base+strings.TrimPrefix(path, "/admin"), http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, c.cfg.Prefix+path, http.StatusSeeOther)
}

// call runs one declared op as the session's principal.
func (c *Console) call(ctx context.Context, s *session, name string, in any) (any, error) {
	op := c.cfg.Ops.Op(name)
	if op == nil {
		return nil, fmt.Errorf("console: no op %s", name)
	}
	return op.Call(ctx, s.principal(), in)
}

// callAs is call with a typed answer.
func callAs[T any](ctx context.Context, c *Console, s *session, name string, in any) (*T, error) {
	out, err := c.call(ctx, s, name, in)
	if err != nil {
		return nil, err
	}
	v, ok := out.(*T)
	if !ok {
		return nil, fmt.Errorf("console: op %s answered %T", name, out)
	}
	return v, nil
}
