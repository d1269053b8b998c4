package console

import (
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"golang.org/x/text/message/catalog"

	"github.com/hookd/hookd/internal/apperr"
)

// Every sentence a page shows comes from one message catalog per language
// (locales/<tag>.json: key → x/text format string), loaded into one
// golang.org/x/text catalog. Templates and handlers name keys, never text.

//go:embed locales/*.json
var localeFS embed.FS

// locales are the languages the pages speak, the first the fallback.
var locales = []language.Tag{language.English, language.SimplifiedChinese}

var localeMatcher = language.NewMatcher(locales)

// messages is the catalog: every locale's file, parsed once.
var messages, messageKeys = mustLoadCatalog()

func mustLoadCatalog() (*catalog.Builder, map[language.Tag]map[string]string) {
	b := catalog.NewBuilder(catalog.Fallback(language.English))
	keys := map[language.Tag]map[string]string{}
	for _, tag := range locales {
		raw, err := localeFS.ReadFile("locales/" + tag.String() + ".json")
		if err != nil {
			panic(fmt.Sprintf("console: no catalog for %s: %v", tag, err))
		}
		var m map[string]string
		if err := json.Unmarshal(raw, &m); err != nil {
			panic(fmt.Sprintf("console: catalog %s: %v", tag, err))
		}
		for k, v := range m {
			if err := b.SetString(tag, k, v); err != nil {
				panic(fmt.Sprintf("console: catalog %s key %s: %v", tag, k, err))
			}
		}
		keys[tag] = m
	}
	return b, keys
}

// locale is one language's printer: messages, numbers and dates.
type locale struct {
	tag language.Tag
	p   *message.Printer
}

var localeByTag = func() map[language.Tag]*locale {
	m := map[language.Tag]*locale{}
	for _, t := range locales {
		m[t] = &locale{tag: t, p: message.NewPrinter(t, message.Catalog(messages))}
	}
	return m
}()

// matchLocale is the supported language closest to one of prefs (an
// Accept-Language header, or a setting such as "zh-CN"), else English.
func matchLocale(prefs ...string) *locale {
	for _, pref := range prefs {
		if pref == "" {
			continue
		}
		tags, _, err := language.ParseAcceptLanguage(pref)
		if err != nil || len(tags) == 0 {
			continue
		}
		_, i, conf := localeMatcher.Match(tags...)
		if conf != language.No {
			return localeByTag[locales[i]]
		}
	}
	return localeByTag[language.English]
}

// requestLocale picks the request's language: a setting first (the
// portal link's, then the owner's), else the browser's Accept-Language.
func requestLocale(r *http.Request, settings ...string) *locale {
	return matchLocale(append(settings, r.Header.Get("Accept-Language"))...)
}

// Lang is the page's lang attribute.
func (l *locale) Lang() string { return l.tag.String() }

// T is the message key in this language, args filled in.
func (l *locale) T(key string, args ...any) string { return l.p.Sprintf(key, args...) }

// HTML is T for a message that holds markup of its own (the catalog is
// ours): every argument is escaped first.
func (l *locale) HTML(key string, args ...any) template.HTML {
	esc := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			esc[i] = template.HTMLEscapeString(v)
		case template.HTML:
			esc[i] = string(v)
		default:
			esc[i] = template.HTMLEscapeString(fmt.Sprint(v))
		}
	}
	return template.HTML(l.p.Sprintf(key, esc...)) //nolint:gosec // the format is our catalog's; every argument is escaped above
}

// Err is an op's error in this language: its catalog message
// (err.<key>) where the op named one, else the op's own words (English)
// after a sentence of its kind (err.code.<code>) in the reader's
// language.
func (l *locale) Err(err error) string {
	if key, args := apperr.KeyOf(err); key != "" {
		if _, ok := messageKeys[l.tag]["err."+key]; ok {
			shown := make([]any, len(args))
			for i, a := range args {
				if t, ok := a.(time.Time); ok {
					a = l.When(t)
				}
				shown[i] = a
			}
			return l.T("err."+key, shown...)
		}
	}
	says := apperr.MessageOf(err)
	if l.tag == language.English {
		return says
	}
	return l.T("err.code."+string(apperr.CodeOf(err)), says)
}

// Num is a number written this language's way (1,234).
func (l *locale) Num(n any) string { return l.p.Sprintf("%d", n) }

// When is a time in UTC, written this language's way.
func (l *locale) When(t any) string {
	switch v := t.(type) {
	case time.Time:
		if v.IsZero() {
			return "—"
		}
		return v.UTC().Format(l.T("format.datetime"))
	case *time.Time:
		if v == nil {
			return "—"
		}
		return l.When(*v)
	}
	return ""
}

// Ago is how long ago t was ("3 min ago"), or how soon it comes.
func (l *locale) Ago(now time.Time, t any) string {
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
	d := now.Sub(v)
	switch {
	case d < 0:
		return l.T("time.in", l.span(-d))
	case d < time.Minute:
		return l.T("time.just_now")
	}
	return l.T("time.ago", l.span(d))
}

func (l *locale) span(d time.Duration) string {
	switch {
	case d < time.Minute:
		return l.T("time.seconds", int(d.Seconds()))
	case d < time.Hour:
		return l.T("time.minutes", int(d.Minutes()))
	case d < 48*time.Hour:
		return l.T("time.hours", int(d.Hours()))
	}
	return l.T("time.days", int(d.Hours()/24))
}

// text is a page title or notice not yet in a language: a catalog key
// with its arguments, or raw text (a URL, a description) shown as is.
type text struct {
	key  string
	args []any
	raw  string
}

// msg is a catalog key to be put in the request's language.
func msg(key string, args ...any) text { return text{key: key, args: args} }

// raw is text shown as given, in every language.
func raw(s string) text { return text{raw: s} }

func (l *locale) text(t text) string {
	if t.key == "" {
		return t.raw
	}
	return l.T(t.key, t.args...)
}

// funcsFor are the template functions speaking l.
func funcsFor(l *locale, now func() time.Time) template.FuncMap {
	return template.FuncMap{
		"t":    l.T,
		"th":   l.HTML,
		"num":  l.Num,
		"when": l.When,
		"ago":  func(t any) string { return l.Ago(now(), t) },
		"lang": l.Lang,
		"join": strings.Join,
		"rfc":  func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		// auditValue shows an audit change's value (audit.go).
		"auditValue": auditValue,
		"typedesc":   l.typeDescription,
	}
}

// typeDescription is an event type's description in l's language. hookd's
// own types (hookd.*, webhook.test, kwork's app.* and open.ping) have
// theirs in the catalog as type.<name>, used while the description is
// still hookd's English; one the operator wrote is shown as written.
func (l *locale) typeDescription(name, description string) string {
	key := "type." + name
	if en, ok := messageKeys[language.English][key]; ok && en == description {
		return l.T(key)
	}
	return description
}
