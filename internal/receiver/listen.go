package receiver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/hookd/hookd/internal/cliflag"
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
	forward *forwardConfig // nil: plain listen with --secret
	poll    bool           // --poll: forward names hookd; nothing listens
}

const listenAbout = `Receives webhooks locally, verifies each POST and prints it: the time, the
event type, the delivery id, then the body. It answers 204 (401 for a bad
signature, printed as rejected).

With --secret it checks deliveries to an endpoint you created. With --forward
it creates that endpoint itself through hookd's admin API (--url, --key,
--types), learns its secret from the answer, and deletes it on exit (Ctrl-C).
hookd refuses loopback addresses unless started with --egress-allow
127.0.0.1/32.

With --poll it opens no port at all: it creates a polling endpoint (--url,
--key, --types), long-polls it, verifies and prints each message and
acknowledges it, and deletes the endpoint on exit. For a laptop, or a
machine hookd cannot reach.`

func parseListenFlags(args []string) (listenConfig, error) {
	fs := cliflag.New("listen", "hookd listen (--secret S | --forward --key KEY [--types GLOBS]) [flags]", listenAbout)
	addr := fs.String("addr", "127.0.0.1:9000", "address to listen on (port 0 picks a free one)")
	secrets := secretFlag(fs.FlagSet)
	profileName := fs.String("profile", "", profileUsage+"; default standard, with --forward or --poll whichever the delivery's headers use")
	path := fs.String("path", "/", "URL path to accept; / accepts every path")
	tolerance := fs.Duration("tolerance", webhook.DefaultTolerance, "allowed clock difference to the signed timestamp")
	var fw forwardConfig
	forward := fs.Bool("forward", false, "create an endpoint pointing here, for as long as this runs")
	poll := fs.Bool("poll", false, "create a polling endpoint and poll it, for as long as this runs: no inbound port")
	fs.StringVar(&fw.hookdURL, "url", envOr("HOOKD_URL", "http://127.0.0.1:8080"), "with --forward or --poll: hookd's address (env HOOKD_URL)")
	fs.StringVar(&fw.key, "key", os.Getenv("HOOKD_API_KEY"), "with --forward or --poll: an admin API key (env HOOKD_API_KEY)")
	fs.StringVar(&fw.owner, "owner", "", "with --forward or --poll and an operator key: the owner to act on")
	types := fs.String("types", "*", "with --forward or --poll: comma-separated event-type globs the endpoint subscribes to")
	if _, err := fs.Parse(args); err != nil {
		return listenConfig{}, err
	}
	if len(*path) == 0 || (*path)[0] != '/' {
		return listenConfig{}, fs.Errorf("--path %q: must start with /", *path)
	}
	cfg := listenConfig{addr: *addr, path: *path, poll: *poll}
	if *poll && *forward {
		return listenConfig{}, fs.Errorf("--poll and --forward exclude each other: --poll needs no inbound port, --forward points hookd at one")
	}
	if *forward || *poll {
		mode := "--forward"
		if *poll {
			mode = "--poll"
		}
		if len(*secrets) > 0 {
			return listenConfig{}, fs.Errorf("--secret and %s exclude each other: %s learns the secret from hookd", mode, mode)
		}
		if fw.key == "" {
			return listenConfig{}, fs.Errorf("%s needs --key (or HOOKD_API_KEY): an admin key of the owner whose events to receive", mode)
		}
		for _, t := range strings.Split(*types, ",") {
			if t = strings.TrimSpace(t); t != "" {
				fw.types = append(fw.types, t)
			}
		}
		if len(fw.types) == 0 {
			return listenConfig{}, fs.Errorf("--types is empty: name the event types to receive, e.g. 'invoice.*'")
		}
		fw.profile, fw.tolerance = *profileName, *tolerance
		if fw.profile != "" && fw.profile != "standard" && fw.profile != "kwork" {
			return listenConfig{}, fs.Errorf("--profile %q: want standard or kwork", fw.profile)
		}
		cfg.forward = &fw
		return cfg, nil
	}
	if *profileName == "" {
		*profileName = "standard"
	}
	p, err := newProfile(*profileName, *secrets, *tolerance)
	if err != nil {
		return listenConfig{}, fs.Errorf("%v (or use --forward to create an endpoint and learn its secret)", err)
	}
	cfg.profile = p
	return cfg, nil
}

// Listen implements `hookd listen`: it serves HTTP on --addr, verifies every
// POST to --path with the chosen profile, prints each delivery (or the reason
// it was rejected) to stdout, and answers 204 (401 for a bad signature). It
// prints the address it listens on first and returns nil once ctx is done
// and in-flight requests have finished. With --forward it first creates
// the endpoint that points at it, and deletes it before returning.
func Listen(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseListenFlags(args)
	if err != nil {
		return err
	}
	if cfg.poll {
		return listenPoll(ctx, cfg.forward, stdout, stderr)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer ln.Close() //nolint:errcheck // Shutdown below closes it first; this only covers the early returns
	out := newPrinter(stdout)
	url := "http://" + ln.Addr().String() + cfg.path
	if cfg.forward != nil {
		fw, err := cfg.forward.start(ctx, url)
		if err != nil {
			return err
		}
		defer func() {
			if err := fw.stop(context.WithoutCancel(ctx)); err != nil {
				fmt.Fprintf(stderr, "hookd listen: %v\n", err)
				return
			}
			out.write(fmt.Appendf(nil, "deleted endpoint %s\n", fw.endpointID))
		}()
		cfg.profile = fw.profile
		out.write(fmt.Appendf(nil, "endpoint %s at %s receives %s (deleted when this stops)\n", fw.endpointID, cfg.forward.hookdURL, strings.Join(cfg.forward.types, ", ")))
	}
	srv := &http.Server{
		Handler:           &receiver{path: cfg.path, profile: cfg.profile, out: out, now: time.Now},
		ReadHeaderTimeout: 10 * time.Second,
	}
	out.write(fmt.Appendf(nil, "listening on %s (profile %s, Ctrl-C to stop)\n\n", url, cfg.profile.name))

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

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
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
	deliveryID := r.Header.Get(rc.profile.deliveryHeader)
	if deliveryID == "" { // --forward checks either scheme
		deliveryID = r.Header.Get(webhook.HeaderKworkDelivery)
	}
	rc.out.accepted(rc.now(), ev, deliveryID, body)
	w.WriteHeader(http.StatusNoContent)
}

func (rc *receiver) reject(w http.ResponseWriter, status int, reason error) {
	rc.out.rejected(rc.now(), reason)
	http.Error(w, reason.Error(), status)
}
