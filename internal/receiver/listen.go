package receiver

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/hookd/hookd/webhook"
)

const (
	// maxBodyBytes caps a request body; deliveries are far smaller.
	maxBodyBytes = 10 << 20
	// shutdownGrace bounds how long in-flight requests may finish after ctx ends.
	shutdownGrace = 5 * time.Second
)

type listenConfig struct {
	addr    string
	path    string
	profile profile
}

func parseListenFlags(args []string, stderr io.Writer) (listenConfig, error) {
	fs := flag.NewFlagSet("listen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: hookd listen --secret S [--secret S]... [--profile standard|kwork] [--addr 127.0.0.1:9000] [--path /] [--tolerance 300s]")
		fmt.Fprintln(stderr, "Receives webhooks locally, verifies each POST and prints it.")
		fs.PrintDefaults()
	}
	addr := fs.String("addr", "127.0.0.1:9000", "address to listen on (port 0 picks a free one)")
	secrets := secretFlag(fs)
	profileName := fs.String("profile", "standard", profileUsage)
	path := fs.String("path", "/", "URL path to accept; / accepts every path")
	tolerance := fs.Duration("tolerance", webhook.DefaultTolerance, "allowed clock difference to the signed timestamp")
	if err := fs.Parse(args); err != nil {
		return listenConfig{}, err
	}
	if fs.NArg() > 0 {
		return listenConfig{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if len(*path) == 0 || (*path)[0] != '/' {
		return listenConfig{}, fmt.Errorf("--path %q: must start with /", *path)
	}
	p, err := newProfile(*profileName, *secrets, *tolerance)
	if err != nil {
		return listenConfig{}, err
	}
	return listenConfig{addr: *addr, path: *path, profile: p}, nil
}

// Listen implements `hookd listen`: it serves HTTP on --addr, verifies every
// POST to --path with the chosen profile, prints each delivery (or the reason
// it was rejected) to stdout, and answers 204 (401 for a bad signature). It
// prints the address it listens on first and returns nil once ctx is done
// and in-flight requests have finished.
func Listen(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseListenFlags(args, stderr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	out := newPrinter(stdout)
	srv := &http.Server{
		Handler:           &receiver{path: cfg.path, profile: cfg.profile, out: out, now: time.Now},
		ReadHeaderTimeout: 10 * time.Second,
	}
	out.write(fmt.Appendf(nil, "listening on http://%s%s (profile %s, Ctrl-C to stop)\n\n", ln.Addr(), cfg.path, cfg.profile.name))

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("listen: serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("listen: shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("listen: serve %s: %w", ln.Addr(), err)
	}
	return nil
}

// receiver is the HTTP handler behind Listen.
type receiver struct {
	path    string
	profile profile
	out     *printer
	now     func() time.Time
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if rc.path != "/" && r.URL.Path != rc.path {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "hookd listen: webhooks are POSTed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		status := http.StatusBadRequest
		if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
			status = http.StatusRequestEntityTooLarge
		}
		rc.reject(w, status, fmt.Errorf("read body: %w", err))
		return
	}
	ev, err := rc.profile.verifier.Verify(r.Header, body)
	if err != nil {
		status := http.StatusUnauthorized
		if errors.Is(err, webhook.ErrMalformedBody) {
			status = http.StatusBadRequest
		}
		rc.reject(w, status, err)
		return
	}
	rc.out.accepted(rc.now(), ev, r.Header.Get(rc.profile.deliveryHeader), body)
	w.WriteHeader(http.StatusNoContent)
}

func (rc *receiver) reject(w http.ResponseWriter, status int, reason error) {
	rc.out.rejected(rc.now(), reason)
	http.Error(w, reason.Error(), status)
}
