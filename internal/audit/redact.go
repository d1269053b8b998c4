package audit

import (
	"encoding/json"
	"net/url"
	"reflect"
	"strings"
	"sync"
)

// A secret never reaches a record. Two nets catch it: a field whose type
// marks it `audit:"secret"` (an endpoint's custom headers, which may carry
// a receiver's credentials), and a deny-list of field names, matched
// case-insensitively against every key at every depth (a map's keys too:
// a header named Authorization). A third catches what neither can: a URL
// whose userinfo holds a password (a broker destination's
// amqp://user:pass@host, an SQS access key), in any string at any depth,
// has its password replaced by MaskedPassword, as every answer shows it.
var denyWords = []string{"secret", "token", "password", "passphrase", "credential", "authorization", "cookie", "private", "api_key", "api-key", "apikey", "hash"}

// Denied reports whether a field or key of this name holds a secret.
func Denied(name string) bool {
	n := strings.ToLower(name)
	for _, w := range denyWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// Fields returns v's JSON fields with every secret value replaced by
// Redacted (nil: v is not a JSON object).
func Fields(v any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	marked := secretFields(reflect.TypeOf(v))
	for k, val := range m {
		if marked[k] || Denied(k) {
			m[k] = redactAll(val)
			continue
		}
		m[k] = Redact(val)
	}
	return m
}

// MaskedPassword stands for a URL's password in a record, as in every
// answer, log line and page (destination.Masked).
const MaskedPassword = "***"

// Redact returns v (decoded JSON) with the values of denied keys replaced
// and URLs' passwords masked.
func Redact(v any) any {
	switch t := v.(type) {
	case string:
		return maskURLPassword(t)
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, val := range t {
			if Denied(k) {
				out[k] = Redacted
				continue
			}
			out[k] = Redact(val)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, val := range t {
			out[i] = Redact(val)
		}
		return out
	}
	return v
}

// redactAll keeps a marked field's shape where it tells what changed (a
// map's keys: which headers) and hides every value.
func redactAll(v any) any {
	if m, ok := v.(map[string]any); ok {
		out := make(map[string]any, len(m))
		for k := range m {
			if Denied(k) {
				continue // even the name of a credential header stays out
			}
			out[k] = Redacted
		}
		return out
	}
	if v == nil {
		return nil
	}
	return Redacted
}

var marks sync.Map // reflect.Type → map[string]bool

// secretFields returns the JSON names of t's fields tagged audit:"secret",
// embedded structs' included.
func secretFields(t reflect.Type) map[string]bool {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	if m, ok := marks.Load(t); ok {
		return m.(map[string]bool)
	}
	m := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			for k := range secretFields(f.Type) {
				m[k] = true
			}
			continue
		}
		if f.Tag.Get("audit") != "secret" {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		m[name] = true
	}
	marks.Store(t, m)
	return m
}

// maskURLPassword returns s with its password shown as MaskedPassword
// when s is a URL with a password in its userinfo, else s as it is.
func maskURLPassword(s string) string {
	scheme, _, ok := strings.Cut(s, "://")
	if !ok || scheme == "" || !strings.Contains(s, "@") || strings.IndexFunc(scheme, notSchemeChar) >= 0 {
		return s // not a URL (a description that mentions one is left be)
	}
	u, err := url.Parse(s)
	if err != nil {
		// Unreadable, but it may still hold a password: keep none of it.
		return Redacted
	}
	if u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); !ok {
		return s
	}
	// Built by hand: url.UserPassword would escape the asterisks.
	shown := *u
	shown.User = nil
	rest := strings.TrimPrefix(shown.String(), u.Scheme+"://")
	return u.Scheme + "://" + url.PathEscape(u.User.Username()) + ":" + MaskedPassword + "@" + rest
}

// notSchemeChar reports whether r cannot be in a URL's scheme (RFC 3986:
// letters, digits, +, - and .).
func notSchemeChar(r rune) bool {
	return (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && r != '+' && r != '-' && r != '.'
}
