package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hookd/hookd/internal/version"
)

// versionCmd prints the module version and VCS revision from the build info.
func versionCmd(stdout io.Writer) error {
	_, err := fmt.Fprintln(stdout, version.Get())
	return err
}

// healthcheck GETs a hookd's /healthz (or /readyz) and exits 0 on 200: the
// container image's HEALTHCHECK, which has no curl.
func healthcheck(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	def := "http://" + strings.Replace(envOr("HOOKD_ADDR", "127.0.0.1:8080"), "0.0.0.0", "127.0.0.1", 1) + "/healthz"
	target := fs.String("url", envOr("HOOKD_HEALTHCHECK_URL", def), "URL to GET (env HOOKD_HEALTHCHECK_URL)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if strings.HasPrefix(*target, "http://:") {
		*target = "http://127.0.0.1:" + strings.TrimPrefix(*target, "http://:")
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *target, nil)
	if err != nil {
		return fmt.Errorf("--url %q: %w", *target, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close() //nolint:errcheck // closing a response body reports nothing the caller can act on
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	fmt.Fprintf(stdout, "%s %s", resp.Status, body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", *target, resp.Status)
	}
	return nil
}
