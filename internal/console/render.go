package console

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/ops"
	"github.com/hookd/hookd/internal/owner"
	"golang.org/x/text/language"
)

// pages holds one template set per language and page: the layout plus
// the page, with the template functions speaking that language. masters
// are the same, never executed, for the portal: each of its pages is a
// clone whose {{admin}} is the session's base (html/template clones only
// a set that has not run).
type pages struct {
	byLocale map[*locale]map[string]*template.Template
	masters  map[*locale]map[string]*template.Template
}

func (p *pages) get(l *locale, name string) *template.Template { return p.byLocale[l][name] }

// portalPage is page name for a portal session whose pages are at base,
// its assets at static.
func (p *pages) portalPage(l *locale, name, base, static string) (*template.Template, error) {
	m := p.masters[l][name]
	if m == nil {
		return nil, nil
	}
	t, err := m.Clone()
	if err != nil {
		return nil, err
	}
	return t.Funcs(template.FuncMap{"admin": func() string { return base }, "static": func() string { return static }, "portal": func() bool { return true }}), nil
}

// parsePages parses every page in every language; {{admin}} in a template
// is the console's root under prefix (/admin, or /webhooks/admin).
func parsePages(prefix string, now func() time.Time) (*pages, error) {
	p := &pages{byLocale: map[*locale]map[string]*template.Template{}, masters: map[*locale]map[string]*template.Template{}}
	for _, l := range localeByTag {
		var err error
		if p.byLocale[l], err = parseSet(l, prefix, now); err != nil {
			return nil, err
		}
		if p.masters[l], err = parseSet(l, prefix, now); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func parseSet(l *locale, prefix string, now func() time.Time) (map[string]*template.Template, error) {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	fm := funcsFor(l, now)
	fm["admin"] = func() string { return prefix + "/admin" }
	fm["portal"] = func() bool { return false }
	fm["static"] = func() string { return prefix + "/admin/static" }
	layout, err := template.New("layout.html").Funcs(fm).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("console templates: %w", err)
	}
	byName := map[string]*template.Template{}
	for _, n := range names {
		base := strings.TrimSuffix(path.Base(n), ".html")
		if base == "layout" {
			continue
		}
		t, err := template.Must(layout.Clone()).ParseFS(templateFS, n)
		if err != nil {
			return nil, fmt.Errorf("console template %s: %w", n, err)
		}
		byName[base] = t
	}
	return byName, nil
}

// view is what the layout renders around a page.
type view struct {
	Title   string
	Page    string
	Session *sessionView
	Words   wordsView
	Data    any
	// Portal is set on a portal session's pages.
	Portal *portalView
	// Refresh reloads the page after this many seconds (0: never): a
	// background task's progress.
	Refresh int
}

// refresher is page data that wants the page reloaded while it shows
// something still running.
type refresher interface{ refresh() int }

// portalView is what a portal page shows of its link: the owner's brand
// and the one way out.
type portalView struct {
	Title     string
	ReturnURL string
	LogoURL   string
	// FrameOrigins are the origins the page may tell its height to.
	FrameOrigins string
}

type sessionView struct {
	// GrantsNav: the nav offers the grants page (the profile has scoped
	// types and hookd's grant store answers for them).
	GrantsNav bool
	Role      owner.Role
	OwnerID   string
	Operator  bool
	CSRF      string
	Owners    []string
	portal    *portalSession
}

// Sees says the pages offer feature (a portal link may leave some out).
func (v *sessionView) Sees(feature string) bool { return v.portal == nil || v.portal.sees(feature) }

// Can says the pages offer feature's changes: never in a read-only
// portal, and the portal never changes the producer's event types.
func (v *sessionView) Can(feature string) bool {
	if v.portal == nil {
		return true
	}
	return !v.portal.readOnly && feature != ops.FeatureEventTypes && v.portal.sees(feature)
}

// localeOf is the language of the request's pages: the portal link's,
// else the owner's setting, else the browser's.
func (c *Console) localeOf(r *http.Request, s *session) *locale {
	var settings []string
	if p := portalOf(r); p != nil {
		settings = append(settings, p.locale)
	}
	if s != nil && s.OwnerID != "" {
		if o, err := c.cfg.Ops.Pages().GetOwner(r.Context(), s.OwnerID); err == nil {
			settings = append(settings, o.Attributes[ops.AttrLocale])
		}
	}
	return requestLocale(r, settings...)
}

// page is the template set for page in l: the console's, or a clone
// rooted at the portal session's base.
func (c *Console) page(r *http.Request, l *locale, page string) *template.Template {
	p := portalOf(r)
	if p == nil {
		return c.pages.get(l, page)
	}
	t, err := c.pages.portalPage(l, page, p.base, c.cfg.Prefix+"/portal/static")
	if err != nil {
		c.cfg.Log.Error("console: clone portal page", "page", page, "error", err)
		return nil
	}
	return t
}

func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, page string, s *session, title text, data any) {
	l := c.localeOf(r, s)
	t := c.page(r, l, page)
	if t == nil {
		c.cfg.Log.Error("console: no template", "page", page)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	v := view{Title: l.text(title), Page: page, Data: data, Words: standardWords.in(l)}
	if rf, ok := data.(refresher); ok {
		v.Refresh = rf.refresh()
	}
	if page == "portal_gone" {
		// A spent link's page is the portal's: no way into the console.
		v.Portal = &portalView{FrameOrigins: strings.Join(c.cfg.FrameOrigins, " ")}
	}
	if s != nil {
		v.Session = &sessionView{Role: s.Role, OwnerID: s.OwnerID, Operator: s.operator(), CSRF: s.csrf, portal: s.portal}
		if s.OwnerID != "" {
			if o, err := c.cfg.Ops.Pages().GetOwner(r.Context(), s.OwnerID); err == nil {
				v.Words = wordsFor(o.Profile).in(l)
				if s.portal != nil {
					v.Portal = &portalView{Title: o.Attributes[ops.AttrPortalTitle], ReturnURL: s.portal.returnURL, LogoURL: o.Attributes[ops.AttrPortalLogoURL],
						FrameOrigins: strings.Join(c.frameOrigins(o), " ")}
					// An uploaded logo, served by hookd, before a URL's.
					if at, err := c.cfg.Ops.Pages().PortalLogoStamp(r.Context(), o.ID); err == nil && at != 0 {
						v.Portal.LogoURL = s.portal.base + "/logo?v=" + strconv.FormatInt(at, 10)
					}
				}
			}
		}
		v.Session.GrantsNav = v.Words.Grants && !c.cfg.Ops.ForeignGrants && v.Session.Sees(ops.FeatureGrants)
		if s.operator() {
			if all, err := c.cfg.Ops.Pages().ListOwners(r.Context()); err == nil {
				for _, o := range all {
					v.Session.Owners = append(v.Session.Owners, o.ID)
				}
			}
		}
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", v); err != nil {
		c.cfg.Log.Error("console: render", "page", page, "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Language", l.Lang())
	w.Header().Add("Vary", "Accept-Language")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

type errorData struct {
	Status  int
	Message string
}

// fail answers err as a page with its status (404 for another owner's
// thing exactly as for a missing one); internal errors are logged and shown
// as "internal error".
func (c *Console) fail(w http.ResponseWriter, r *http.Request, s *session, err error) {
	code := apperr.CodeOf(err)
	status := apperr.Status(code)
	if status >= 500 {
		c.cfg.Log.Error("console request failed", "method", r.Method, "path", loggedPath(r), "error", err)
	}
	if status == http.StatusUnauthorized && r.Method == http.MethodGet {
		c.redirect(w, r, "/admin/signin")
		return
	}
	c.render(w, r, status, "error", s, statusTitle(status), errorData{Status: status, Message: c.localeOf(r, s).Err(err)})
}

func notFound(format string, args ...any) error { return apperr.New(apperr.NotFound, format, args...) }

// loggedPath is the request's path for a log line: a portal link's path
// holds its token, so only /portal/… is said.
func loggedPath(r *http.Request) string {
	if strings.HasPrefix(r.URL.Path, "/portal/") {
		return "/portal/…"
	}
	return r.URL.Path
}

// statusTitle is an error page's title: the status in the page's language.
func statusTitle(status int) text {
	key := fmt.Sprintf("status.%d", status)
	if _, ok := messageKeys[language.English][key]; ok {
		return msg(key)
	}
	return raw(http.StatusText(status))
}

// renderFragment renders one named partial alone (live refreshes).
func (c *Console) renderFragment(w http.ResponseWriter, r *http.Request, s *session, name string, data any) {
	var buf bytes.Buffer
	t := c.page(r, c.localeOf(r, s), "error")
	if t == nil {
		c.fail(w, r, s, fmt.Errorf("render %s: no template", name))
		return
	}
	if err := t.ExecuteTemplate(&buf, name, data); err != nil {
		c.fail(w, r, s, fmt.Errorf("render %s: %w", name, err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}
