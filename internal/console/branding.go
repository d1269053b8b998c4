package console

import (
	"encoding/base64"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/ops"
)

// maxBrandingForm bounds the branding form's body: room for a logo well
// over 64 KiB, so the op refuses it saying how big it may be.
const maxBrandingForm = 1 << 20

type brandingData struct {
	Branding *ops.Branding
	// LogoSrc is the uploaded logo's URL on this console (none: "").
	LogoSrc string
	Notice  string
	Error   string
}

// showBranding is the owner's portal settings page (portal.get_branding).
func (c *Console) showBranding(w http.ResponseWriter, r *http.Request, s *session) {
	b, err := callAs[ops.Branding](r.Context(), c, s, "portal.get_branding", &ops.Empty{})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	d := brandingData{Branding: b}
	if r.URL.Query().Get("done") == "saved" {
		d.Notice = c.localeOf(r, s).T("notice.saved")
	}
	c.brandingPage(w, r, s, http.StatusOK, d)
}

func (c *Console) brandingPage(w http.ResponseWriter, r *http.Request, s *session, status int, d brandingData) {
	if d.Branding.Logo != nil {
		d.LogoSrc = c.cfg.Prefix + "/admin/branding/logo?v=" + strconv.FormatInt(d.Branding.Logo.UpdatedAt.UnixMicro(), 10)
	}
	c.render(w, r, status, "branding", s, msg("title.branding"), d)
}

// updateBranding saves the settings form (portal.update_branding): a
// refused value re-renders the form with what to fix, nothing saved.
func (c *Console) updateBranding(w http.ResponseWriter, r *http.Request, s *session) {
	field := func(name string) *string { v := r.PostFormValue(name); return &v }
	in := &ops.UpdateBrandingIn{Title: field("title"), LogoURL: field("logo_url"), Accent: field("accent"), Locale: field("locale"),
		FrameOrigins: strings.Fields(strings.ReplaceAll(r.PostFormValue("frame_origins"), ",", " "))}
	if in.FrameOrigins == nil {
		in.FrameOrigins = []string{}
	}
	if r.PostFormValue("remove_logo") != "" {
		none := ""
		in.LogoImage = &none
	}
	if f, _, err := r.FormFile("logo"); err == nil {
		data, err := io.ReadAll(io.LimitReader(f, ops.MaxPortalLogo+1))
		_ = f.Close()
		if err != nil {
			c.fail(w, r, s, err)
			return
		}
		if len(data) > 0 {
			enc := base64.StdEncoding.EncodeToString(data)
			in.LogoImage = &enc
		}
	}
	_, err := callAs[ops.Branding](r.Context(), c, s, "portal.update_branding", in)
	switch {
	case apperr.CodeOf(err) == apperr.Invalid:
		// The form as typed, with what to fix.
		shown := &ops.Branding{Title: *in.Title, LogoURL: *in.LogoURL, Accent: *in.Accent, Locale: *in.Locale, FrameOrigins: in.FrameOrigins}
		if cur, cerr := callAs[ops.Branding](r.Context(), c, s, "portal.get_branding", &ops.Empty{}); cerr == nil {
			shown.Logo = cur.Logo
		}
		c.brandingPage(w, r, s, http.StatusUnprocessableEntity, brandingData{Branding: shown, Error: c.localeOf(r, s).Err(err)})
		return
	case err != nil:
		c.fail(w, r, s, err)
		return
	}
	c.redirect(w, r, "/admin/branding?done=saved")
}

// limitBody bounds a form's body before anything reads it.
func limitBody(n int64, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, n)
		h.ServeHTTP(w, r)
	})
}

// consoleLogo serves the session owner's uploaded logo to the console.
func (c *Console) consoleLogo(w http.ResponseWriter, r *http.Request, s *session) {
	c.serveLogo(w, r, s.OwnerID)
}

// portalLogo serves the portal session owner's uploaded logo.
func (c *Console) portalLogo(w http.ResponseWriter, r *http.Request) {
	c.serveLogo(w, r, portalSessionOf(r).OwnerID)
}

// serveLogo answers an owner's uploaded logo as the image type it was
// sniffed as when it was put, and nothing else: no sniffing by the
// browser, no script or style in its context, no other site's embedding.
func (c *Console) serveLogo(w http.ResponseWriter, r *http.Request, ownerID string) {
	l, err := c.cfg.Ops.Pages().GetPortalLogo(r.Context(), ownerID)
	if err != nil {
		if apperr.IsNotFound(err) {
			http.NotFound(w, r)
			return
		}
		c.cfg.Log.Error("console: portal logo", "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", l.ContentType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Content-Disposition", `inline; filename="logo"`)
	h.Set("Cache-Control", "private, max-age=300")
	h.Set("Content-Length", strconv.Itoa(len(l.Data)))
	_, _ = w.Write(l.Data)
}
