package ops

import (
	"bytes"
	"image"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/apperr"
)

func encoded(t *testing.T, enc func(*bytes.Buffer, image.Image) error) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := enc(&buf, image.NewRGBA(image.Rect(0, 0, 8, 4))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestPortalLogoImage: a logo is judged by its bytes: PNG, JPEG and WebP
// up to exactly 64 KiB pass, with the type they were sniffed as; one byte
// more, SVG (whatever it is called), other images and text are refused,
// each with a key the pages translate.
func TestPortalLogoImage(t *testing.T) {
	pngData := encoded(t, func(b *bytes.Buffer, i image.Image) error { return png.Encode(b, i) })
	jpegData := encoded(t, func(b *bytes.Buffer, i image.Image) error { return jpeg.Encode(b, i, nil) })
	webp := append([]byte("RIFF\x24\x00\x00\x00WEBPVP8 "), make([]byte, 32)...)
	pad := func(b []byte, n int) []byte { return append(bytes.Clone(b), make([]byte, n-len(b))...) }
	for _, c := range []struct {
		name string
		data []byte
		ct   string
		key  string
	}{
		{"png", pngData, "image/png", ""},
		{"jpeg", jpegData, "image/jpeg", ""},
		{"webp", webp, "image/webp", ""},
		{"png of exactly 64 KiB", pad(pngData, 65536), "image/png", ""},
		{"png of 64 KiB and a byte", pad(pngData, 65537), "", "logo.too_big"},
		{"svg", []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`), "", "logo.svg"},
		{"svg after an xml declaration", []byte(`<?xml version="1.0"?>` + "\n" + `<svg xmlns="http://www.w3.org/2000/svg"/>`), "", "logo.svg"},
		{"gif", []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;"), "", "logo.not_image"},
		{"html", []byte("<html><script>alert(1)</script></html>"), "", "logo.not_image"},
		{"a png's first bytes only", pngData[:20], "", "logo.not_image"},
		{"empty", nil, "", "logo.not_image"},
	} {
		l, err := PortalLogoImage(c.data)
		key, _ := apperr.KeyOf(err)
		switch {
		case c.key == "" && (err != nil || l.ContentType != c.ct):
			t.Errorf("%s: %v %+v, want accepted as %s", c.name, err, l, c.ct)
		case c.key != "" && (apperr.CodeOf(err) != apperr.Invalid || key != c.key):
			t.Errorf("%s: %v (key %q), want 422 with key %s", c.name, err, key, c.key)
		}
	}
	if _, err := decodeLogo("not base64!"); !strings.Contains(apperr.MessageOf(err), "not base64") {
		t.Errorf("bad base64: %v", err)
	}
}

// FuzzParseEventCursor: a cursor from outside is refused or read, never
// a panic; one events.list made reads back as what it was made of.
func FuzzParseEventCursor(f *testing.F) {
	f.Add(eventCursor(time.UnixMicro(1700000000000001), "evt_01J"))
	f.Add("garbage")
	f.Add("")
	f.Fuzz(func(t *testing.T, c string) {
		at, id, err := parseEventCursor(c)
		if err != nil {
			if apperr.CodeOf(err) != apperr.Invalid {
				t.Fatalf("%q: %v, want invalid", c, err)
			}
			return
		}
		if again := eventCursor(time.UnixMicro(at), id); again != c {
			if a2, id2, _ := parseEventCursor(again); a2 != at || id2 != id {
				t.Fatalf("%q read as (%d, %q) does not round-trip", c, at, id)
			}
		}
	})
}
