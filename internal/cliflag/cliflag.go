// Package cliflag is hookd's one command-line convention on top of the
// standard flag package: flags may come before or after positional
// arguments; -h and --help print the usage to stdout and succeed; an
// unknown flag, a bad value or a missing argument is a usage error (exit 2)
// that carries the usage for stderr. Commands parse before they open
// anything, so help and usage errors never touch a database.
package cliflag

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Exit codes of a command.
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
)

// Set is one command's flags, its positional arguments and its usage text.
type Set struct {
	*flag.FlagSet
	// Synopsis is the usage line after "usage: ", e.g. "hookd owner create ID [flags]".
	Synopsis string
	// About says what the command does (one or more lines).
	About string
	// Positional names the required positional arguments, in order.
	Positional []string
}

// New returns an empty Set for the command name.
func New(name, synopsis, about string, positional ...string) *Set {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // Parse's errors are returned, not printed
	fs.Usage = func() {}
	return &Set{FlagSet: fs, Synopsis: synopsis, About: about, Positional: positional}
}

// Usage is the full usage text: synopsis, description and every flag.
func (s *Set) Usage() string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: %s\n", s.Synopsis)
	if s.About != "" {
		fmt.Fprintf(&b, "\n%s\n", strings.TrimRight(s.About, "\n"))
	}
	hasFlags := false
	s.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		b.WriteString("\nflags:\n")
		s.SetOutput(&b)
		s.PrintDefaults()
		s.SetOutput(io.Discard)
	}
	return b.String()
}

// Parse parses args, flags and positional arguments in any order ("--"
// ends the flags), and returns the positional arguments. It returns a
// *Help for -h/--help and a *UsageError for anything the caller must fix
// on the command line, including a positional argument missing or extra.
func (s *Set) Parse(args []string) ([]string, error) {
	var pos []string
	for {
		err := s.FlagSet.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			return nil, &Help{Text: s.Usage()}
		}
		if err != nil {
			return nil, s.Errorf("%v", err)
		}
		rest := s.Args()
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	switch {
	case len(pos) < len(s.Positional):
		return nil, s.Errorf("missing argument %s", strings.Join(s.Positional[len(pos):], " "))
	case len(pos) > len(s.Positional):
		return nil, s.Errorf("unexpected argument %q", pos[len(s.Positional)])
	}
	return pos, nil
}

// Errorf is a usage error of this command: the message and its usage.
func (s *Set) Errorf(format string, a ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, a...), Usage: s.Usage()}
}

// Help is returned by Parse for -h or --help: print Text to stdout, exit 0.
type Help struct{ Text string }

func (h *Help) Error() string { return "help requested" }

// UsageError is a mistake on the command line: print Msg and Usage to
// stderr, exit 2.
type UsageError struct {
	Msg   string
	Usage string
}

func (e *UsageError) Error() string { return e.Msg }

// Report prints what err asks for and returns the exit code: help to
// stdout (0), a usage error with the usage to stderr (2), any other error
// as "prefix: err" to stderr (1); nil is 0.
func Report(err error, prefix string, stdout, stderr io.Writer) int {
	var help *Help
	var usage *UsageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &help):
		fmt.Fprint(stdout, help.Text)
		return ExitOK
	case errors.As(err, &usage):
		fmt.Fprintf(stderr, "%s: %s\n\n%s", prefix, usage.Msg, usage.Usage)
		return ExitUsage
	}
	fmt.Fprintf(stderr, "%s: %v\n", prefix, err)
	return ExitError
}

// Group dispatches a command with subcommands ("hookd apikey create …"):
// it returns the subcommand's name and its arguments, a *Help for -h or
// --help, and a *UsageError for a missing or unknown subcommand. usage is
// the group's usage text (its subcommands).
func Group(args []string, usage string, subs ...string) (string, []string, error) {
	if len(args) == 0 {
		return "", nil, &UsageError{Msg: "missing subcommand: use " + strings.Join(subs, ", "), Usage: usage}
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		return "", nil, &Help{Text: usage}
	}
	for _, sub := range subs {
		if args[0] == sub {
			return sub, args[1:], nil
		}
	}
	return "", nil, &UsageError{Msg: fmt.Sprintf("unknown subcommand %q: use %s", args[0], strings.Join(subs, ", ")), Usage: usage}
}
