package bench

import (
	"context"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The steady state (issue 48): with a short retention window
// (Options.Retention, minutes) and an open-loop rate long enough for the
// window to turn over many times, a sampler records every SampleEvery
// the tables' size, the deliveries a second and the publish requests'
// p99 over the interval, and writes them to Options.Series + ".csv" and
// ".svg": a plateau is seen faster than read.

// sample is one interval's figures.
type sample struct {
	at         time.Duration // since the first publish
	tableBytes int64
	// fileBytes is the SQLite file with its -wal, as the filesystem has
	// them (0 on PostgreSQL): what a full disk would see.
	fileBytes  int64
	deliveries float64 // a second, over the interval
	publishP99 time.Duration
}

// sampler takes samples until stopped.
type sampler struct {
	every   time.Duration
	db      *database
	rcv     *receiver
	times   *requestTimes
	start   time.Time
	mu      sync.Mutex
	samples []sample
	errs    []error
}

func (s *sampler) run(ctx context.Context) {
	tick := time.NewTicker(s.every)
	defer tick.Stop()
	lastCount, lastReq, last := 0, 0, time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			s.rcv.mu.Lock()
			count := s.rcv.unique
			s.rcv.mu.Unlock()
			s.times.mu.Lock()
			reqs := append([]time.Duration(nil), s.times.all[lastReq:]...)
			lastReq = len(s.times.all)
			s.times.mu.Unlock()
			size, err := tableBytes(ctx, s.db)
			file := sqliteFileBytes(s.db)
			s.mu.Lock()
			if err != nil {
				// No size, no sample: the tick that races the run's end
				// read nothing and was kept as a size of 0, which the
				// plateau's spread then counted.
				if ctx.Err() == nil {
					s.errs = append(s.errs, err)
				}
				s.mu.Unlock()
				continue
			}
			s.samples = append(s.samples, sample{at: now.Sub(s.start), tableBytes: size, fileBytes: file,
				deliveries: float64(count-lastCount) / now.Sub(last).Seconds(), publishP99: percentiles(reqs).P99})
			s.mu.Unlock()
			lastCount, last = count, now
		}
	}
}

// write stores the series as CSV and as an SVG chart.
func (s *sampler) write(prefix string, title string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := os.Create(prefix + ".csv")
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write([]string{"seconds", "table_bytes", "file_bytes", "deliveries_per_s", "publish_p99_ms"})
	for _, x := range s.samples {
		_ = w.Write([]string{strconv.FormatFloat(x.at.Seconds(), 'f', 1, 64), strconv.FormatInt(x.tableBytes, 10), strconv.FormatInt(x.fileBytes, 10),
			strconv.FormatFloat(x.deliveries, 'f', 1, 64), strconv.FormatFloat(float64(x.publishP99.Microseconds())/1000, 'f', 2, 64)})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.WriteFile(prefix+".svg", []byte(s.svg(title)), 0o644)
}

// sqliteFileBytes is the SQLite file's size plus its -wal's (0 on
// PostgreSQL, or when they cannot be read).
func sqliteFileBytes(db *database) int64 {
	if db.engine == "postgres" {
		return 0
	}
	var n int64
	for _, f := range []string{db.url, db.url + "-wal"} {
		if st, err := os.Stat(f); err == nil {
			n += st.Size()
		}
	}
	return n
}

type panel struct {
	name string
	val  func(sample) float64
	unit string
}

// svg draws the series one above the other on a shared time axis: the
// tables' size (and on SQLite the file's), deliveries a second and the
// publish p99.
func (s *sampler) svg(title string) string {
	const w, h, left, top, gap = 760, 150, 70, 40, 40
	panels := []panel{{"tables and indexes", func(x sample) float64 { return float64(x.tableBytes) / (1 << 20) }, "MiB"}}
	if len(s.samples) > 0 && s.samples[0].fileBytes > 0 {
		panels = append(panels, panel{"SQLite file + WAL", func(x sample) float64 { return float64(x.fileBytes) / (1 << 20) }, "MiB"})
	}
	panels = append(panels,
		panel{"deliveries a second", func(x sample) float64 { return x.deliveries }, "/s"},
		panel{"publish request p99", func(x sample) float64 { return float64(x.publishP99.Microseconds()) / 1000 }, "ms"})
	var b strings.Builder
	height := top + len(panels)*(h+gap) + 20
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", w+left+20, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%d" y="20" font-size="14">%s</text>`+"\n", left, xmlEscape(title))
	end := 1.0
	if n := len(s.samples); n > 0 {
		end = max(1, s.samples[n-1].at.Seconds())
	}
	for i, p := range panels {
		y0 := top + i*(h+gap)
		hi := 0.0
		for _, x := range s.samples {
			hi = max(hi, p.val(x))
		}
		hi = niceCeil(hi)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s (%s)</text>`+"\n", left, y0-6, p.name, p.unit)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", left, y0, w, h)
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%g</text><text x="%d" y="%d" text-anchor="end">0</text>`+"\n", left-4, y0+10, hi, left-4, y0+h)
		var pts []string
		for _, x := range s.samples {
			px := float64(left) + x.at.Seconds()/end*w
			py := float64(y0+h) - p.val(x)/hi*h
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px, py))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="#1f6feb" stroke-width="1.5" points="%s"/>`+"\n", strings.Join(pts, " "))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d">0 s</text><text x="%d" y="%d" text-anchor="end">%.0f s since the first publish</text>`+"\n",
		left, height-8, left+w, height-8, end)
	b.WriteString("</svg>\n")
	return b.String()
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (1 for 0).
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
