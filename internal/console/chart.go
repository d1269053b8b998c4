package console

import (
	"fmt"
	"html/template"
	"strings"

	"github.com/hookd/hookd/internal/ops"
)

// chart draws the last 24 h of an endpoint's deliveries as stacked bars by
// outcome: server-rendered SVG, no script, no chart library. Every value
// written is a number or a fixed word, so nothing needs escaping. The SVG
// stretches to the page's width, so the hour labels are HTML below it (six
// hours apart, a quarter of the width each), not SVG text that would
// stretch with it.
func chart(hours []*ops.HourOutcomes) template.HTML {
	const w, h, pad, bottom = 720, 140, 4, 1
	most := 1
	for _, x := range hours {
		most = max(most, x.Delivered+x.Failed+x.Pending)
	}
	slot := float64(w) / float64(max(len(hours), 1))
	bar := slot - pad
	scale := float64(h-bottom-pad) / float64(most)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-labelledby="chart-title" preserveAspectRatio="none">`, w, h)
	b.WriteString(`<title id="chart-title">Deliveries per hour over the last 24 hours, by outcome</title>`)
	fmt.Fprintf(&b, `<line x1="0" y1="%d" x2="%d" y2="%d" class="axis"/>`, h-bottom, w, h-bottom)
	for i, x := range hours {
		left := float64(i)*slot + pad/2
		y := float64(h - bottom)
		for _, part := range []struct {
			n     int
			class string
		}{{x.Delivered, "delivered"}, {x.Failed, "failed"}, {x.Pending, "pending"}} {
			if part.n == 0 {
				continue
			}
			ph := float64(part.n) * scale
			y -= ph
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" class="bar-%s"><title>%s %s: %d %s</title></rect>`,
				left, y, bar, ph, part.class, x.Start.UTC().Format("15:04"), "UTC", part.n, part.class)
		}
	}
	b.WriteString(`</svg><div class="chart-ticks" aria-hidden="true">`)
	for i, x := range hours {
		if i%6 == 0 {
			fmt.Fprintf(&b, `<span>%s</span>`, x.Start.UTC().Format("15:04"))
		}
	}
	b.WriteString(`</div>`)
	return template.HTML(b.String()) //nolint:gosec // numbers and fixed words only
}
