package scope

import (
	"strings"
	"time"
	"unicode"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/event"
)

// Grant is an embed's access code as an owner's resource: what an
// endpoint attached to it may receive of the scoped event types. Allow
// lists the subjects the role may read (globs: '*' matches any run of
// characters, '/' included), Deny takes from them, and a PublishedOnly
// role reads only the published slice. A revoked or expired grant — or
// one deleted, leaving its endpoints pointing at nothing — admits nothing.
type Grant struct {
	ID            string     `json:"id"`
	OwnerID       string     `json:"-"`
	Description   string     `json:"description"`
	Allow         []string   `json:"allow"`
	Deny          []string   `json:"deny"`
	PublishedOnly bool       `json:"published_only"`
	ExpiresAt     *time.Time `json:"expires_at,omitempty"`
	RevokedAt     *time.Time `json:"revoked_at,omitempty"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
}

// GrantStatus is what a grant admits as of now.
type GrantStatus string

// The grant statuses: active admits what it allows; revoked and expired
// admit nothing.
const (
	GrantActive  GrantStatus = "active"
	GrantRevoked GrantStatus = "revoked"
	GrantExpired GrantStatus = "expired"
	// GrantDeleted is the status an endpoint shows for a grant that no
	// longer exists.
	GrantDeleted GrantStatus = "deleted"
)

// Status reports whether g admits anything at now.
func (g *Grant) Status(now time.Time) GrantStatus {
	switch {
	case g == nil:
		return GrantDeleted
	case g.RevokedAt != nil:
		return GrantRevoked
	case g.ExpiresAt != nil && !now.Before(*g.ExpiresAt):
		return GrantExpired
	}
	return GrantActive
}

// Admits reports whether ev, of a scoped type, may go out under g at now:
// g is active, the subject matches an allow glob and no deny glob, and a
// published-only grant sees only published (or just unpublished) facts.
func (g *Grant) Admits(ev *event.Event, now time.Time) bool {
	if g.Status(now) != GrantActive {
		return false
	}
	if !event.MatchAny(g.Allow, ev.Subject) || event.MatchAny(g.Deny, ev.Subject) {
		return false
	}
	return !g.PublishedOnly || PublishedSlice(ev.Data)
}

// MaxGlobs bounds each of a grant's allow and deny lists.
const MaxGlobs = 100

// ValidateGrant checks a grant's caller-supplied fields.
func ValidateGrant(g *Grant) error {
	if len(g.Description) > 1024 {
		return apperr.New(apperr.Invalid, "description is %d bytes; at most 1024", len(g.Description))
	}
	if len(g.Allow) == 0 {
		return apperr.New(apperr.Invalid, "allow needs at least one subject glob, e.g. \"wiki://software/*\" (\"*\" allows every subject)")
	}
	for field, globs := range map[string][]string{"allow": g.Allow, "deny": g.Deny} {
		if len(globs) > MaxGlobs {
			return apperr.New(apperr.Invalid, "%s has %d globs; at most %d", field, len(globs), MaxGlobs)
		}
		for _, s := range globs {
			if err := validateSubjectGlob(s); err != nil {
				return apperr.New(apperr.Invalid, "%s: %v", field, err)
			}
		}
	}
	return nil
}

func validateSubjectGlob(s string) error {
	if s == "" || len(s) > 1024 {
		return apperr.New(apperr.Invalid, "subject glob %q must be 1 to 1024 bytes", s)
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }); i >= 0 {
		return apperr.New(apperr.Invalid, "subject glob %q has a space or control character at byte %d", s, i)
	}
	return nil
}
