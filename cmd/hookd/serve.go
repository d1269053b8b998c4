package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/hookd/hookd"
	"github.com/hookd/hookd/internal/cliflag"
	"github.com/hookd/hookd/internal/egress"
	"github.com/hookd/hookd/internal/parts"
)

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cliflag.New("serve", "hookd serve [flags]", "Runs the admin/publish API and the delivery workers (--role splits them).")
	var f dbFlags
	f.register(fs.FlagSet)
	addr := fs.String("addr", envOr("HOOKD_ADDR", "127.0.0.1:8080"), "listen address (env HOOKD_ADDR)")
	role := fs.String("role", envOr("HOOKD_ROLE", "all"), "all (API and workers), api (API only) or worker (deliveries only) (env HOOKD_ROLE)")
	allow := fs.String("egress-allow", os.Getenv("HOOKD_EGRESS_ALLOW"), "CIDR[,CIDR…] the egress guard lets through, e.g. 127.0.0.1/32 for a local receiver (env HOOKD_EGRESS_ALLOW)")
	catalog := fs.String("catalog", os.Getenv("HOOKD_CATALOG"), "event-type catalogs to offer every owner, comma-separated: a built-in name (standmeet: seed 000's 39 types) or a YAML/JSON file (env HOOKD_CATALOG)")
	workers := fs.Int("workers", hookd.DefaultWorkers, "deliveries in flight at once in this process")
	shutdown := fs.Duration("shutdown-timeout", 20*time.Second, "how long in-flight deliveries may finish on SIGINT/SIGTERM")
	rescue := fs.Duration("rescue-after", hookd.DefaultRescueStuckJobsAfter, "hand a dead process's running deliveries to another after this long (> the job timeout)")
	leaseFor := fs.Duration("lease-for", hookd.DefaultLeaseFor, "how long a dead process's endpoint lease blocks others (> the job timeout)")
	jobTimeout := fs.Duration("job-timeout", hookd.DefaultJobTimeout, "bound on one delivery attempt")
	httpTimeout := fs.Duration("http-timeout", hookd.DefaultHTTPTimeout, "HTTP timeout of one delivery (inside the job timeout)")
	profileName := fs.String("default-profile", envOr("HOOKD_DEFAULT_PROFILE", hookd.DefaultProfile), "profile of owners created implicitly")
	if _, err := fs.Parse(args); err != nil {
		return err
	}
	addrSet := false
	fs.Visit(func(fl *flag.Flag) { addrSet = addrSet || fl.Name == "addr" })
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
	if *catalog != "" {
		cfg.Catalogs = strings.Split(*catalog, ",")
	}
	cfg.Work = *role != "api"
	cfg.Workers = *workers
	cfg.RescueStuckJobsAfter = *rescue
	cfg.DefaultProfile = *profileName
	cfg.LeaseFor, cfg.JobTimeout, cfg.HTTPTimeout = *leaseFor, *jobTimeout, *httpTimeout
	if err := cfg.Validate(); err != nil {
		return fs.Errorf("%v", err)
	}

	h, err := hookd.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer h.Close()
	engine := parts.Of(h).DB.Engine
	if err := h.Start(ctx); err != nil {
		return err
	}

	var srv *http.Server
	errc := make(chan error, 1)
	if *role != "worker" || addrSet {
		ln, err := net.Listen("tcp", *addr)
		if err != nil {
			return fmt.Errorf("listen %s: %w", *addr, err)
		}
		srv = &http.Server{Handler: h.Handler(), ReadHeaderTimeout: 10 * time.Second}
		go func() { errc <- srv.Serve(ln) }()
		fmt.Fprintf(stdout, "hookd listening on http://%s (role %s, %s)\n", ln.Addr(), *role, engine)
	} else {
		fmt.Fprintf(stdout, "hookd worker running (%s)\n", engine)
	}
	log.Info("hookd started", "role", *role, "engine", engine, "db", f.db)

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
	if srv != nil {
		_ = srv.Shutdown(sctx)
	}
	if err := h.Stop(sctx); err != nil {
		log.Warn("stop", "err", err)
	}
	log.Info("hookd stopped")
	return nil
}
