package ops

import (
	"bytes"
	"context"
	"encoding/base64"
	"image"
	_ "image/jpeg" // DecodeConfig of an uploaded logo
	_ "image/png"  // DecodeConfig of an uploaded logo
	"net/http"
	"strings"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/audit"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/store"
)

// MaxPortalLogo is the most bytes an uploaded portal logo may have.
const MaxPortalLogo = 64 << 10

// Branding is how the owner's portal looks: its title, logo, accent
// colour, the origins that may frame it and its language.
type Branding struct {
	Title   string `json:"title,omitempty" jsonschema:"replaces hookd's name in the portal's header"`
	LogoURL string `json:"logo_url,omitempty" jsonschema:"an https URL of the logo (an uploaded logo is shown instead)"`
	// Logo is the uploaded logo hookd serves, if any.
	Logo         *LogoInfo `json:"logo,omitempty"`
	Accent       string    `json:"accent,omitempty" jsonschema:"#rgb or #rrggbb"`
	FrameOrigins []string  `json:"frame_origins" jsonschema:"origins, besides the operator's, that may frame the portal"`
	Locale       string    `json:"locale,omitempty" jsonschema:"en or zh-Hans; none: the browser's"`
}

// LogoInfo describes an uploaded logo (never its bytes).
type LogoInfo struct {
	ContentType string    `json:"content_type"`
	Size        int       `json:"size"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// UpdateBrandingIn is portal.update_branding's input: a field left out
// stays as it is; an empty one clears it.
type UpdateBrandingIn struct {
	Title        *string  `json:"title,omitempty" jsonschema:"at most 80 characters; empty: hookd's name"`
	LogoURL      *string  `json:"logo_url,omitempty" jsonschema:"an https URL of an image; empty: none"`
	LogoImage    *string  `json:"logo_image,omitempty" jsonschema:"base64 of a PNG, JPEG or WebP image of at most 64 KiB, which hookd serves; empty: remove the uploaded logo"`
	Accent       *string  `json:"accent,omitempty" jsonschema:"#rgb or #rrggbb; empty: hookd's colours"`
	FrameOrigins []string `json:"frame_origins,omitempty" jsonschema:"origins (https://app.example.com) that may frame the portal, replacing the list; [] clears it"`
	Locale       *string  `json:"locale,omitempty" jsonschema:"en or zh-Hans; empty: the browser's"`
}

func (s *Service) brandingOps() []*Op {
	const path = "/api/admin/portal/branding"
	return []*Op{
		define(Op{Name: "portal.get_branding", Summary: "The owner's portal branding: title, logo, accent colour, frame origins and language.", Method: http.MethodGet, Path: path, Status: 200, Role: owner.Admin, OwnerScoped: true}, s.getBranding),
		define(Op{Name: "portal.update_branding", Audit: "owner", Summary: "Change the owner's portal branding (an owner's admin key may): title, logo (an https URL, or an uploaded image of at most 64 KiB), accent colour, frame origins, language.", Method: http.MethodPatch, Path: path, Status: 200, Role: owner.Admin, OwnerScoped: true}, s.updateBranding),
	}
}

func (s *Service) getBranding(ctx context.Context, p Principal, _ *Empty) (*Branding, error) {
	q := s.DB.Q()
	o, err := q.GetOwner(ctx, p.OwnerID)
	if err != nil {
		return nil, err
	}
	return brandingOf(ctx, q, o)
}

func brandingOf(ctx context.Context, q *store.Q, o *owner.Owner) (*Branding, error) {
	a := o.Attributes
	b := &Branding{Title: a[AttrPortalTitle], LogoURL: a[AttrPortalLogoURL], Accent: a[AttrPortalAccent], Locale: a[AttrLocale], FrameOrigins: SplitOrigins(a[AttrPortalFrameOrigins])}
	if b.FrameOrigins == nil {
		b.FrameOrigins = []string{}
	}
	l, err := q.GetPortalLogo(ctx, o.ID)
	switch {
	case apperr.IsNotFound(err):
	case err != nil:
		return nil, err
	default:
		b.Logo = &LogoInfo{ContentType: l.ContentType, Size: len(l.Data), UpdatedAt: l.UpdatedAt}
	}
	return b, nil
}

func (s *Service) updateBranding(ctx context.Context, p Principal, in *UpdateBrandingIn) (*Branding, error) {
	var logo *store.PortalLogo
	if in.LogoImage != nil && *in.LogoImage != "" {
		data, err := decodeLogo(*in.LogoImage)
		if err != nil {
			return nil, err
		}
		if logo, err = PortalLogoImage(data); err != nil {
			return nil, err
		}
		logo.UpdatedAt = s.now()
	}
	audit.SetResource(ctx, p.OwnerID)
	var out *Branding
	err := s.DB.InTx(ctx, store.TxOptions{}, func(q *store.Q) error {
		o, err := q.GetOwner(ctx, p.OwnerID)
		if err != nil {
			return err
		}
		set := func(attr string, v *string) {
			if v == nil {
				return
			}
			if t := strings.TrimSpace(*v); t != "" {
				o.Attributes[attr] = t
			} else {
				delete(o.Attributes, attr)
			}
		}
		if o.Attributes == nil {
			o.Attributes = map[string]string{}
		}
		set(AttrPortalTitle, in.Title)
		set(AttrPortalLogoURL, in.LogoURL)
		set(AttrPortalAccent, in.Accent)
		set(AttrLocale, in.Locale)
		if in.FrameOrigins != nil {
			joined := strings.Join(in.FrameOrigins, " ")
			set(AttrPortalFrameOrigins, &joined)
		}
		if err := ValidatePageAttributes(o.Attributes); err != nil {
			return err
		}
		if err := q.UpdateOwner(ctx, o); err != nil {
			return err
		}
		switch {
		case logo != nil:
			err = q.PutPortalLogo(ctx, o.ID, logo)
		case in.LogoImage != nil:
			err = q.DeletePortalLogo(ctx, o.ID)
		}
		if err != nil {
			return err
		}
		out, err = brandingOf(ctx, q, o)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func decodeLogo(b64 string) ([]byte, error) {
	b64 = strings.TrimSpace(b64)
	if len(b64) > base64.StdEncoding.EncodedLen(MaxPortalLogo)+4 {
		return nil, apperr.New(apperr.Invalid, "logo_image is larger than 64 KiB: upload an image of at most %d bytes", MaxPortalLogo).Keyed("logo.too_big", MaxPortalLogo)
	}
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, apperr.New(apperr.Invalid, "logo_image is not base64: send the image's bytes base64-encoded (standard alphabet, padded)").Keyed("logo.not_base64")
	}
	return data, nil
}

// PortalLogoImage checks an uploaded logo: at most 64 KiB, and by its
// bytes (never a name or a declared type) a PNG, JPEG or WebP image. SVG
// is refused: it can carry script, and hookd does not sanitise it.
func PortalLogoImage(data []byte) (*store.PortalLogo, error) {
	if len(data) > MaxPortalLogo {
		return nil, apperr.New(apperr.Invalid, "logo is %d bytes: upload an image of at most %d bytes (64 KiB)", len(data), MaxPortalLogo).Keyed("logo.too_big", MaxPortalLogo)
	}
	if len(data) == 0 {
		return nil, apperr.New(apperr.Invalid, "logo is empty: upload a PNG, JPEG or WebP image").Keyed("logo.not_image")
	}
	ct := http.DetectContentType(data)
	switch ct {
	case "image/png", "image/jpeg":
		if _, _, err := image.DecodeConfig(bytes.NewReader(data)); err != nil {
			return nil, apperr.New(apperr.Invalid, "logo is not a readable %s image: upload a PNG, JPEG or WebP image", ct).Keyed("logo.not_image")
		}
	case "image/webp":
	default:
		head := strings.ToLower(string(data[:min(len(data), 1024)]))
		if strings.Contains(head, "<svg") {
			return nil, apperr.New(apperr.Invalid, "logo is an SVG image, which can carry script: upload a PNG, JPEG or WebP image").Keyed("logo.svg")
		}
		return nil, apperr.New(apperr.Invalid, "logo is not an image (its bytes look like %s): upload a PNG, JPEG or WebP image", ct).Keyed("logo.not_image")
	}
	return &store.PortalLogo{ContentType: ct, Data: data}, nil
}
