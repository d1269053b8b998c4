package bench

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// Result is one run's figures.
type Result struct {
	Options Options
	Machine Machine
	// Engine is "sqlite" or "postgres".
	Engine string
	// Partitions is how many partitions hookd's delivery table had when
	// the measured run began (PostgreSQL; 0: unpartitioned).
	Partitions int
	// Expected (event, endpoint) pairs; Received of them arrived at least
	// once; Lost = Expected − Received.
	Expected, Received, Lost int
	// Requests is every request the receiver got. Duplicates repeat a
	// (delivery id, endpoint) already received (a retry after a lost
	// answer); Redone is a pair received again under another delivery id
	// (must be 0); Stray is an event at another owner's endpoint (must be
	// 0); BadSignatures failed verification (must be 0).
	Requests, Duplicates, Redone, Stray, BadSignatures int
	// MaxInFlight is the most requests one endpoint was serving at once
	// (the standard profile's lease allows 1; kwork's 8 by default).
	MaxInFlight               int
	PublishStart              time.Time
	PublishDuration           time.Duration
	FirstReceipt, LastReceipt time.Time
	// Latency is publish (the batch request's send time) → arrival at the
	// receiver, over the first receipt of each pair.
	Latency Percentiles
	// PublishLatency is each publish request's send → answer.
	PublishLatency Percentiles
	// CPU used by hookd and its PostgreSQL backends from the first publish
	// to the end of the wait for deliveries.
	CPU CPU
	// PeakRSS is VmHWM in bytes, of RSSScope.
	PeakRSS  int64
	RSSScope string
	// Stalled: the wait ended before every pair arrived.
	Stalled bool
	// Filled is how many deliveries the soak wrote before the run, in
	// FillDuration; TableBytes is the size of hookd's event and delivery
	// tables with their indexes after it;
	// Pages the owner's pages timed at that size.
	Filled       int
	FillDuration time.Duration
	TableBytes   int64
	Pages        []PageTiming
	// PagesVacuumed are the pages timed again on PostgreSQL after a
	// VACUUM of the tables, which took Vacuumed: the fill leaves today's
	// rows without a visibility map, as a server with autovacuum off does
	// (this machine's), and a server with it on would have vacuumed them.
	PagesVacuumed []PageTiming
	Vacuumed      time.Duration
	// PrunePasses are the measured retention passes (Options.PrunePass).
	PrunePasses []PrunePassResult
	// Samples is the series of a run with Options.Series.
	Samples []sample
	// NoisyAttempts is how many requests the noisy owner's dead receiver
	// got during the run, NoisyHanging how many hung at its end.
	NoisyAttempts, NoisyHanging int64
}

// Percentiles of a latency distribution.
type Percentiles struct{ P50, P95, P99, Max time.Duration }

// OK reports whether the run was correct: everything arrived, no bad
// signature, nothing at the wrong endpoint.
func (r Result) OK() bool {
	return r.Lost == 0 && r.BadSignatures == 0 && r.Stray == 0 && r.Redone == 0
}

// Mode says how events were published.
func (r Result) Mode() string {
	warm := ""
	if r.Options.Warmup > 0 {
		warm = fmt.Sprintf(", after a warm-up of %d events (not counted)", r.Options.Warmup)
	}
	if r.Options.Rate > 0 {
		return fmt.Sprintf("open loop at %g events/s%s", r.Options.Rate, warm)
	}
	if r.Options.BatchSize == 1 {
		return fmt.Sprintf("closed loop, one event per request, %d concurrent publishers%s", r.Options.Publishers, warm)
	}
	return fmt.Sprintf("closed loop, batches of %d, %d concurrent publishers%s", r.Options.BatchSize, r.Options.Publishers, warm)
}

// PublishRate is events accepted per second of publishing.
func (r Result) PublishRate() float64 { return perSecond(r.Options.Events, r.PublishDuration) }

// DeliveryRate is distinct deliveries per second from the first receipt to
// the last.
func (r Result) DeliveryRate() float64 {
	return perSecond(r.Received-1, r.LastReceipt.Sub(r.FirstReceipt))
}

// EndToEnd is the time from the first publish request to the last receipt.
func (r Result) EndToEnd() time.Duration {
	if r.LastReceipt.IsZero() {
		return 0
	}
	return r.LastReceipt.Sub(r.PublishStart)
}

func perSecond(n int, d time.Duration) float64 {
	if d <= 0 || n <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// WriteTo prints one line per figure.
func (r Result) WriteTo(w io.Writer) (int64, error) {
	o := r.Options
	where := "in-process"
	if o.Spawn {
		where = "spawned hookd serve"
	}
	if o.Nodes > 1 {
		where = fmt.Sprintf("%d spawned hookd serve: one with the API and workers, %d with workers only", o.Nodes, o.Nodes-1)
	}
	knobs := []string{fmt.Sprintf("workers %s", orDefault(o.Workers, "default"))}
	if o.FetchCooldown > 0 {
		knobs = append(knobs, "fetch cooldown "+o.FetchCooldown.String())
	}
	if o.FetchPollInterval > 0 {
		knobs = append(knobs, "fetch poll "+o.FetchPollInterval.String())
	}
	if o.BusySnooze > 0 {
		knobs = append(knobs, "busy snooze "+o.BusySnooze.String())
	}
	if r.Engine == "postgres" {
		knobs = append(knobs, fmt.Sprintf("%d time partitions", r.Partitions))
	}
	var b strings.Builder
	line := func(name, format string, args ...any) {
		fmt.Fprintf(&b, "%-22s %s\n", name, fmt.Sprintf(format, args...))
	}
	line("machine", "%s", r.Machine)
	line("engine", "%s (%s; %s)", r.Engine, where, strings.Join(knobs, ", "))
	if o.PublishOnly {
		line("scenario", "%d events over %d owners, no subscribers (publish only), %s profile", o.Events, o.Owners, o.Profile)
	} else {
		line("scenario", "%d events × %d endpoints over %d owners, %s profile, receiver delay %v", o.Events, o.Endpoints, o.Owners, o.Profile, o.ReceiverDelay)
		if o.Destination != "" {
			line("destination", "%s: every endpoint a queue, subject, stream or topic of its own, read by the bench's consumer", o.Destination)
		}
	}
	if o.Noisy > 0 {
		how := "that never answer"
		if o.NoisyDelay > 0 {
			how = "that answer after " + o.NoisyDelay.String()
		}
		line("noisy", "another owner: %d endpoints %s, %d events to them; %d attempts reached them, %d hanging at the end", o.Noisy, how, o.NoisyEvents, r.NoisyAttempts, r.NoisyHanging)
	}
	if r.Filled > 0 {
		line("soak", "%d finished deliveries filled in %v before the run (%s of tables and indexes)", r.Filled, r.FillDuration.Round(time.Second), sizeOf(r.TableBytes))
		writePages(line, "page ", r.Pages)
		if len(r.PagesVacuumed) > 0 {
			line("soak vacuum", "VACUUM (ANALYZE) of the event and delivery tables in %v (today's rows as autovacuum would leave them); the pages again:", r.Vacuumed.Round(time.Millisecond))
			writePages(line, "vac ", r.PagesVacuumed)
		}
	}
	for _, pp := range r.PrunePasses {
		pp.write(line)
	}
	if len(r.Samples) > 0 {
		r.writeSteady(line)
	}
	line("publishing", "%s", r.Mode())
	switch o.Generator {
	case GeneratorLoop:
		line("load generator", "loop: one thread, epoll over one keep-alive connection per publisher")
	case GeneratorConns:
		line("load generator", "conns: a goroutine and a lean HTTP/1.1 keep-alive connection per publisher")
	default:
		line("load generator", "net-http: Go's net/http client")
	}
	line("expected deliveries", "%d", r.Expected)
	line("publish", "%.0f events/s (%d events in %v)", r.PublishRate(), o.Events, r.PublishDuration.Round(time.Millisecond))
	line("publish request p50", "%v", r.PublishLatency.P50.Round(time.Microsecond*100))
	line("publish request p99", "%v", r.PublishLatency.P99.Round(time.Microsecond*100))
	if !o.PublishOnly {
		line("deliveries", "%.0f/s (first→last receipt, %v)", r.DeliveryRate(), r.LastReceipt.Sub(r.FirstReceipt).Round(time.Millisecond))
		line("end to end", "%v (first publish → last receipt; %.0f deliveries/s)", r.EndToEnd().Round(time.Millisecond), perSecond(r.Received, r.EndToEnd()))
		line("latency p50", "%v", r.Latency.P50.Round(time.Microsecond*100))
		line("latency p95", "%v", r.Latency.P95.Round(time.Microsecond*100))
		line("latency p99", "%v", r.Latency.P99.Round(time.Microsecond*100))
		line("latency max", "%v", r.Latency.Max.Round(time.Microsecond*100))
	}
	line("peak RSS", "%.1f MB (VmHWM of %s)", float64(r.PeakRSS)/(1<<20), r.RSSScope)
	r.writeCPU(line)
	line("bad signatures", "%d", r.BadSignatures)
	stalled := ""
	if r.Stalled {
		stalled = " (stalled: the wait ended first)"
	}
	line("lost deliveries", "%d%s", r.Lost, stalled)
	line("duplicate receipts", "%d (of %d requests)", r.Duplicates, r.Requests)
	line("max in flight", "%d (most requests one endpoint served at once)", r.MaxInFlight)
	if r.Redone > 0 || r.Stray > 0 {
		line("redone pairs", "%d (same event and endpoint, another delivery id)", r.Redone)
		line("stray deliveries", "%d (another owner's event)", r.Stray)
	}
	n, err := io.WriteString(w, b.String())
	return int64(n), err
}

func orDefault(n int, def string) string {
	if n == 0 {
		return def
	}
	return fmt.Sprint(n)
}

// writeCPU prints the CPU figures: hookd's, its PostgreSQL backends', and
// their sum per delivery (per publish without subscribers).
func (r Result) writeCPU(line func(name, format string, args ...any)) {
	c := r.CPU
	if !c.HookdKnown {
		line("cpu hookd", "unknown (no /proc)")
		return
	}
	scope := "the hookd serve process"
	if !r.Options.Spawn {
		scope = "this process: hookd with the load generator and the receiver; --spawn for hookd alone"
	}
	if c.Nodes > 1 {
		scope = fmt.Sprintf("the %d hookd serve processes", c.Nodes)
	}
	line("cpu hookd", "%.2f s (utime+stime of %s)", c.Hookd.Seconds(), scope)
	if r.Engine != "postgres" {
		return
	}
	if !c.PostgresKnown {
		line("cpu postgres", "unknown (the server's backends are not in this machine's /proc)")
		return
	}
	line("cpu postgres", "%.2f s (utime+stime of hookd's %d backends; not the WAL writer or checkpointer)", c.Postgres.Seconds(), c.Backends)
	per, what := r.Received, "delivery"
	if r.Options.PublishOnly {
		per, what = r.Options.Events, "publish"
	}
	if per > 0 {
		line("cpu per "+what, "%.3f ms (hookd + postgres backends)", float64(c.Total().Microseconds())/1000/float64(per))
	}
	r.writeMachineCPU(line, per, what)
}

// writeMachineCPU prints the whole machine's CPU over the run and what an
// outside probe counts (issue 48 §3): the machine's busy time less the
// probe's own, per delivery. Only a spawned run separates the probe (this
// process) from hookd.
func (r Result) writeMachineCPU(line func(name, format string, args ...any), per int, what string) {
	c := r.CPU
	if !c.MachineKnown || c.Machine.Total <= 0 {
		return
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(max(per, 1)) }
	line("cpu machine", "%.2f s busy of %.2f s (%.0f %%; irq+softirq %.2f s), /proc/stat over %v", c.Machine.Busy.Seconds(), c.Machine.Total.Seconds(),
		100*c.Machine.Busy.Seconds()/c.Machine.Total.Seconds(), c.Machine.IRQ.Seconds(), c.Wall.Round(time.Millisecond))
	if !r.Options.Spawn {
		line("cpu probe", "%.2f s (this process: hookd, load generator and receiver together; --spawn to separate them)", c.Probe.Seconds())
		return
	}
	line("cpu probe", "%.2f s (this process: the load generator and the receiver)", c.Probe.Seconds())
	if c.PostgresSharedKnown {
		line("cpu postgres shared", "%.2f s (the server's WAL writer, checkpointer, background writer, launchers)", c.PostgresShared.Seconds())
	}
	rest := c.Stack() - c.Hookd - c.Postgres - c.PostgresShared
	line("cpu rest", "%.2f s (machine − probe − hookd − postgres: interrupts, kernel threads, other processes)", rest.Seconds())
	if per > 0 {
		line("cpu stack per "+what, "%.3f ms (whole machine less the probe: hookd %.3f, backends %.3f, server %.3f, rest %.3f)",
			ms(c.Stack()), ms(c.Hookd), ms(c.Postgres), ms(c.PostgresShared), ms(rest))
	}
}

func sizeOf(b int64) string {
	if b >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

// writeSteady prints the series' summary: the tables' size after the
// first two retention windows (its spread is the plateau's flatness),
// and deliveries a second in the run's first and last thirds.
func (r Result) writeSteady(line func(name, format string, args ...any)) {
	o := r.Options
	line("series", "%d samples every %v in %s.csv and .svg; retention %v", len(r.Samples), o.SampleEvery, o.Series, orDuration(o.Retention, "hookd's 30 days"))
	spread := func(after time.Duration, val func(sample) int64) (lo, hi int64) {
		lo = math.MaxInt64
		for _, x := range r.Samples {
			if o.Retention > 0 && x.at >= after {
				lo, hi = min(lo, val(x)), max(hi, val(x))
			}
		}
		return lo, hi
	}
	if lo, hi := spread(2*o.Retention, func(x sample) int64 { return x.tableBytes }); hi > 0 {
		line("steady size", "%s to %s after two windows (%.0f %% apart)", sizeOf(lo), sizeOf(hi), 100*float64(hi-lo)/float64(lo))
	}
	if lo, hi := spread(o.Retention, func(x sample) int64 { return x.fileBytes }); hi > 0 {
		line("steady file", "SQLite file + WAL %s to %s after the first window (%.0f %% apart)", sizeOf(lo), sizeOf(hi), 100*float64(hi-lo)/float64(lo))
	}
	n := len(r.Samples)
	third := func(from, to int) float64 {
		var sum float64
		for _, x := range r.Samples[from:to] {
			sum += x.deliveries
		}
		return sum / float64(max(1, to-from))
	}
	if n >= 3 {
		line("steady deliveries", "%.0f/s in the first third, %.0f/s in the last", third(0, n/3), third(n-n/3, n))
	}
}

func orDuration(d time.Duration, def string) string {
	if d == 0 {
		return def
	}
	return d.String()
}

// writePages prints one line a page timing, its name after prefix.
func writePages(line func(name, format string, args ...any), prefix string, pages []PageTiming) {
	ms := func(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
	for _, pg := range pages {
		line(prefix+pg.Name, "p50 %v, p99 %v, max %v, first %v (%d requests, one at a time)", ms(pg.P50), ms(pg.P99), ms(pg.Max), ms(pg.First), pageRounds)
	}
}
