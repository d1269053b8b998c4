package event

import (
	"regexp"
	"strings"

	"github.com/hookd/hookd/internal/apperr"
)

var globChars = regexp.MustCompile(`^[a-z0-9_.*-]{1,128}$`)

// ValidateGlob checks an endpoint's event-type glob: type-name characters,
// where '*' matches any run of characters, dots included ("*" matches every
// type, "invoice.*" every invoice event).
func ValidateGlob(g string) error {
	if !globChars.MatchString(g) {
		return apperr.New(apperr.Invalid, "event type glob %q is not valid: use lowercase letters, digits, '.', '_', '-' and '*' (e.g. \"invoice.*\" or \"*\")", g)
	}
	return nil
}

// IsLiteral reports whether g names one type (has no wildcard).
func IsLiteral(g string) bool { return !strings.Contains(g, "*") }

// Match reports whether name matches glob g ('*' matches any run, even empty).
func Match(g, name string) bool {
	star := strings.IndexByte(g, '*')
	if star < 0 {
		return g == name
	}
	if !strings.HasPrefix(name, g[:star]) {
		return false
	}
	name, g = name[star:], g[star+1:]
	if g == "" {
		return true
	}
	// Try every split point for the rest of the glob.
	for i := 0; i <= len(name); i++ {
		if Match(g, name[i:]) {
			return true
		}
	}
	return false
}

// MatchAny reports whether name matches any of globs.
func MatchAny(globs []string, name string) bool {
	for _, g := range globs {
		if Match(g, name) {
			return true
		}
	}
	return false
}
