package console

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"text/template/parse"
	"time"

	"golang.org/x/text/language"

	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/scope"
)

// dynamicKeys are the keys templates and handlers build from a value
// (printf "state.%s" .State): every value the code can hold.
func dynamicKeys() []string {
	var keys []string
	for _, st := range []string{string(endpoint.Enabled), string(endpoint.Failing), string(endpoint.Disabled), string(endpoint.Pending), string(endpoint.Delivered), string(endpoint.Failed)} {
		keys = append(keys, "state."+st)
	}
	for _, st := range []scope.GrantStatus{scope.GrantActive, scope.GrantRevoked, scope.GrantExpired, scope.GrantDeleted} {
		keys = append(keys, "grant.status."+string(st))
	}
	for _, r := range []owner.Role{owner.Admin, owner.Operator, owner.Publisher} {
		keys = append(keys, "role."+string(r))
	}
	for _, a := range []string{"revoke", "delete"} {
		keys = append(keys, "grant.confirm."+a+".title", "grant.confirm."+a+".final", "grant.confirm."+a+".yes")
	}
	keys = append(keys, "exposure.webhook", "exposure.internal")
	for _, p := range []string{"standard", "kwork"} {
		for _, w := range []string{"section", "endpoint", "endpoints", "attempts", "log", "log_note", "log_note_portal", "no_grant"} {
			keys = append(keys, "words."+p+"."+w)
		}
	}
	for _, d := range []string{"saved", "enabled", "disabled", "test", "expired", "redelivered", "redelivered.none", "retried", "retried.none"} {
		keys = append(keys, "notice."+d)
	}
	for _, r := range []string{"used", "expired", "unknown", "ended"} {
		keys = append(keys, "portal.gone."+r)
	}
	return keys
}

var verb = regexp.MustCompile(`%(\[\d+\])?[-+# 0]*\d*[sdvq]`)

// TestCatalogComplete: every language has every key, none empty, each
// with the same arguments as English.
func TestCatalogComplete(t *testing.T) {
	en := messageKeys[language.English]
	for _, tag := range locales {
		m := messageKeys[tag]
		for k, v := range en {
			got, ok := m[k]
			switch {
			case !ok:
				t.Errorf("%s: key %q is missing (English: %q)", tag, k, v)
			case strings.TrimSpace(got) == "":
				t.Errorf("%s: key %q is empty", tag, k)
			case len(verb.FindAllString(got, -1)) != len(verb.FindAllString(v, -1)):
				t.Errorf("%s: key %q has %d arguments, English %d: %q", tag, k, len(verb.FindAllString(got, -1)), len(verb.FindAllString(v, -1)), got)
			}
		}
		for k := range m {
			if _, ok := en[k]; !ok {
				t.Errorf("%s: key %q is not in English", tag, k)
			}
		}
	}
	for _, k := range dynamicKeys() {
		if _, ok := en[k]; !ok {
			t.Errorf("key %q (built from a value) is missing", k)
		}
	}
}

// usedKeys walks every template's parse tree for {{t "key"}} and
// {{th "key"}}, and every Go file of the package for msg("key") and
// .T("key"), and names where each is used.
func usedKeys(t *testing.T) map[string]string {
	t.Helper()
	used := map[string]string{}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		t.Fatal(err)
	}
	stub := map[string]any{}
	for k := range funcsFor(localeByTag[language.English], time.Now) {
		stub[k] = func() string { return "" }
	}
	for _, k := range []string{"admin", "portal", "static", "printf", "len", "index", "eq", "ne", "or", "and", "not"} {
		stub[k] = func() string { return "" }
	}
	for _, n := range names {
		src, err := fs.ReadFile(templateFS, n)
		if err != nil {
			t.Fatal(err)
		}
		trees, err := parse.Parse(n, string(src), "{{", "}}", stub)
		if err != nil {
			t.Fatal(err)
		}
		for _, tree := range trees {
			walk(tree.Root, func(c *parse.CommandNode) {
				if len(c.Args) < 2 {
					return
				}
				fn, ok := c.Args[0].(*parse.IdentifierNode)
				if !ok || (fn.Ident != "t" && fn.Ident != "th") {
					return
				}
				if s, ok := c.Args[1].(*parse.StringNode); ok {
					used[s.Text] = n
				}
			})
		}
	}
	goKey := regexp.MustCompile(`(?:\bmsg|\.T)\("([a-z0-9_.]+)"[,)]`)
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range goKey.FindAllStringSubmatch(string(src), -1) {
			used[m[1]] = f
		}
	}
	if len(used) < 100 {
		t.Fatalf("found only %d keys in use: the walk is broken", len(used))
	}
	return used
}

func walk(n parse.Node, f func(*parse.CommandNode)) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			walk(c, f)
		}
	case *parse.ActionNode:
		walk(n.Pipe, f)
	case *parse.PipeNode:
		if n == nil {
			return
		}
		for _, c := range n.Cmds {
			walk(c, f)
		}
	case *parse.CommandNode:
		f(n)
		for _, a := range n.Args {
			walk(a, f)
		}
	case *parse.IfNode:
		walk(n.Pipe, f)
		walk(n.List, f)
		walk(n.ElseList, f)
	case *parse.RangeNode:
		walk(n.Pipe, f)
		walk(n.List, f)
		walk(n.ElseList, f)
	case *parse.WithNode:
		walk(n.Pipe, f)
		walk(n.List, f)
		walk(n.ElseList, f)
	case *parse.TemplateNode:
		walk(n.Pipe, f)
	}
}

// TestEveryKeyTranslated: every key a template or handler names exists in
// every language.
func TestEveryKeyTranslated(t *testing.T) {
	for k, where := range usedKeys(t) {
		for _, tag := range locales {
			if _, ok := messageKeys[tag][k]; !ok {
				t.Errorf("%s uses key %q, missing in %s", where, k, tag)
			}
		}
	}
}

var (
	action    = regexp.MustCompile(`(?s)\{\{.*?\}\}`)
	tag       = regexp.MustCompile(`(?s)<[^>]*>`)
	attr      = regexp.MustCompile(`\b(title|aria-label|placeholder|alt)="([^"]*)"`)
	entity    = regexp.MustCompile(`&[a-z]+;|&#\d+;`)
	wordLike  = regexp.MustCompile(`[A-Za-z]{2,}|\p{Han}`)
	notPhrase = map[string]bool{"hookd": true, "HTTP": true, "URL": true, "ID": true}
)

// TestNoLiteralSentences: with every action taken out, a template's text
// and its readable attributes hold no word: only markup, punctuation and
// the few names that are the same in every language.
func TestNoLiteralSentences(t *testing.T) {
	names, _ := fs.Glob(templateFS, "templates/*.html")
	for _, n := range names {
		src, _ := fs.ReadFile(templateFS, n)
		bare := action.ReplaceAllString(string(src), "")
		for _, m := range attr.FindAllStringSubmatch(bare, -1) {
			if m[1] == "placeholder" && codeLike(m[2]) {
				continue
			}
			if words := literalWords(m[2]); len(words) > 0 {
				t.Errorf("%s: attribute %s=%q is a literal: put it in the catalog", n, m[1], m[2])
			}
		}
		text := entity.ReplaceAllString(tag.ReplaceAllString(bare, " "), " ")
		for _, line := range strings.Split(text, "\n") {
			if words := literalWords(line); len(words) > 0 {
				t.Errorf("%s: literal text %q: put it in the catalog", n, strings.TrimSpace(line))
			}
		}
	}
}

func literalWords(s string) []string {
	var out []string
	for _, w := range wordLike.FindAllString(s, -1) {
		if !notPhrase[w] {
			out = append(out, w)
		}
	}
	return out
}

// codeLike is an example value (a URL, globs), the same in every language.
func codeLike(s string) bool {
	for _, f := range strings.Fields(s) {
		if !strings.ContainsAny(f, ".:/*") {
			return false
		}
	}
	return true
}

// TestLocaleChoice: a setting wins over the browser; the browser's
// Accept-Language decides otherwise; anything else is English.
func TestLocaleChoice(t *testing.T) {
	cases := []struct {
		settings []string
		accept   string
		want     string
	}{
		{nil, "", "en"},
		{nil, "zh-CN,zh;q=0.9,en;q=0.8", "zh-Hans"},
		{nil, "zh-TW", "zh-Hans"},
		{nil, "fr-FR, en;q=0.5", "en"},
		{nil, "de", "en"},
		{[]string{"en"}, "zh-CN", "en"},
		{[]string{"zh-Hans"}, "en-US", "zh-Hans"},
		{[]string{"", "zh"}, "en-US", "zh-Hans"},
		{[]string{"not a tag"}, "zh", "zh-Hans"},
	}
	for _, c := range cases {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		if c.accept != "" {
			r.Header.Set("Accept-Language", c.accept)
		}
		if got := requestLocale(r, c.settings...).Lang(); got != c.want {
			t.Errorf("settings %q, Accept-Language %q: got %s, want %s", c.settings, c.accept, got, c.want)
		}
	}
}

// TestLocalised: numbers and dates are written each language's way.
func TestLocalised(t *testing.T) {
	en, zh := localeByTag[language.English], localeByTag[language.SimplifiedChinese]
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for _, c := range []struct{ got, want string }{
		{en.Num(12345), "12,345"},
		{zh.Num(12345), "12,345"},
		{en.When(at), "2026-03-04 05:06:07 UTC"},
		{zh.When(at), "2026年03月04日 05:06:07 UTC"},
		{en.Ago(at.Add(3*time.Minute), at), "3 min ago"},
		{zh.Ago(at.Add(3*time.Minute), at), "3 分钟前"},
		{zh.Ago(at.Add(-49*time.Hour), at), "2 天后"},
		{en.T("words.kwork.endpoint"), "subscription"},
		{zh.T("words.kwork.endpoint"), "订阅"},
		{zh.T("words.standard.endpoint"), "端点"},
		{zh.T("words.kwork.attempts"), "发送次数"},
		{string(en.HTML("delete.body", "<x>")), `<strong class="url">&lt;x&gt;</strong> stops receiving events, and its delivery records are deleted with it. This cannot be undone.`},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
