package ops

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/text/language"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/audit"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/store"
)

// The portal's features: what a link lets its holder see and do.
const (
	FeatureEndpoints    = "endpoints"
	FeatureEventTypes   = "event_types"
	FeatureDeliveries   = "deliveries"
	FeatureSendTest     = "send_test"
	FeatureRedeliver    = "redeliver"
	FeatureRecover      = "recover"
	FeatureRotateSecret = "rotate_secret"
	FeatureGrants       = "grants"
)

// PortalFeatures is every feature, in the order the docs list them.
var PortalFeatures = []string{FeatureEndpoints, FeatureEventTypes, FeatureDeliveries, FeatureSendTest, FeatureRedeliver, FeatureRecover, FeatureRotateSecret, FeatureGrants}

// Portal link limits.
const (
	PortalDefaultTTL = time.Hour
	PortalMaxTTL     = 7 * 24 * time.Hour
	maxReturnURL     = 2048
)

// CreatePortalLinkIn is portal.create_link's input.
type CreatePortalLinkIn struct {
	TTL       string   `json:"ttl,omitempty" jsonschema:"how long the link and the session it starts last: a duration such as 30m, 12h or 7d; default 1h, at most 7d"`
	ReadOnly  bool     `json:"read_only,omitempty" jsonschema:"the session sees but changes nothing: no buttons, every change refused"`
	Features  []string `json:"features,omitempty" jsonschema:"what the portal offers, a subset of endpoints, event_types, deliveries, send_test, redeliver, recover, rotate_secret, grants; default every one the owner's profile has"`
	Locale    string   `json:"locale,omitempty" jsonschema:"the portal's language: en or zh-Hans (zh, zh-CN too); default the browser's Accept-Language"`
	ReturnURL string   `json:"return_url,omitempty" jsonschema:"an https (or loopback http) URL the portal links back to; the only link out of it"`
}

// PortalLink is portal.create_link's answer: open url once before
// expires_at.
type PortalLink struct {
	URL       string    `json:"url" jsonschema:"open it once (in an iframe, or hand it to the browser) before expires_at; the token in it is 256 random bits"`
	ExpiresAt time.Time `json:"expires_at" jsonschema:"when the link, and the session it starts, end"`
}

// PortalRevoked is portal.revoke_sessions's answer.
type PortalRevoked struct {
	Sessions int64 `json:"sessions" jsonschema:"portal sessions ended"`
	Links    int64 `json:"links" jsonschema:"unused links spent"`
}

func (s *Service) portalOps() []*Op {
	return []*Op{
		define(Op{Name: "portal.create_link", Audit: "portal_link", Summary: "Make a one-time link that opens the owner's webhook portal (embeddable), limited to features, optionally read-only.", Method: http.MethodPost, Path: "/api/admin/portal/links", Status: 201, Role: owner.Admin, OwnerScoped: true, AnswersURL: true}, s.createPortalLink),
		define(Op{Name: "portal.revoke_sessions", Audit: "portal_session", Summary: "End every portal session of the owner and spend its unused links.", Method: http.MethodPost, Path: "/api/admin/portal/revoke_sessions", Status: 200, Role: owner.Admin, OwnerScoped: true}, s.revokePortalSessions),
	}
}

func (s *Service) createPortalLink(ctx context.Context, p Principal, in *CreatePortalLinkIn) (*PortalLink, error) {
	o, err := s.DB.Q().GetOwner(ctx, p.OwnerID)
	if err != nil {
		return nil, err
	}
	g := &store.PortalGrant{OwnerID: o.ID, ReadOnly: in.ReadOnly}
	ttl, err := portalTTL(in.TTL)
	if err != nil {
		return nil, err
	}
	if g.Features, err = portalFeatures(in.Features, o.Profile); err != nil {
		return nil, err
	}
	if g.Locale, err = PortalLocale(in.Locale); err != nil {
		return nil, err
	}
	if g.ReturnURL, err = portalReturnURL(in.ReturnURL); err != nil {
		return nil, err
	}
	token, err := NewPortalToken()
	if err != nil {
		return nil, err
	}
	now := s.now()
	g.ExpiresAt = now.Add(ttl)
	hash := HashPortalToken(token)
	// The token is a credential: the record names the link by a prefix of
	// its hash, which the database holds anyway.
	audit.SetResource(ctx, "pl_"+hex.EncodeToString(hash[:6]))
	err = s.DB.InTx(ctx, store.TxOptions{}, func(q *store.Q) error {
		// Spent and expired links go when a new one is made: no job of
		// their own.
		if err := q.PrunePortal(ctx, now); err != nil {
			return err
		}
		return q.CreatePortalLink(ctx, hash, g, now)
	})
	if err != nil {
		return nil, err
	}
	base, _ := ctx.Value(basePathKey{}).(string)
	origin, _ := ctx.Value(originKey{}).(string)
	return &PortalLink{URL: origin + base + "/portal/" + token, ExpiresAt: g.ExpiresAt}, nil
}

func (s *Service) revokePortalSessions(ctx context.Context, p Principal, _ *Empty) (*PortalRevoked, error) {
	var out PortalRevoked
	audit.SetResource(ctx, p.OwnerID) // every session of the owner's
	err := s.DB.InTx(ctx, store.TxOptions{}, func(q *store.Q) error {
		var err error
		if out.Sessions, err = q.DeletePortalSessions(ctx, p.OwnerID); err != nil {
			return err
		}
		out.Links, err = q.SpendPortalLinks(ctx, p.OwnerID, s.now())
		return err
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// portalTTL reads a duration: Go's (90m, 12h) or whole days (7d).
func portalTTL(v string) (time.Duration, error) {
	if v == "" {
		return PortalDefaultTTL, nil
	}
	d, err := time.ParseDuration(v)
	if days, ok := strings.CutSuffix(v, "d"); ok && err != nil {
		n, nerr := strconv.Atoi(days)
		d, err = time.Duration(n)*24*time.Hour, nerr
	}
	switch {
	case err != nil:
		return 0, apperr.New(apperr.Invalid, "ttl %q is not a duration: write it like 30m, 12h or 7d", v)
	case d <= 0:
		return 0, apperr.New(apperr.Invalid, "ttl %q must be more than zero: give how long the link lasts, e.g. 1h (at most 7d)", v)
	case d > PortalMaxTTL:
		return 0, apperr.New(apperr.Invalid, "ttl %q is longer than 7 days: give at most 7d (168h)", v)
	}
	return d, nil
}

// ProfileFeatures is every portal feature an owner of the profile has:
// grants only where the profile has scoped types (not kwork).
func ProfileFeatures(profile string) []string {
	if profile == "kwork" {
		return slices.DeleteFunc(slices.Clone(PortalFeatures), func(f string) bool { return f == FeatureGrants })
	}
	return slices.Clone(PortalFeatures)
}

func portalFeatures(asked []string, profile string) ([]string, error) {
	has := ProfileFeatures(profile)
	if asked == nil {
		return has, nil
	}
	if len(asked) == 0 {
		// An empty list is not "every feature": a producer that meant
		// none would hand out everything.
		return nil, apperr.New(apperr.Invalid, "features: the list is empty: name at least one of %s, or leave features out for every one the owner's profile has", strings.Join(has, ", "))
	}
	var out []string
	for _, f := range asked {
		switch {
		case !slices.Contains(PortalFeatures, f):
			return nil, apperr.New(apperr.Invalid, "features: %q is not a portal feature; choose from %s", f, strings.Join(PortalFeatures, ", "))
		case !slices.Contains(has, f):
			return nil, apperr.New(apperr.Invalid, "features: %q is not offered to a %s owner; choose from %s", f, profile, strings.Join(has, ", "))
		case !slices.Contains(out, f):
			out = append(out, f)
		}
	}
	if !slices.Contains(out, FeatureEndpoints) {
		// These live on the endpoint pages (the log is an endpoint's): a
		// portal without them would open on a page it may not show.
		for _, f := range out {
			if slices.Contains(endpointPageFeatures, f) {
				return nil, apperr.New(apperr.Invalid, "features: %q lives on the endpoint pages: add %q (read_only: true keeps them unchangeable)", f, FeatureEndpoints)
			}
		}
	}
	return out, nil
}

// endpointPageFeatures are shown on an endpoint's pages: a link with any
// of them needs FeatureEndpoints too.
var endpointPageFeatures = []string{FeatureDeliveries, FeatureSendTest, FeatureRedeliver, FeatureRecover, FeatureRotateSecret}

// PortalLocale is the canonical form (en, zh-Hans) of a language the
// portal speaks, "" for none; any other is refused.
func PortalLocale(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	tag, err := language.Parse(v)
	if err == nil {
		switch base, _ := tag.Base(); base.String() {
		case "en":
			return "en", nil
		case "zh":
			return "zh-Hans", nil
		}
	}
	return "", apperr.New(apperr.Invalid, "locale %q is not a language the portal speaks: use en or zh-Hans", v)
}

func portalReturnURL(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	u, err := url.Parse(v)
	switch {
	case len(v) > maxReturnURL:
		return "", apperr.New(apperr.Invalid, "return_url is %d characters long: keep it within %d", len(v), maxReturnURL)
	case err != nil || u.Host == "" || u.User != nil:
		return "", apperr.New(apperr.Invalid, "return_url %q is not an absolute URL: give one like https://app.example.com/settings", v)
	case u.Scheme == "https":
	case u.Scheme == "http" && loopbackHost(u.Hostname()):
	default:
		return "", apperr.New(apperr.Invalid, "return_url %q must be https (http only for localhost)", v)
	}
	return u.String(), nil
}

func loopbackHost(h string) bool {
	return h == "localhost" || h == "127.0.0.1" || h == "::1"
}

// NewPortalToken is 256 random bits, URL-safe.
func NewPortalToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// HashPortalToken is what the database keeps of a link's token.
func HashPortalToken(token string) []byte {
	h := sha256.Sum256([]byte("hookd portal link:" + token))
	return h[:]
}

// Owner attributes of the pages and the portal, checked whatever the
// profile (ValidatePageAttributes).
const (
	// AttrLocale is the language of the owner's pages: en or zh-Hans.
	AttrLocale = "locale"
	// AttrPortalFrameOrigins are the origins, besides the operator's,
	// that may frame the owner's portal, separated by spaces or commas.
	AttrPortalFrameOrigins = "portal_frame_origins"
	// AttrPortalTitle is the title the owner's portal shows.
	AttrPortalTitle = "portal_title"
	// AttrPortalAccent is the portal's accent colour, #rgb or #rrggbb.
	AttrPortalAccent = "portal_accent"
	// AttrPortalLogoURL is an https URL of the logo the portal shows.
	AttrPortalLogoURL = "portal_logo_url"
	maxPortalTitle    = 80
)

var hexColour = regexp.MustCompile(`^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$`)

// ValidatePageAttributes checks the attributes the pages read, and puts
// locale in its canonical form.
func ValidatePageAttributes(attrs map[string]string) error {
	if v, ok := attrs[AttrLocale]; ok {
		l, err := PortalLocale(v)
		if err != nil {
			return apperr.New(apperr.Invalid, "attribute %s: %s", AttrLocale, apperr.MessageOf(err)).Keyed("branding.locale", v)
		}
		attrs[AttrLocale] = l
	}
	for _, o := range SplitOrigins(attrs[AttrPortalFrameOrigins]) {
		if _, err := PortalFrameOrigin(o); err != nil {
			return apperr.New(apperr.Invalid, "attribute %s: %s", AttrPortalFrameOrigins, apperr.MessageOf(err)).Keyed("branding.frame_origin", o)
		}
	}
	if n := len([]rune(attrs[AttrPortalTitle])); n > maxPortalTitle {
		return apperr.New(apperr.Invalid, "attribute %s is %d characters long: keep it within %d", AttrPortalTitle, n, maxPortalTitle).Keyed("branding.title", n, maxPortalTitle)
	}
	if v := attrs[AttrPortalAccent]; v != "" && !hexColour.MatchString(v) {
		return apperr.New(apperr.Invalid, "attribute %s %q is not a colour: give it as #rrggbb, e.g. #0a7d53", AttrPortalAccent, v).Keyed("branding.accent", v)
	}
	if v := attrs[AttrPortalLogoURL]; v != "" {
		u, err := url.Parse(v)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || len(v) > maxReturnURL {
			return apperr.New(apperr.Invalid, "attribute %s %q must be an https URL of an image, e.g. https://app.example.com/logo.png", AttrPortalLogoURL, v).Keyed("branding.logo_url", v)
		}
	}
	return nil
}

// SplitOrigins splits a list of origins at spaces and commas.
func SplitOrigins(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == ',' })
}

// PortalFrameOrigin checks one origin that may frame the portal: a scheme
// and a host (and port), nothing else: https://app.example.com.
func PortalFrameOrigin(v string) (string, error) {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil || strings.ContainsAny(u.Host, "; '\"*") {
		return "", apperr.New(apperr.Invalid, "frame origin %q is not an origin: give a scheme and host only, like https://app.example.com", v)
	}
	return u.Scheme + "://" + u.Host, nil
}

type originKey struct{}

// WithOrigin gives the ops the scheme and host their caller reached hookd
// at (https://hooks.example.com), for the absolute URLs they answer with.
func WithOrigin(ctx context.Context, origin string) context.Context {
	return context.WithValue(ctx, originKey{}, origin)
}
