// Command shop is a small web shop that tells its integrations about every
// order with a signed order.created webhook, sent by hookd from inside the
// shop: on the shop's database, in the shop's transactions, on the shop's
// River client, with hookd's API and console under /webhooks/.
//
//	go run . --db shop.db --new-admin-key
//	curl -X POST localhost:8090/orders -d '{"sku":"mug","quantity":1,"region":"eu","email":"a@example.com"}'
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

type options struct {
	addr, db, keyFile string
	egressAllow       []netip.Prefix
	newAdminKey       bool
}

func main() {
	var o options
	var allow string
	flag.StringVar(&o.addr, "addr", "127.0.0.1:8090", "listen address")
	flag.StringVar(&o.db, "db", "shop.db", "SQLite file or postgres:// URL")
	flag.StringVar(&o.keyFile, "master-key-file", "shop.key", "file of the key sealing webhook secrets (created if missing)")
	flag.StringVar(&allow, "egress-allow", "", "CIDR[,CIDR…] webhooks may reach besides public addresses, e.g. 127.0.0.1/32 for a local receiver")
	flag.BoolVar(&o.newAdminKey, "new-admin-key", false, "print a new admin API key for /webhooks/ (the console and the API)")
	flag.Parse()
	for _, c := range strings.FieldsFunc(allow, func(r rune) bool { return r == ',' }) {
		p, err := netip.ParsePrefix(strings.TrimSpace(c))
		if err != nil {
			fmt.Fprintf(os.Stderr, "--egress-allow: %v\n", err)
			os.Exit(2)
		}
		o.egressAllow = append(o.egressAllow, p)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, o, os.Stdout, log); err != nil {
		log.Error("shop", "error", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, stdout io.Writer, log *slog.Logger) error {
	key, err := masterKey(o.keyFile)
	if err != nil {
		return err
	}
	db, err := openDatabase(ctx, o.db)
	if err != nil {
		return err
	}
	defer db.close()
	hooks, err := openWebhooks(ctx, db, key, o.egressAllow)
	if err != nil {
		return fmt.Errorf("open webhooks: %w", err)
	}
	defer hooks.Close()
	if err := db.migrate(ctx); err != nil {
		return err
	}
	jobs, err := newJobs(db, hooks, log)
	if err != nil {
		return err
	}
	s := &shop{db: db, jobs: jobs, hooks: hooks, log: log}

	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders", s.createOrder)
	mux.HandleFunc("GET /orders", s.listOrders)
	if err := hooks.Mount(mux, "/webhooks"); err != nil { // hookd's API, MCP, OpenAPI and console
		return err
	}
	if o.newAdminKey {
		k, err := hooks.CreateAPIKey(ctx, owner, "admin")
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "webhooks admin key for owner %q (shown only now): %s\n", owner, k)
	}

	if err := jobs.start(ctx); err != nil {
		return fmt.Errorf("start river: %w", err)
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "shop listening on http://%s\n", ln.Addr())

	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	return jobs.stop(shutdown) // lets deliveries in flight finish
}

// masterKey reads the key sealing webhook secrets, creating it on first
// start. Keep it out of the database: with it, the secrets can be read.
func masterKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		key := make([]byte, 32)
		_, _ = rand.Read(key)
		if err := os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
			return nil, fmt.Errorf("create master key: %w", err)
		}
		return key, nil
	}
	if err != nil {
		return nil, fmt.Errorf("master key: %w", err)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("master key %s: want base64 of 32 bytes", path)
	}
	return key, nil
}
