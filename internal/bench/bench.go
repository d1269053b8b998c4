// Package bench measures hookd end to end: it starts hookd on a fresh
// database, a local receiver that verifies every signature, creates owners
// and endpoints, publishes events through the public HTTP API and reports
// publish rate, delivery rate, publish→receipt latency, peak RSS and the
// correctness counters (bad signatures, lost and duplicate deliveries).
//
// `hookd bench` is a thin CLI over Run; docs/performance.md has the method
// and the figures.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"
)

// Options describe one run. Zero values are the defaults noted.
type Options struct {
	// DB is "sqlite" (a temp file, default) or a postgres:// URL (a fresh
	// schema in it, dropped afterwards).
	DB string
	// Events to publish (default 1,000), Endpoints to create (default 10)
	// and Owners they are spread over (default min(Endpoints, 10)).
	// Endpoint j and event i belong to owner j%Owners and i%Owners.
	Events, Endpoints, Owners int
	// PublishOnly creates no endpoints: the events have no subscriber,
	// and the run measures publishing alone (Endpoints is ignored, Owners
	// defaults to 1).
	PublishOnly bool
	// Warmup events are published first, the same way, and their
	// deliveries awaited, before the measured run; they count in no
	// figure. A fresh hookd's first seconds (new database connections
	// loading their catalog caches, statements planned for the first time)
	// otherwise weigh on the tail of a short run's latency.
	Warmup int
	// Rate is the open-loop publish rate in events/s; 0 publishes as fast
	// as the API takes them (closed loop).
	Rate float64
	// Profile of every owner: standard (default) or kwork.
	Profile string
	// Noisy adds another owner with this many endpoints on a receiver that
	// never answers, and NoisyEvents (default 10) events published to
	// them just before the measured run (noisy.go): the run then measures
	// the plan's owners beside an outage.
	Noisy, NoisyEvents int
	// NoisyDelay, when set, makes the noisy owner's receiver slow instead
	// of dead: it answers 200 after this long (under hookd's 10 s
	// timeout, a slow but answering receiver).
	NoisyDelay time.Duration
	// Destination points every endpoint at a broker instead of the HTTP
	// receiver: amqp, nats or redis (the machine's, on their usual
	// ports) or kafka (in-process kfake); a consumer reads each endpoint's
	// queue, subject, stream or topic, verifies and counts every message
	// as the receiver does a request. "" is HTTP.
	Destination string
	// Soak fills the database with this many finished deliveries (and
	// their events) of the plan's endpoints before the run, spread over
	// the last 25 days, and times the owner's pages at that size
	// (soak.go, pages.go): the run then measures hookd at volume.
	Soak int
	// Partitions, on PostgreSQL, creates the time partitions of that many
	// days before now ahead of the run (a deployment that old has them),
	// so the run measures hookd with a month's partitions, not the few a
	// new database has (store/partition.go).
	Partitions int
	// Unpartitioned, on PostgreSQL, leaves hookd's event and delivery
	// tables unpartitioned (serve --partition-interval 0); hookd
	// partitions them by day otherwise.
	Unpartitioned bool
	// PrunePass, with Soak, runs two retention passes after the fill,
	// each deleting this much of the history's oldest end, the second
	// beside a publish probe, and measures them (prunepass.go). It
	// measures retention's row loop on unpartitioned tables
	// (Unpartitioned), as its documented figures were taken; on
	// partitioned ones a pass may also drop whole days.
	PrunePass time.Duration
	// Retention is hookd's (0: its 30 days); minutes make a steady state
	// in which the window turns over many times during the run.
	Retention time.Duration
	// Series, when set, samples the run every SampleEvery (default 10 s):
	// the tables' size, deliveries a second and publish p99, written to
	// Series+".csv" and drawn in Series+".svg" (series.go).
	Series      string
	SampleEvery time.Duration
	// ReceiverDelay is how long the receiver waits before answering 200.
	ReceiverDelay time.Duration
	// Spawn runs hookd as a child `hookd serve` process of Executable
	// (default os.Executable()) instead of in this process. Another build's
	// binary measures that build with this one's load (make bench-compare);
	// it must know this build's migrations.
	Spawn      bool
	Executable string
	// Nodes is how many hookd processes to spawn (default 1): the first
	// serves the API and delivers, the others deliver only (`serve --role
	// worker`), all on the one database.
	Nodes int
	// CPUProfile receives a pprof CPU profile of the run (in-process only).
	CPUProfile io.Writer
	// MemProfile receives a pprof allocation profile of the measured run
	// alone (in-process only): sampling every 4 KiB allocated from its
	// first publish, none before (the caller sets runtime.MemProfileRate
	// to 0 at its start).
	MemProfile io.Writer
	// Knobs hookd.Config exposes (0: hookd's defaults). Only Workers
	// reaches a spawned process (`serve --workers`).
	Workers           int
	FetchCooldown     time.Duration
	FetchPollInterval time.Duration
	// BusySnooze is how long a delivery to a busy endpoint waits (hookd's
	// default: the profiles' 2 s). Lower it to see what the lease's snooze
	// costs, or to shorten tests; in-process only.
	BusySnooze time.Duration
	// BatchSize is the most events per publish request (default 1,000;
	// the API's limit; 1 publishes each event alone, through POST
	// /api/v1/events). Publishers is how many requests run at once
	// (default 4).
	BatchSize  int
	Publishers int
	// Generator is how the publishes are sent (the load generator runs on
	// the cores it measures, so what it costs matters): GeneratorLoop, one
	// thread waiting on every connection with epoll, as wrk and pgbench do
	// (the default for closed loops on Linux); GeneratorConns, a goroutine
	// per connection (the default otherwise); GeneratorNetHTTP, Go's
	// net/http client, to show what a heavier client costs.
	Generator string
	// StallTimeout ends the wait when no new delivery arrived for this long
	// (default 30 s); Timeout bounds the whole wait (default 10 min).
	StallTimeout time.Duration
	Timeout      time.Duration
	// Log receives hookd's own log (default: discarded) and Progress a line
	// per phase (default: nothing).
	Log      *slog.Logger
	Progress io.Writer
}

// Load generators (Options.Generator).
const (
	GeneratorLoop    = "loop"
	GeneratorConns   = "conns"
	GeneratorNetHTTP = "net-http"
)

// Profiles the bench can drive.
const (
	ProfileStandard = "standard"
	ProfileKwork    = "kwork"
)

func (o *Options) defaults() {
	if o.DB == "" {
		o.DB = "sqlite"
	}
	if o.Events == 0 {
		o.Events = 1000
	}
	switch {
	case o.PublishOnly:
		o.Endpoints = 0
		if o.Owners == 0 {
			o.Owners = 1
		}
	case o.Endpoints == 0:
		o.Endpoints = 10
	}
	if o.Owners == 0 {
		o.Owners = min(o.Endpoints, 10)
	}
	if o.Profile == "" {
		o.Profile = ProfileStandard
	}
	if o.BatchSize == 0 {
		o.BatchSize = 1000
	}
	if o.Publishers == 0 {
		o.Publishers = 4
	}
	if o.Generator == "" {
		o.Generator = GeneratorConns
		if loopSupported && o.Rate == 0 {
			o.Generator = GeneratorLoop
		}
	}
	if o.Noisy > 0 && o.NoisyEvents == 0 {
		o.NoisyEvents = 10
	}
	if o.StallTimeout == 0 {
		o.StallTimeout = 30 * time.Second
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Minute
	}
	if o.SampleEvery == 0 {
		o.SampleEvery = 10 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
}

// Validate reports the first option that cannot work.
func (o *Options) Validate() error {
	switch {
	case o.DB != "sqlite" && !isPostgres(o.DB):
		return fmt.Errorf("db %q: use sqlite or a postgres:// URL", o.DB)
	case o.Warmup < 0:
		return errors.New("warmup must not be negative")
	case o.Events < 1 || o.Owners < 1 || o.Endpoints < 1 && !o.PublishOnly:
		return errors.New("events, endpoints and owners must be at least 1")
	case o.Owners > o.Endpoints && !o.PublishOnly:
		return fmt.Errorf("%d owners for %d endpoints: every owner needs an endpoint", o.Owners, o.Endpoints)
	case o.NoisyDelay < 0 || o.NoisyDelay >= 10*time.Second:
		return fmt.Errorf("--noisy-delay must be between 0 (never answers) and 10s (hookd's timeout), not %s", o.NoisyDelay)
	case o.Noisy < 0 || o.NoisyEvents < 0 || o.NoisyEvents > 1000:
		return errors.New("noisy endpoints must not be negative, and noisy events must be between 0 and 1000 (one batch)")
	case o.Noisy > 0 && o.PublishOnly:
		return errors.New("the noisy scenario needs deliveries: drop --publish-only")
	case o.Destination != "" && o.Destination != DestinationAMQP && o.Destination != DestinationNATS && o.Destination != DestinationKafka && o.Destination != DestinationRedis:
		return fmt.Errorf("destination %q: use amqp, nats, kafka or redis (or none: HTTP)", o.Destination)
	case o.Destination != "" && (o.PublishOnly || o.Noisy > 0 || o.ReceiverDelay > 0):
		return errors.New("--destination measures deliveries to a broker: drop --publish-only, --noisy and --receiver-delay")
	case o.Soak < 0:
		return errors.New("--soak must not be negative")
	case o.Soak > 0 && (o.PublishOnly || o.Destination != ""):
		return errors.New("--soak fills a history of HTTP deliveries: drop --publish-only and --destination")
	case o.PrunePass < 0 || o.PrunePass > 0 && (o.Soak == 0 || 2*o.PrunePass >= soakSpan):
		return fmt.Errorf("--prune-pass %v needs --soak and two passes' worth of history: at most %v", o.PrunePass, soakSpan/2)
	case o.Unpartitioned && o.Partitions > 0:
		return errors.New("--partitions needs the tables partitioned: drop --unpartitioned")
	case o.Retention != 0 && o.Retention < time.Minute:
		return fmt.Errorf("--retention %s: hookd keeps deliveries at least 1m", o.Retention)
	case o.SampleEvery < 0:
		return errors.New("--sample-every must not be negative")
	case o.Rate < 0:
		return errors.New("rate must not be negative")
	case o.Profile != ProfileStandard && o.Profile != ProfileKwork:
		return fmt.Errorf("profile %q: use standard or kwork", o.Profile)
	case o.BatchSize < 1 || o.BatchSize > 1000:
		return errors.New("batch size must be between 1 and 1000 (the API's limit)")
	case o.Publishers < 1:
		return errors.New("publishers must be at least 1")
	case o.Generator != "" && o.Generator != GeneratorLoop && o.Generator != GeneratorConns && o.Generator != GeneratorNetHTTP:
		return fmt.Errorf("generator %q: use loop, conns or net-http", o.Generator)
	case o.Generator == GeneratorLoop && !loopSupported:
		return errors.New("the loop generator needs Linux (epoll): use --generator conns")
	case o.Generator == GeneratorLoop && o.Rate > 0:
		return errors.New("the loop generator sends closed loops only: drop --rate, or use --generator conns with it")
	case o.Nodes < 0 || o.Nodes > 1 && !o.Spawn:
		return errors.New("--nodes needs --spawn (and must not be negative)")
	case o.Executable != "" && !o.Spawn:
		return errors.New("another hookd binary needs --spawn")
	case o.Spawn && (o.CPUProfile != nil || o.MemProfile != nil):
		return errors.New("a CPU or memory profile needs the in-process run (drop --spawn)")
	case o.Spawn && (o.FetchCooldown != 0 || o.FetchPollInterval != 0 || o.BusySnooze != 0):
		return errors.New("fetch cooldown, poll interval and busy snooze reach the in-process run only (`hookd serve` has no flags for them)")
	}
	return nil
}

func isPostgres(u string) bool {
	return strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://")
}

// Run performs one bench run and returns its figures. An error means the
// run could not be carried out; lost or bad deliveries are figures, not
// errors (check Result.OK).
func Run(ctx context.Context, opts Options) (Result, error) {
	opts.defaults()
	if err := opts.Validate(); err != nil {
		return Result{}, err
	}
	plan := newPlan(opts)
	res := Result{Options: opts, Expected: plan.expected, Machine: thisMachine()}
	step := func(format string, args ...any) {
		fmt.Fprintf(opts.Progress, "bench: "+format+"\n", args...)
	}

	db, err := freshDatabase(ctx, opts.DB)
	if err != nil {
		return res, err
	}
	defer db.drop()
	res.Engine = db.engine

	rcv, err := startReceiver(plan, opts.ReceiverDelay)
	if err != nil {
		return res, err
	}
	defer rcv.close()

	step("setting up %s: %d owners, %d endpoints (%s)", db.engine, opts.Owners, opts.Endpoints, opts.Profile)
	began := time.Now()
	srv, err := startHookd(ctx, opts, db, plan)
	if err != nil {
		return res, err
	}
	defer srv.stop()
	var dest *consumer
	if opts.Destination != "" {
		if dest, err = startConsumer(ctx, opts.Destination, rcv, opts.Endpoints); err != nil {
			return res, err
		}
		defer dest.stop()
	}
	api := newClient(srv.url, opts.Publishers)
	if err := setupEndpoints(ctx, api, plan, rcv, dest); err != nil {
		return res, err
	}
	var dead *deadReceiver
	if opts.Noisy > 0 {
		step("noisy: %d dead endpoints of another owner, %d events to them", opts.Noisy, opts.NoisyEvents)
		if dead, err = startNoisy(ctx, api, plan, opts); err != nil {
			return res, err
		}
		defer dead.close()
	}
	// A soak's history (25 days) gets its days' partitions too, where hookd
	// partitions its tables (serve --partition-interval): in bulk, rows of
	// days without one would all land in the default partition.
	if days := max(opts.Partitions, soakPartitionDays(opts.Soak)); days > 0 && db.engine == "postgres" {
		step("partitions: %d days before now (where the tables are partitioned)", days)
		if err := makePartitions(ctx, db, days); err != nil {
			return res, fmt.Errorf("partitions: %w", err)
		}
	}
	if db.engine == "postgres" {
		if res.Partitions, err = countPartitions(ctx, db); err != nil {
			return res, fmt.Errorf("partitions: %w", err)
		}
	}
	if opts.Soak > 0 {
		if err := soak(ctx, opts, db, plan, srv.url, &res, step); err != nil {
			return res, fmt.Errorf("soak: %w", err)
		}
		if opts.PrunePass > 0 {
			if err := prunePasses(ctx, opts, db, plan, api, &res, step); err != nil {
				return res, err
			}
		}
	}
	step("ready in %v; publishing %d events (%s) for %d deliveries", time.Since(began).Round(time.Millisecond), opts.Events, res.Mode(), plan.expected)

	if opts.CPUProfile != nil {
		if err := pprof.StartCPUProfile(opts.CPUProfile); err != nil {
			return res, fmt.Errorf("cpu profile: %w", err)
		}
	}
	if opts.Warmup > 0 {
		step("warming up: %d events", opts.Warmup)
		if _, err := publish(ctx, api, plan, opts, plan.events, plan.events+plan.warmup, &requestTimes{}); err != nil {
			return res, fmt.Errorf("warm-up: %w", err)
		}
		if rcv.waitWarm(ctx, opts.StallTimeout, opts.Timeout) {
			return res, errors.New("warm-up: its deliveries did not all arrive")
		}
	}
	step("measuring")
	if opts.MemProfile != nil {
		runtime.MemProfileRate = 4096
	}
	cpu := &cpuMeter{pids: srv.pids, db: db}
	cpu.start(ctx)
	times := &requestTimes{}
	var series *sampler
	stopSampling := func() {}
	if opts.Series != "" {
		series = &sampler{every: opts.SampleEvery, db: db, rcv: rcv, times: times, start: time.Now()}
		sctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { series.run(sctx); close(done) }()
		stopSampling = func() { cancel(); <-done }
	}
	defer stopSampling()
	pub, err := publish(ctx, api, plan, opts, 0, plan.events, times)
	if err != nil {
		if opts.CPUProfile != nil {
			pprof.StopCPUProfile()
		}
		return res, err
	}
	res.PublishStart, res.PublishDuration = pub.start, pub.duration
	res.PublishLatency = percentiles(pub.requests)
	step("published in %v; waiting for deliveries", pub.duration.Round(time.Millisecond))

	res.Stalled = rcv.wait(ctx, opts.StallTimeout, opts.Timeout, func(got int) {
		step("%d/%d delivered", got, plan.expected)
	})
	cpu.stop(ctx, &res)
	if series != nil {
		stopSampling()
		res.Samples = series.samples
		if err := errors.Join(append(series.errs, series.write(opts.Series, res.Mode()))...); err != nil {
			return res, fmt.Errorf("series: %w", err)
		}
	}
	if opts.CPUProfile != nil {
		pprof.StopCPUProfile()
	}
	if opts.MemProfile != nil {
		runtime.GC() // the profile shows allocations up to the last GC
		// Written at the rate it sampled with: pprof scales the samples
		// by the rate in the profile's header.
		err := pprof.Lookup("allocs").WriteTo(opts.MemProfile, 0)
		runtime.MemProfileRate = 0
		if err != nil {
			return res, fmt.Errorf("memory profile: %w", err)
		}
	}
	res.PeakRSS, res.RSSScope = srv.peakRSS()
	rcv.fill(&res)
	if dead != nil {
		res.NoisyAttempts, res.NoisyHanging = dead.requests.Load(), dead.hanging.Load()
	}
	return res, nil
}

// soakPartitionDays is how many days of partitions a soak of n deliveries
// fills (its history spans soakSpan, and a day more for the day it
// starts in; 0 without a soak).
func soakPartitionDays(n int) int {
	if n <= 0 {
		return 0
	}
	return int(soakSpan/(24*time.Hour)) + 1
}
