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
)

// pages holds one template set per page: the layout plus the page.
type pages struct {
	byName map[string]*template.Template
}

var funcs = template.FuncMap{
	"when":  when,
	"ago":   ago,
	"join":  strings.Join,
	"rfc":   func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"plus1": func(i int) int { return i + 1 },
}

// parsePages parses every page; {{admin}} in a template is the console's
// root under prefix (/admin, or /webhooks/admin).
func parsePages(prefix string) (*pages, error) {
	fm := template.FuncMap{"admin": func() string { return prefix + "/admin" }}
	for k, v := range funcs {
		fm[k] = v
	}
	layout, err := template.New("layout.html").Funcs(fm).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("console templates: %w", err)
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	p := &pages{byName: map[string]*template.Template{}}
	for _, n := range names {
		base := strings.TrimSuffix(path.Base(n), ".html")
		if base == "layout" {
			continue
		}
		t, err := template.Must(layout.Clone()).ParseFS(templateFS, n)
		if err != nil {
			return nil, fmt.Errorf("console template %s: %w", n, err)
		}
		p.byName[base] = t
	}
	return p, nil
}

// view is what the layout renders around a page.
type view struct {
	Title   string
	Page    string
	Session *sessionView
	Words   words
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

func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, page string, s *session, title string, data any) {
	t := c.pages.byName[page]
	if t == nil {
		c.cfg.Log.Error("console: no template", "page", page)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	v := view{Title: title, Page: page, Data: data, Words: standardWords}
	if s != nil {
		v.Session = &sessionView{Role: s.Role, OwnerID: s.OwnerID, Operator: s.operator(), CSRF: s.csrf}
		if s.OwnerID != "" {
			if o, err := c.cfg.DB.Q().GetOwner(r.Context(), s.OwnerID); err == nil {
				v.Words = wordsFor(o.Profile)
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
	c.render(w, r, status, "error", s, http.StatusText(status), errorData{Status: status, Message: apperr.MessageOf(err)})
}

func notFound(format string, args ...any) error { return apperr.New(apperr.NotFound, format, args...) }

func when(t any) string {
	switch v := t.(type) {
	case time.Time:
		if v.IsZero() {
			return "—"
		}
		return v.UTC().Format("2006-01-02 15:04:05 UTC")
	case *time.Time:
		if v == nil {
			return "—"
		}
		return when(*v)
	}
	return ""
}

func ago(t any) string {
	var v time.Time
	switch x := t.(type) {
	case time.Time:
		v = x
	case *time.Time:
		if x == nil {
			return ""
		}
		v = *x
	}
	d := time.Since(v)
	switch {
	case d < 0:
		return "in " + human(-d)
	case d < time.Minute:
		return "just now"
	}
	return human(d) + " ago"
}

func human(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int(d.Hours()))
	}
	return fmt.Sprintf("%d days", int(d.Hours()/24))
}

// renderFragment renders one named partial alone (live refreshes).
func (c *Console) renderFragment(w http.ResponseWriter, r *http.Request, s *session, name string, data any) {
	var buf bytes.Buffer
	if err := c.pages.byName["error"].ExecuteTemplate(&buf, name, data); err != nil {
		c.fail(w, r, s, fmt.Errorf("render %s: %w", name, err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}
