package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"time"

	"github.com/hookd/hookd/internal/bench"
	"github.com/hookd/hookd/internal/cliflag"
	"github.com/hookd/hookd/internal/gctune"
)

// benchCmd runs one end-to-end measurement (internal/bench) and prints one
// line per figure; it fails when a delivery was lost or a signature bad.
func benchCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := cliflag.New("bench", "hookd bench [flags]", "Measures hookd end to end on a fresh database and prints one line per figure\n(docs/performance.md). It fails when a delivery was lost or a signature bad.")
	var o bench.Options
	fs.StringVar(&o.DB, "db", "sqlite", "sqlite (a temp file) or a postgres:// URL (a fresh schema, dropped afterwards)")
	fs.IntVar(&o.Events, "events", 1000, "events to publish")
	fs.IntVar(&o.Endpoints, "endpoints", 10, "endpoints to create")
	fs.IntVar(&o.Owners, "owners", 0, "owners the endpoints and events are spread over (default min(endpoints, 10); 1 with --publish-only)")
	fs.BoolVar(&o.PublishOnly, "publish-only", false, "create no endpoints: measure publishing alone, to owners without subscribers")
	fs.IntVar(&o.Warmup, "warmup", 0, "events published (the same way) and delivered before the measured run, counted in no figure")
	fs.Float64Var(&o.Rate, "rate", 0, "open loop: publish this many events/s (default: closed loop, as fast as possible)")
	fs.StringVar(&o.Profile, "profile", "standard", "owners' profile: standard or kwork")
	fs.StringVar(&o.Destination, "destination", "", "point the endpoints at a broker instead of the HTTP receiver: amqp, nats, redis (this machine's, on their usual ports) or kafka (in-process kfake); a consumer verifies and counts every message")
	fs.DurationVar(&o.ReceiverDelay, "receiver-delay", 0, "the receiver answers 200 after this long")
	fs.IntVar(&o.Noisy, "noisy", 0, "add another owner with this many endpoints that never answer (each attempt waits out the 10 s timeout), to measure the others beside an outage")
	fs.DurationVar(&o.NoisyDelay, "noisy-delay", 0, "with --noisy: the noisy owner's receiver answers 200 after this long (a slow owner) instead of never (a dead one)")
	fs.IntVar(&o.NoisyEvents, "noisy-events", 0, "events published to the noisy owner's endpoints before the run (default 10 with --noisy)")
	fs.BoolVar(&o.Unpartitioned, "unpartitioned", false, "PostgreSQL: leave hookd's event and delivery tables unpartitioned, as serve --partition-interval 0 does (hookd partitions them by day otherwise)")
	fs.IntVar(&o.Partitions, "partitions", 0, "PostgreSQL: create the time partitions of this many days before now ahead of the run, as a deployment that old has (30: a month's, the default retention)")
	fs.IntVar(&o.Soak, "soak", 0, "fill the database with this many finished deliveries (over the last 25 days) before the run, and time the owner's API and console pages at that size (docs/performance.md, \"At volume\")")
	fs.DurationVar(&o.PrunePass, "prune-pass", 0, "with --soak: after the fill, run two retention passes that each delete this much of the history's oldest end (e.g. 24h), the second beside a publish probe, and print their time, rows, batch times, partitions dropped and I/O (with --unpartitioned on PostgreSQL: the row loop alone)")
	fs.DurationVar(&o.Retention, "retention", 0, "hookd's retention of finished deliveries (default its 30 days); minutes, with --rate and --series, make a steady state in which the window turns over many times")
	fs.StringVar(&o.Series, "series", "", "sample the run (tables' size, deliveries/s, publish p99) into FILE.csv and a chart FILE.svg")
	fs.DurationVar(&o.SampleEvery, "sample-every", 0, "with --series: the interval between samples (default 10s)")
	fs.BoolVar(&o.Spawn, "spawn", false, "run hookd as a child process (hookd serve) instead of in this process")
	fs.StringVar(&o.Executable, "hookd", "", "with --spawn: the hookd binary to serve (default this one), e.g. another build to compare")
	fs.IntVar(&o.Nodes, "nodes", 1, "with --spawn: hookd processes on the one database, the first serving the API and delivering, the others delivering only (serve --role worker)")
	cpuprofile := fs.String("cpuprofile", "", "write a pprof CPU profile of the (in-process) run to this file")
	memprofile := fs.String("memprofile", "", "write a pprof allocation profile of the (in-process) measured run to this file (go tool pprof -sample_index=alloc_objects)")
	fs.IntVar(&o.Workers, "workers", 0, "hookd's deliveries in flight (default hookd's 100)")
	fs.DurationVar(&o.FetchCooldown, "fetch-cooldown", 0, "River fetch cooldown (default hookd's: 2ms PostgreSQL, 10ms SQLite; in-process only)")
	fs.DurationVar(&o.FetchPollInterval, "fetch-poll-interval", 0, "River fetch poll interval (default hookd's: 200ms PostgreSQL, 50ms SQLite; in-process only)")
	fs.DurationVar(&o.BusySnooze, "busy-snooze", 0, "how long a delivery to a busy endpoint waits (default hookd's 2s; in-process only)")
	fs.IntVar(&o.BatchSize, "batch", 1000, "most events per publish request (≤ 1000; 1: each event its own POST /api/v1/events)")
	fs.IntVar(&o.Publishers, "concurrency", 4, "publish requests in flight at once (clients)")
	fs.IntVar(&o.Publishers, "publishers", 4, "the same as --concurrency")
	fs.StringVar(&o.Generator, "generator", "", "how publishes are sent: loop (one thread, epoll, as wrk does; the default for closed loops on Linux), conns (a goroutine a connection; the default otherwise) or net-http (Go's client, to see what a heavier load generator costs)")
	fs.DurationVar(&o.StallTimeout, "stall-timeout", 30*time.Second, "stop waiting when no delivery arrived for this long")
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "bound on the whole wait for deliveries")
	logLevel := fs.String("log-level", "warn", "hookd's log level (to stderr): debug, info, warn or error")
	poll := fs.Bool("poll", false, "measure polling endpoints instead (issue 43): long-poll wake-up latency (on PostgreSQL also from another process), a poll of 100 envelopes, the memory of --poll-idle idle long-polls")
	pollRounds := fs.Int("poll-rounds", 200, "with --poll: wake-ups measured")
	pollIdle := fs.Int("poll-idle", 1000, "with --poll: idle long-polls held at once")
	gcFloorFlag := gcHeapFloorFlag(fs.FlagSet)
	if _, err := fs.Parse(args); err != nil {
		return err
	}
	gcFloor, err := gcHeapFloor(fs.FlagSet, *gcFloorFlag)
	if err != nil {
		return fs.Errorf("%v", err)
	}
	if !o.Spawn {
		// In process, hookd runs as hookd serve runs it (the load
		// generator and receiver share its heap).
		defer gctune.Start(gcFloor).Stop()
	} else if flagSet(fs.FlagSet, "gc-heap-floor") {
		// The child reads it from the environment it inherits: a build
		// from before the flag (--hookd) ignores the variable, where it
		// would refuse the flag.
		if err := os.Setenv("HOOKD_GC_HEAP_FLOOR", *gcFloorFlag); err != nil {
			return err
		}
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*logLevel)); err != nil {
		return fs.Errorf("--log-level %q: use debug, info, warn or error", *logLevel)
	}
	o.Log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	o.Progress = stderr
	if *poll {
		res, err := bench.RunPoll(ctx, bench.PollOptions{DB: o.DB, Rounds: *pollRounds, Idle: *pollIdle, Log: o.Log, Progress: stderr})
		if err != nil {
			return err
		}
		_, err = res.WriteTo(stdout)
		return err
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		defer closing(&err, f)
		o.CPUProfile = f
	}
	if *memprofile != "" {
		runtime.MemProfileRate = 0 // Run samples the measured run alone
		f, err := os.Create(*memprofile)
		if err != nil {
			return err
		}
		defer closing(&err, f)
		o.MemProfile = f
	}
	res, err := bench.Run(ctx, o)
	if err != nil {
		return err
	}
	if _, err := res.WriteTo(stdout); err != nil {
		return err
	}
	if !res.OK() {
		return fmt.Errorf("incorrect run: %d lost, %d bad signatures", res.Lost, res.BadSignatures)
	}
	return nil
}
