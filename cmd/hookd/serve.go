package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hookd/hookd/internal/app"
	"github.com/hookd/hookd/internal/cliflag"
	"github.com/hookd/hookd/internal/destination"
	"github.com/hookd/hookd/internal/egress"
	"github.com/hookd/hookd/internal/gctune"
	"github.com/hookd/hookd/internal/httpapi"
	"github.com/hookd/hookd/internal/ops"
	"github.com/hookd/hookd/internal/tracing"
	"github.com/hookd/hookd/internal/version"
)

// defaultGCHeapFloor is --gc-heap-floor's default, in MiB. Publishing,
// hookd serve keeps about 10 MB live and collected at 20; with the heap
// let grow to 32 MiB first its CPU per single publish fell by a sixth, and
// a process delivering a million (20 MB or more live) kept the peak RSS it
// had (docs/notes/performance-history.md).
const defaultGCHeapFloor = 32

// maxGCHeapFloor bounds --gc-heap-floor (64 GiB): a typo must not become
// a collector that never runs.
const maxGCHeapFloor = 64 << 10

// gcHeapFloorFlag registers --gc-heap-floor on fs.
func gcHeapFloorFlag(fs *flag.FlagSet) *string {
	return fs.String("gc-heap-floor", envOr("HOOKD_GC_HEAP_FLOOR", strconv.Itoa(defaultGCHeapFloor)), "MiB the Go heap may grow to before a garbage collection while little of it is live (docs/performance.md); 0: Go's own pacing (GOGC) alone (env HOOKD_GC_HEAP_FLOOR)")
}

// flagSet says whether the command line set the flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// gcHeapFloor is the heap floor in bytes that fs's --gc-heap-floor, whose
// value is v, asks for. An operator who set GOGC chose the collector's
// pacing: then only a floor given explicitly (the flag, or its variable)
// applies.
func gcHeapFloor(fs *flag.FlagSet, v string) (uint64, error) {
	mib, err := strconv.Atoi(v)
	if err != nil || mib < 0 || mib > maxGCHeapFloor {
		return 0, fmt.Errorf("--gc-heap-floor %q: a whole number of MiB up to %d (default %d), or 0 for Go's own pacing", v, maxGCHeapFloor, defaultGCHeapFloor)
	}
	if os.Getenv("GOGC") != "" && os.Getenv("HOOKD_GC_HEAP_FLOOR") == "" && !flagSet(fs, "gc-heap-floor") {
		return 0, nil
	}
	return uint64(mib) << 20, nil
}

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := cliflag.New("serve", "hookd serve [flags]", "Runs the admin/publish API and the delivery workers (--role splits them).")
	var f dbFlags
	f.register(fs.FlagSet)
	addr := fs.String("addr", envOr("HOOKD_ADDR", "127.0.0.1:8080"), "listen address (env HOOKD_ADDR)")
	role := fs.String("role", envOr("HOOKD_ROLE", "all"), "all (API and workers), api (API only) or worker (deliveries only) (env HOOKD_ROLE)")
	allow := fs.String("egress-allow", os.Getenv("HOOKD_EGRESS_ALLOW"), "CIDR[,CIDR…] the egress guard lets through, e.g. 127.0.0.1/32 for a local receiver (env HOOKD_EGRESS_ALLOW)")
	proxy := fs.String("egress-proxy", os.Getenv("HOOKD_EGRESS_PROXY"), "send every delivery through this HTTP CONNECT proxy, e.g. http://proxy:3128, so receivers can allow-list its address; hookd still checks each receiver's address (env HOOKD_EGRESS_PROXY)")
	userAgent := fs.String("user-agent", envOr("HOOKD_USER_AGENT", ""), "User-Agent of every delivery (default hookd/<version>) (env HOOKD_USER_AGENT)")
	frameOrigins := fs.String("portal-frame-origins", os.Getenv("HOOKD_PORTAL_FRAME_ORIGINS"), "origins that may frame every owner's portal, comma-separated, e.g. https://app.example.com; none: the portal cannot be framed (env HOOKD_PORTAL_FRAME_ORIGINS)")
	catalog := fs.String("catalog", os.Getenv("HOOKD_CATALOG"), "event-type catalogs to offer every owner, comma-separated: a built-in name (standmeet: the standard profile's 39 types) or a YAML/JSON file (env HOOKD_CATALOG)")
	workers := fs.Int("workers", app.DefaultWorkers, "deliveries in flight at once in this process (the healthy lane)")
	slowWorkers := fs.Int("slow-workers", 0, "deliveries to slow endpoints in flight at once in this process, in a lane of their own (default: --workers)")
	ownerShare := fs.Float64("owner-share", app.DefaultOwnerShare, "the part of the healthy lane's workers (and of the slow lane's, for slow endpoints) one owner may hold; the rest go to the slow lane or wait, spending no attempt (1: no cap)")
	retention := fs.String("retention", envOr("HOOKD_RETENTION", app.DefaultRetention.String()), "keep finished deliveries and events this long, e.g. 720h for 30 days (at least 1m); a pending delivery is never pruned (env HOOKD_RETENTION)")
	partitionInterval := fs.String("partition-interval", envOr("HOOKD_PARTITION_INTERVAL", "24h"), "PostgreSQL: partition the event and delivery tables by time, one partition per interval (at least 1h), so retention drops whole partitions; an older database is converted in place, one-way; 0 leaves the tables as they are (env HOOKD_PARTITION_INTERVAL)")
	auditRetention := fs.String("audit-retention", envOr("HOOKD_AUDIT_RETENTION", app.DefaultAuditRetention.String()), "keep audit records this long, e.g. 8760h (deliveries and events have their own, shorter retention) (env HOOKD_AUDIT_RETENTION)")
	var signin signinFlags
	signin.register(fs.FlagSet)
	slowAfter := fs.Duration("slow-after", app.DefaultSlowAfter, "an endpoint whose attempt took this long (a timeout included) gets its deliveries in the slow lane, until one answers faster")
	shutdown := fs.Duration("shutdown-timeout", 20*time.Second, "how long in-flight deliveries may finish on SIGINT/SIGTERM")
	rescue := fs.Duration("rescue-after", app.DefaultRescueStuckJobsAfter, "hand a dead process's running deliveries to another after this long (> the job timeout)")
	leaseFor := fs.Duration("lease-for", app.DefaultLeaseFor, "how long a dead process's endpoint lease blocks others (> the job timeout)")
	jobTimeout := fs.Duration("job-timeout", app.DefaultJobTimeout, "bound on one delivery attempt")
	httpTimeout := fs.Duration("http-timeout", app.DefaultHTTPTimeout, "HTTP timeout of one delivery (inside the job timeout)")
	profileName := fs.String("default-profile", envOr("HOOKD_DEFAULT_PROFILE", app.DefaultProfile), "profile of owners created implicitly")
	metricsAddr := fs.String("metrics-addr", os.Getenv("HOOKD_METRICS_ADDR"), "serve /metrics (and /healthz, /readyz) on this address of its own, e.g. :9090; empty: /metrics on --addr (env HOOKD_METRICS_ADDR)")
	ownerLabels := fs.Bool("metrics-owner-labels", os.Getenv("HOOKD_METRICS_OWNER_LABELS") == "true", "label the Prometheus counters by owner and endpoint (cardinality grows with them) (env HOOKD_METRICS_OWNER_LABELS=true)")
	noTransformations := fs.Bool("no-transformations", os.Getenv("HOOKD_NO_TRANSFORMATIONS") == "true", "run no endpoint's transformation: their deliveries fail rather than go untransformed, and saving one is refused; filters still apply (env HOOKD_NO_TRANSFORMATIONS=true)")
	dests := fs.String("destinations", envOr("HOOKD_DESTINATIONS", strings.Join(destination.Kinds, ",")), "the destination kinds owners may create or point endpoints at, comma-separated (http covers https); an endpoint of a kind left out that exists keeps delivering (env HOOKD_DESTINATIONS)")
	gcFloorFlag := gcHeapFloorFlag(fs.FlagSet)
	if _, err := fs.Parse(args); err != nil {
		return err
	}
	gcFloor, err := gcHeapFloor(fs.FlagSet, *gcFloorFlag)
	if err != nil {
		return fs.Errorf("%v", err)
	}
	addrSet := flagSet(fs.FlagSet, "addr")
	if *role != "all" && *role != "api" && *role != "worker" {
		return fs.Errorf("--role %q: use all, api or worker", *role)
	}
	log, err := f.logger(stderr)
	if err != nil {
		return err
	}
	cfg, err := f.config(log)
	if err != nil {
		return err
	}
	if cfg.EgressAllow, err = egress.ParseAllow(*allow); err != nil {
		return fs.Errorf("--egress-allow: %v", err)
	}
	if cfg.EgressProxy, err = egress.ParseProxy(*proxy); err != nil {
		return fs.Errorf("--egress-proxy: %v", err)
	}
	cfg.UserAgent = *userAgent
	if *catalog != "" {
		cfg.Catalogs = strings.Split(*catalog, ",")
	}
	cfg.PortalFrameOrigins = ops.SplitOrigins(*frameOrigins)
	cfg.NoTransformations = *noTransformations
	if cfg.Destinations, err = destination.ParseKinds(*dests); err != nil {
		return fs.Errorf("--destinations: %v", err)
	}
	cfg.Work = *role != "api"
	cfg.Workers, cfg.SlowWorkers, cfg.OwnerShare, cfg.SlowAfter = *workers, *slowWorkers, *ownerShare, *slowAfter
	if cfg.Retention, err = time.ParseDuration(*retention); err != nil {
		return fs.Errorf("--retention %q: a duration, e.g. 720h for 30 days", *retention)
	}
	if cfg.PartitionInterval, err = parsePartitionInterval(*partitionInterval); err != nil {
		return fs.Errorf("%v", err)
	}
	cfg.Unpartitioned = cfg.PartitionInterval == 0
	if cfg.AuditRetention, err = time.ParseDuration(*auditRetention); err != nil {
		return fs.Errorf("--audit-retention %q: a duration, e.g. 8760h for a year", *auditRetention)
	}
	if err := signin.apply(&cfg); err != nil {
		return fs.Errorf("%v", err)
	}
	cfg.RescueStuckJobsAfter = *rescue
	cfg.DefaultProfile = *profileName
	cfg.MetricsOwnerLabels = *ownerLabels
	cfg.LeaseFor, cfg.JobTimeout, cfg.HTTPTimeout = *leaseFor, *jobTimeout, *httpTimeout
	if err := cfg.Validate(); err != nil {
		return fs.Errorf("%v", err)
	}

	tp, err := tracing.FromEnv(ctx, version.Get().Version)
	if err != nil {
		return err
	}
	if tp != nil {
		cfg.TracerProvider = tp
		defer func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := tp.Shutdown(sctx); err != nil {
				log.Warn("flushing traces failed", "error", err)
			}
		}()
	}

	// The collector's heap floor (internal/gctune): this process owns its
	// runtime, which a library user's does not.
	defer gctune.Start(gcFloor).Stop()
	h, err := app.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer closing(&err, h)
	if err := h.Start(ctx); err != nil {
		return err
	}

	var servers []*http.Server
	errc := make(chan error, 2)
	api := http.NewServeMux()
	api.Handle("/", h.Handler())
	if *metricsAddr != "" {
		msrv, ln, err := listen(*metricsAddr, probesMux(h, log), errc)
		if err != nil {
			return err
		}
		servers = append(servers, msrv)
		fmt.Fprintf(stdout, "hookd metrics on http://%s/metrics\n", ln.Addr())
	} else {
		api.Handle("GET /metrics", h.MetricsHandler())
	}
	if *role != "worker" || addrSet {
		srv, ln, err := listen(*addr, api, errc)
		if err != nil {
			return err
		}
		servers = append(servers, srv)
		fmt.Fprintf(stdout, "hookd listening on http://%s (role %s, %s)\n", ln.Addr(), *role, h.Engine())
	} else {
		fmt.Fprintf(stdout, "hookd worker running (%s)\n", h.Engine())
	}
	log.Info("hookd started", "role", *role, "engine", h.Engine(), "db", redactURL(f.db), "version", version.Get().Version, "tracing", tp != nil)

	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	log.Info("shutting down: no new deliveries are fetched; in-flight ones may finish", "deadline", *shutdown)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), *shutdown)
	defer cancel()
	for _, srv := range servers {
		if err := srv.Shutdown(sctx); err != nil {
			// Past the deadline: the requests still open end when hookd
			// exits; say so and stop the rest.
			log.Warn("shutting down a listener", "addr", srv.Addr, "error", err)
		}
	}
	if err := h.Stop(sctx); err != nil {
		log.Warn("stop", "error", err)
	}
	log.Info("hookd stopped")
	return nil
}

// listen serves handler on addr in the background; Serve's end goes to errc.
func listen(addr string, handler http.Handler, errc chan<- error) (*http.Server, net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() { errc <- srv.Serve(ln) }()
	return srv, ln, nil
}

// probesMux is the --metrics-addr listener: /metrics and the probes, no
// API (a worker's only listener, usually).
func probesMux(h *app.App, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h.MetricsHandler())
	mux.Handle("GET /healthz", httpapi.Health(h.Engine()))
	mux.Handle("GET /readyz", httpapi.Readiness(h.Ready, log))
	return mux
}

// redactURL hides a database URL's password in logs.
func redactURL(db string) string {
	u, err := url.Parse(db)
	if err != nil || u.User == nil {
		return db
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}
