package receiver

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/hookd/hookd/webhook"
)

// Exit codes of Verify.
const (
	exitOK      = 0
	exitInvalid = 1
	exitUsage   = 2
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
// It returns the exit code: 0 valid, 1 invalid (reason on stderr), 2 usage.
func Verify(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: hookd verify --secret S [--secret S]... [--profile standard|kwork] [--header 'Name: value']... [--tolerance 300s] < body")
		fmt.Fprintln(stderr, "Verifies one captured delivery. The body must be the exact bytes received (beware of a trailing newline).")
		fs.PrintDefaults()
	}
	secrets := secretFlag(fs)
	profileName := fs.String("profile", "standard", profileUsage)
	tolerance := fs.Duration("tolerance", webhook.DefaultTolerance, "allowed clock difference to the signed timestamp")
	headers := headerFlag{h: http.Header{}}
	fs.Var(&headers, "header", "a request header 'Name: value' (repeat for each)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "verify: unexpected argument %q (the body is read from stdin)\n", fs.Arg(0))
		return exitUsage
	}
	p, err := newProfile(*profileName, *secrets, *tolerance)
	if err != nil {
		fmt.Fprintf(stderr, "verify: %v\n", err)
		return exitUsage
	}

	body, err := io.ReadAll(io.LimitReader(stdin, maxBodyBytes+1))
	if err != nil {
		fmt.Fprintf(stderr, "verify: read body from stdin: %v\n", err)
		return exitInvalid
	}
	if len(body) > maxBodyBytes {
		fmt.Fprintf(stderr, "verify: body larger than %d bytes\n", maxBodyBytes)
		return exitInvalid
	}
	ev, err := p.verifier.Verify(headers.h, body)
	if err != nil {
		fmt.Fprintf(stderr, "verify: %v\n", err)
		return exitInvalid
	}
	out, err := json.MarshalIndent(ev, "", "  ")
	if err != nil {
		fmt.Fprintf(stderr, "verify: print event: %v\n", err)
		return exitInvalid
	}
	if _, err := fmt.Fprintf(stdout, "%s\n", out); err != nil {
		fmt.Fprintf(stderr, "verify: write stdout: %v\n", err)
		return exitInvalid
	}
	return exitOK
}
