package receiver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/hookd/hookd/webhook"
)

// ANSI styles, used only when the output is a terminal.
const (
	styleDim   = "\x1b[2m"
	styleBold  = "\x1b[1m"
	styleGreen = "\x1b[32m"
	styleRed   = "\x1b[31m"
	styleReset = "\x1b[0m"
)

// printer writes one block per request; blocks from concurrent requests
// never interleave.
type printer struct {
	mu    sync.Mutex
	w     io.Writer
	color bool
}

func newPrinter(w io.Writer) *printer {
	return &printer{w: w, color: isTerminal(w)}
}

// isTerminal reports whether w is a character device (and NO_COLOR is unset).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("NO_COLOR") != "" {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

func (p *printer) style(style, s string) string {
	if !p.color {
		return s
	}
	return style + s + styleReset
}

// accepted prints the time, event type, delivery id and the indented body.
func (p *printer) accepted(at time.Time, ev webhook.Event, deliveryID string, body []byte) {
	if deliveryID == "" {
		deliveryID = "-"
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s id=%s\n", p.style(styleDim, at.Format(time.RFC3339)),
		p.style(styleBold+styleGreen, ev.Type), deliveryID)
	if err := json.Indent(&b, body, "", "  "); err != nil {
		b.Write(body) // verified but not indentable: show it as received
	}
	b.WriteString("\n\n")
	p.write(b.Bytes())
}

// rejected prints why a request was refused.
func (p *printer) rejected(at time.Time, reason error) {
	p.write(fmt.Appendf(nil, "%s %s %v\n\n", p.style(styleDim, at.Format(time.RFC3339)),
		p.style(styleBold+styleRed, "rejected:"), reason))
}

func (p *printer) write(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	// A failing terminal cannot be reported anywhere better; the HTTP
	// answer to the sender does not depend on it.
	_, _ = p.w.Write(b)
}
