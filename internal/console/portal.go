package console

import (
	"context"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/audit"
	"github.com/hookd/hookd/internal/ops"
	"github.com/hookd/hookd/internal/owner"
)

// The tenant portal is the console's owner pages behind a one-time link,
// for a producer's customer, framed in the producer's app. Opening
// /portal/{link} spends the link and starts a session whose token the page
// holds in its path (/portal/s/{token}/…): no cookie, so it works in a
// cross-site iframe with third-party cookies blocked (docs/portal.md says
// why). The pages are the console's handlers and templates, limited to
// the link's features, with no operator page, River UI, owner switcher or
// sign-out.

// portalSession is what a portal session may do.
type portalSession struct {
	base      string // the pages' root: prefix + /portal/s/{token}
	features  []string
	readOnly  bool
	locale    string
	returnURL string
}

// sees says the session shows feature's pages.
func (p *portalSession) sees(feature string) bool { return slices.Contains(p.features, feature) }

type portalBaseKey struct{}

// portalOf is the portal session a request runs in (nil: the console).
func portalOf(r *http.Request) *portalSession {
	p, _ := r.Context().Value(portalBaseKey{}).(*portalSession)
	return p
}

// The portal's routes: each a console handler, the feature it belongs to
// ("": every session's), and whether it changes anything (refused in a
// read-only session).
type portalRoute struct {
	pattern string
	feature string
	write   bool
	h       authedHandler
}

func (c *Console) portalRoutes() []portalRoute {
	return []portalRoute{
		{"GET /{$}", "", false, c.portalHome},
		{"GET /webhooks", ops.FeatureEndpoints, false, c.listEndpoints},
		{"GET /webhooks/new", ops.FeatureEndpoints, true, c.newEndpoint},
		{"POST /webhooks", ops.FeatureEndpoints, true, c.createEndpoint},
		{"GET /webhooks/{id}", ops.FeatureEndpoints, false, c.showEndpoint},
		{"GET /webhooks/{id}/edit", ops.FeatureEndpoints, true, c.editEndpoint},
		{"POST /webhooks/{id}", ops.FeatureEndpoints, true, c.updateEndpoint},
		{"POST /webhooks/{id}/enabled", ops.FeatureEndpoints, true, c.setEnabled},
		{"POST /webhooks/{id}/delete", ops.FeatureEndpoints, true, c.deleteEndpoint},
		{"POST /webhooks/{id}/send_test", ops.FeatureSendTest, true, c.sendTest},
		{"POST /webhooks/{id}/redeliver", ops.FeatureRedeliver, true, c.redeliver},
		{"POST /webhooks/{id}/retry_now", ops.FeatureRecover, true, c.retryNow},
		{"POST /webhooks/{id}/rotate_secret", ops.FeatureRotateSecret, true, c.rotateSecret},
		{"POST /webhooks/{id}/expire_old_secrets", ops.FeatureRotateSecret, true, c.expireOldSecrets},
		{"POST /webhooks/{id}/recover", ops.FeatureRecover, true, c.recover},
		{"GET /webhooks/{id}/recoveries/{task}", ops.FeatureRecover, false, c.showRecovery},
		{"GET /events", ops.FeatureDeliveries, false, c.listEvents},
		{"POST /events/{id}/resend", ops.FeatureRedeliver, true, c.resendEvent},
		{"GET /webhooks/{id}/deliveries", ops.FeatureDeliveries, false, c.deliveryLog},
		{"GET /webhooks/{id}/deliveries/{delivery}", ops.FeatureDeliveries, false, c.showDelivery},
		{"GET /event_types", ops.FeatureEventTypes, false, c.eventTypes},
		{"GET /grants", ops.FeatureGrants, false, c.listGrants},
		{"GET /grants/new", ops.FeatureGrants, true, c.newGrant},
		{"POST /grants", ops.FeatureGrants, true, c.createGrant},
		{"GET /grants/{id}", ops.FeatureGrants, false, c.showGrant},
		{"GET /grants/{id}/edit", ops.FeatureGrants, true, c.editGrant},
		{"POST /grants/{id}", ops.FeatureGrants, true, c.updateGrant},
		{"POST /grants/{id}/revoke", ops.FeatureGrants, true, c.grantAction("revoke")},
		{"POST /grants/{id}/delete", ops.FeatureGrants, true, c.grantAction("delete")},
	}
}

// portalMux serves a session's pages, paths relative to its base.
func (c *Console) portalMux() *http.ServeMux {
	m := http.NewServeMux()
	for _, rt := range c.portalRoutes() {
		m.Handle(rt.pattern, c.portalOnly(rt))
	}
	m.HandleFunc("GET /brand.css", c.brandCSS)
	m.HandleFunc("GET /logo", c.portalLogo)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, nil, notFound("no page %s in the portal", r.URL.Path))
	})
	return m
}

// portalHome is where opening a link lands: the endpoint list, or for a
// link without endpoints (ops lets only event_types and grants go
// without) the first page it shows.
func (c *Console) portalHome(w http.ResponseWriter, r *http.Request, s *session) {
	p := s.portal
	switch {
	case p.sees(ops.FeatureEndpoints):
		c.home(w, r, s)
	case p.sees(ops.FeatureEventTypes):
		c.redirect(w, r, "/admin/event_types")
	default:
		c.redirect(w, r, "/admin/grants")
	}
}

// brandCSS is the owner's accent colour (checked when it was set: a
// colour and nothing else), as a stylesheet: the CSP allows no inline
// style.
func (c *Console) brandCSS(w http.ResponseWriter, r *http.Request) {
	s := portalSessionOf(r)
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	o, err := c.cfg.Ops.Pages().GetOwner(r.Context(), s.OwnerID)
	if err != nil {
		return
	}
	if accent := o.Attributes[ops.AttrPortalAccent]; accent != "" {
		_, _ = io.WriteString(w, ":root { --accent: "+accent+"; }\n.top { border-top: 4px solid var(--accent); }\n")
	}
}

// portalScript serves /portal.js, the producer's page's custom element.
func portalScript(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Header().Set("Cross-Origin-Resource-Policy", "cross-origin")
	http.ServeFileFS(w, r, staticFS, "static/portal.js")
}

// portalOnly runs a route for the session the request carries: refused
// (403, nothing done) when the link did not give its feature, or when it
// changes something in a read-only session.
func (c *Console) portalOnly(rt portalRoute) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := portalSessionOf(r)
		p := s.portal
		switch {
		case rt.feature != "" && !p.sees(rt.feature):
			c.fail(w, r, s, apperr.New(apperr.Forbidden, "this portal link does not include %s", rt.feature).Keyed("portal.feature", rt.feature))
			return
		case rt.write && p.readOnly:
			c.fail(w, r, s, apperr.New(apperr.Forbidden, "this portal is read-only: nothing can be changed here").Keyed("portal.read_only"))
			return
		}
		rt.h(w, r, s)
	})
}

type portalSessionKey struct{}

func portalSessionOf(r *http.Request) *session {
	s, _ := r.Context().Value(portalSessionKey{}).(*session)
	return s
}

// openLink spends a one-time link and sends the browser to the session it
// started. A used, expired or unknown link gets a page that says so, and
// nothing else: no owner, nothing of the link.
func (c *Console) openLink(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	now := c.cfg.Now()
	hash := ops.HashPortalToken(r.PathValue("link"))
	g, err := c.cfg.Ops.Pages().TakePortalLink(ctx, hash, now)
	if err != nil {
		if l := c.cfg.Ops.Pages().PortalLinkLocale(ctx, hash); l != "" {
			r = r.WithContext(context.WithValue(ctx, portalBaseKey{}, &portalSession{locale: l}))
		}
		c.linkGone(w, r, err)
		return
	}
	token, err := newToken()
	if err != nil {
		c.fail(w, r, nil, err)
		return
	}
	if err := c.cfg.Ops.Pages().CreatePortalSession(ctx, hashPortalSession(token), g, now); err != nil {
		c.fail(w, r, nil, err)
		return
	}
	if o, err := c.cfg.Ops.Pages().GetOwner(ctx, g.OwnerID); err == nil {
		c.setFraming(w, o)
	}
	http.Redirect(w, r, c.cfg.Prefix+"/portal/s/"+token+"/", http.StatusSeeOther)
}

type goneData struct {
	Reason string // a catalog key
}

func (c *Console) linkGone(w http.ResponseWriter, r *http.Request, err error) {
	var reason string
	switch {
	case errors.Is(err, ops.ErrLinkUsed):
		reason = "portal.gone.used"
	case errors.Is(err, ops.ErrLinkExpired):
		reason = "portal.gone.expired"
	case errors.Is(err, ops.ErrLinkUnknown):
		reason = "portal.gone.unknown"
	case apperr.CodeOf(err) == apperr.Unauthorized:
		reason = "portal.gone.ended"
	default:
		c.fail(w, r, nil, err)
		return
	}
	c.setFraming(w, nil)
	c.render(w, r, http.StatusGone, "portal_gone", nil, msg("portal.gone.title"), goneData{Reason: reason})
}

func hashPortalSession(token string) []byte {
	return hashToken("portal:" + token)
}

// servePortal resolves /portal/s/{token}/… to its session and serves the
// rest of the path from the portal's routes.
func (c *Console) servePortal(w http.ResponseWriter, r *http.Request) {
	token := r.PathValue("token")
	g, err := c.cfg.Ops.Pages().PortalSessionByHash(r.Context(), hashPortalSession(token), c.cfg.Now())
	if err != nil {
		c.linkGone(w, r, err)
		return
	}
	o, err := c.cfg.Ops.Pages().GetOwner(r.Context(), g.OwnerID)
	if err != nil {
		c.linkGone(w, r, apperr.New(apperr.Unauthorized, "owner gone"))
		return
	}
	c.setFraming(w, o)
	p := &portalSession{base: c.cfg.Prefix + "/portal/s/" + token, features: g.Features, readOnly: g.ReadOnly, locale: g.Locale, returnURL: g.ReturnURL}
	s := &session{
		Session: &ops.Session{KeyID: "portal", Role: owner.Admin, KeyOwner: g.OwnerID, OwnerID: g.OwnerID, ExpiresAt: g.ExpiresAt},
		csrf:    csrfToken("portal:" + token),
		portal:  p,
		// The session's token is a credential: the record names the
		// session by a prefix of its hash, which the database holds anyway.
		actor: audit.Actor{Kind: audit.KindPortal, ID: "ps_" + hex.EncodeToString(hashPortalSession(token)[:6]), Name: g.OwnerID, Remote: r.RemoteAddr},
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if err := c.checkForm(r, s); err != nil {
			c.fail(w, r, s, err)
			return
		}
	}
	ctx := context.WithValue(r.Context(), portalBaseKey{}, p)
	ctx = context.WithValue(ctx, portalSessionKey{}, s)
	rest := strings.TrimPrefix(r.URL.Path, "/portal/s/"+token)
	r2 := r.WithContext(ctx)
	u := *r.URL
	u.Path, u.RawPath = rest, ""
	if u.Path == "" {
		u.Path = "/"
	}
	r2.URL = &u
	c.portal.ServeHTTP(w, r2)
}

// setFraming says who may frame the page: the operator's origins and the
// owner's own (attribute portal_frame_origins), through CSP
// frame-ancestors; none, or no owner, and nobody may.
func (c *Console) setFraming(w http.ResponseWriter, o *owner.Owner) {
	origins := c.frameOrigins(o)
	// Referrer-Policy stays the console's same-origin: the token in the
	// path never leaves in a Referer, and the portal's own form posts
	// keep their Origin (no-referrer would make it "null", and refused).
	h := w.Header()
	if len(origins) == 0 {
		return // the console's headers stand: frame-ancestors 'none', X-Frame-Options DENY
	}
	h.Del("X-Frame-Options")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: https:; connect-src 'self'; frame-ancestors "+strings.Join(origins, " ")+"; base-uri 'none'; form-action 'self'")
}

// frameOrigins are the origins that may frame o's portal.
func (c *Console) frameOrigins(o *owner.Owner) []string {
	origins := slices.Clone(c.cfg.FrameOrigins)
	if o != nil {
		origins = append(origins, ownerFrameOrigins(o)...)
	}
	return origins
}

func ownerFrameOrigins(o *owner.Owner) []string {
	var out []string
	for _, f := range ops.SplitOrigins(o.Attributes[ops.AttrPortalFrameOrigins]) {
		if origin, err := ops.PortalFrameOrigin(f); err == nil {
			out = append(out, origin)
		}
	}
	return out
}
