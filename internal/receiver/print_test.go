package receiver

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/webhook"
)

func TestIsTerminal(t *testing.T) {
	// Not parallel: t.Setenv (isTerminal reads NO_COLOR from the process environment).
	t.Setenv("NO_COLOR", "")
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if isTerminal(file) {
		t.Error("a regular file is not a terminal")
	}
	if isTerminal(&strings.Builder{}) {
		t.Error("a strings.Builder is not a terminal")
	}
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no %s: %v", os.DevNull, err)
	}
	defer devNull.Close()
	if !isTerminal(devNull) {
		t.Errorf("%s is a character device: want colour", os.DevNull)
	}
	t.Setenv("NO_COLOR", "1")
	if isTerminal(devNull) {
		t.Error("NO_COLOR set: want no colour")
	}
}

func TestPrinterColour(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	p := &printer{w: &out, color: true}
	at := time.Date(2026, 10, 28, 12, 0, 0, 0, time.UTC)
	p.accepted(at, webhook.Event{Type: "open.ping"}, "", []byte(`{"type":"open.ping"}`))
	p.rejected(at, errors.New("webhook: no matching signature"))
	want := "\x1b[2m2026-10-28T12:00:00Z\x1b[0m \x1b[1m\x1b[32mopen.ping\x1b[0m id=-\n{\n  \"type\": \"open.ping\"\n}\n\n" +
		"\x1b[2m2026-10-28T12:00:00Z\x1b[0m \x1b[1m\x1b[31mrejected:\x1b[0m webhook: no matching signature\n\n"
	if out.String() != want {
		t.Errorf("got\n%q\nwant\n%q", out.String(), want)
	}
}
