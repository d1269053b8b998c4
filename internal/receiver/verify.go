package receiver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/hookd/hookd/internal/cliflag"
	"github.com/hookd/hookd/webhook"
)

// headerFlag collects repeated --header 'Name: value' flags.
type headerFlag struct {
	h http.Header
}

func (f *headerFlag) String() string { return "" }

func (f *headerFlag) Set(s string) error {
	name, value, ok := strings.Cut(s, ":")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return fmt.Errorf("want 'Name: value', got %q", s)
	}
	f.h.Add(name, strings.TrimSpace(value))
	return nil
}

// Verify implements `hookd verify`: it checks one captured request (headers
// from --header, raw body from stdin) and prints the event as indented JSON.
// It returns the exit code: 0 valid (or -h), 1 invalid (reason on stderr),
// 2 usage (with the usage on stderr).
func Verify(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cliflag.Report(verify(args, stdin, stdout), "hookd verify", stdout, stderr)
}

func verify(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := cliflag.New("verify", "hookd verify --secret S [--secret S]... [--profile standard|kwork] [--header 'Name: value']... [--tolerance 300s] < body",
		"Verifies one captured delivery. The body must be the exact bytes received (beware of a trailing newline).")
	secrets := secretFlag(fs.FlagSet)
	profileName := fs.String("profile", "standard", profileUsage)
	tolerance := fs.Duration("tolerance", webhook.DefaultTolerance, "allowed clock difference to the signed timestamp")
	headers := headerFlag{h: http.Header{}}
	fs.Var(&headers, "header", "a request header 'Name: value' (repeat for each)")
	if _, err := fs.Parse(args); err != nil {
		var usage *cliflag.UsageError
		if errors.As(err, &usage) && strings.HasPrefix(usage.Msg, "unexpected argument") {
			usage.Msg += " (the body is read from stdin)"
		}
		return err
	}
	p, err := newProfile(*profileName, *secrets, *tolerance)
	if err != nil {
		return fs.Errorf("%v", err)
	}

	body, err := io.ReadAll(io.LimitReader(stdin, maxBodyBytes+1))
	if err != nil {
		return fmt.Errorf("read body from stdin: %w", err)
	}
	if len(body) > maxBodyBytes {
		return fmt.Errorf("body larger than %d bytes", maxBodyBytes)
	}
	ev, err := p.verifier.Verify(headers.h, body)
	if err != nil {
		return err
	}
	out, err := json.MarshalIndent(ev, "", "  ")
	if err != nil {
		return fmt.Errorf("print event: %w", err)
	}
	if _, err := fmt.Fprintf(stdout, "%s\n", out); err != nil {
		return fmt.Errorf("write stdout: %w", err)
	}
	return nil
}
