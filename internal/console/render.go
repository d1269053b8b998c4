package console

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/owner"
	"golang.org/x/text/language"
)

// pages holds one template set per language and page: the layout plus
// the page, with the template functions speaking that language.
type pages struct {
	byLocale map[*locale]map[string]*template.Template
}

func (p *pages) get(l *locale, name string) *template.Template { return p.byLocale[l][name] }

// parsePages parses every page in every language; {{admin}} in a template
// is the console's root under prefix (/admin, or /webhooks/admin).
func parsePages(prefix string, now func() time.Time) (*pages, error) {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	p := &pages{byLocale: map[*locale]map[string]*template.Template{}}
	for _, l := range localeByTag {
		fm := funcsFor(l, now)
		fm["admin"] = func() string { return prefix + "/admin" }
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
		p.byLocale[l] = byName
	}
	return p, nil
}

// view is what the layout renders around a page.
type view struct {
	Title   string
	Page    string
	Session *sessionView
	Words   wordsView
	Data    any
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
}

// localeOf is the language of the request's pages.
func (c *Console) localeOf(r *http.Request, _ *session) *locale {
	return requestLocale(r)
}

func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, page string, s *session, title text, data any) {
	l := c.localeOf(r, s)
	t := c.pages.get(l, page)
	if t == nil {
		c.cfg.Log.Error("console: no template", "page", page)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	v := view{Title: l.text(title), Page: page, Data: data, Words: standardWords.in(l)}
	if s != nil {
		v.Session = &sessionView{Role: s.Role, OwnerID: s.OwnerID, Operator: s.operator(), CSRF: s.csrf}
		if s.OwnerID != "" {
			if o, err := c.cfg.DB.Q().GetOwner(r.Context(), s.OwnerID); err == nil {
				v.Words = wordsFor(o.Profile).in(l)
			}
		}
		v.Session.GrantsNav = v.Words.Grants && !c.cfg.Ops.ForeignGrants
		if s.operator() {
			if all, err := c.cfg.DB.Q().ListOwners(r.Context()); err == nil {
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
		c.cfg.Log.Error("console request failed", "method", r.Method, "path", r.URL.Path, "error", err)
	}
	if status == http.StatusUnauthorized && r.Method == http.MethodGet {
		c.redirect(w, r, "/admin/signin")
		return
	}
	c.render(w, r, status, "error", s, statusTitle(status), errorData{Status: status, Message: apperr.MessageOf(err)})
}

func notFound(format string, args ...any) error { return apperr.New(apperr.NotFound, format, args...) }

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
	if err := c.pages.get(c.localeOf(r, s), "error").ExecuteTemplate(&buf, name, data); err != nil {
		c.fail(w, r, s, fmt.Errorf("render %s: %w", name, err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}
