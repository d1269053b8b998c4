package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// commands is every command and subcommand of the binary, and how each
// takes no arguments: "usage" when it needs one (exit 2, usage on
// stderr), "runs" when it does its job with defaults (exit 0), or ""
// when running it means serving or measuring (not run here).
var commands = []struct {
	args   []string
	noArgs string
}{
	{[]string{"serve"}, ""},
	{[]string{"migrate"}, "runs"},
	{[]string{"migrate", "up"}, "runs"},
	{[]string{"migrate", "status"}, "runs"},
	{[]string{"backup"}, "usage"},
	{[]string{"restore"}, "usage"},
	{[]string{"apikey"}, "usage"},
	{[]string{"apikey", "create"}, "usage"},
	{[]string{"apikey", "list"}, "runs"},
	{[]string{"apikey", "revoke"}, "usage"},
	{[]string{"owner"}, "usage"},
	{[]string{"owner", "create"}, "usage"},
	{[]string{"catalog"}, "usage"},
	{[]string{"catalog", "list"}, "runs"},
	{[]string{"catalog", "remove"}, "usage"},
	{[]string{"listen"}, "usage"},
	{[]string{"verify"}, "usage"},
	{[]string{"mcp"}, "runs"},
	{[]string{"bench"}, ""},
}

// TestCommandLineConvention runs every command and subcommand with -h,
// --help, an unknown flag and no arguments, in an empty directory: help
// goes to stdout and exits 0 without creating a database; an unknown flag
// exits 2 with the usage on stderr; so does a missing argument.
func TestCommandLineConvention(t *testing.T) {
	// Not parallel: t.Chdir and t.Setenv (run reads HOOKD_* from the process environment).
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("HOOKD_DATABASE", "")
	t.Setenv("HOOKD_MASTER_KEY", "")
	t.Setenv("HOOKD_API_KEY", "")
	runIn := func(args []string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	created := func() []string {
		es, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		return names
	}
	for _, c := range commands {
		name := strings.Join(c.args, " ")
		synopsis := "usage: hookd " + name
		for _, help := range []string{"-h", "--help"} {
			code, stdout, stderr := runIn(append(append([]string{}, c.args...), help))
			if code != 0 || !strings.HasPrefix(stdout, synopsis) || stderr != "" {
				t.Errorf("hookd %s %s: exit %d, stdout %q, stderr %q; want 0 and the usage (%q…) on stdout only", name, help, code, stdout, stderr, synopsis)
			}
		}
		if files := created(); len(files) > 0 {
			t.Fatalf("hookd %s -h created %v: help must come before opening anything", name, files)
		}
		code, stdout, stderr := runIn(append(append([]string{}, c.args...), "--no-such-flag"))
		if len(c.args) == 1 && (c.args[0] == "apikey" || c.args[0] == "owner" || c.args[0] == "catalog") {
			// A group takes a subcommand first: the flag is an unknown subcommand.
			if code != 2 || stdout != "" || !strings.Contains(stderr, `unknown subcommand "--no-such-flag"`) || !strings.Contains(stderr, synopsis) {
				t.Errorf("hookd %s --no-such-flag: exit %d, stdout %q, stderr %q; want 2, the subcommands on stderr", name, code, stdout, stderr)
			}
		} else if code != 2 || stdout != "" || !strings.Contains(stderr, "flag provided but not defined: -no-such-flag") || !strings.Contains(stderr, synopsis) {
			t.Errorf("hookd %s --no-such-flag: exit %d, stdout %q, stderr %q; want 2, the error and the usage on stderr", name, code, stdout, stderr)
		}
		if files := created(); len(files) > 0 {
			t.Fatalf("hookd %s --no-such-flag created %v", name, files)
		}
		switch c.noArgs {
		case "usage":
			code, stdout, stderr := runIn(c.args)
			if code != 2 || stdout != "" || !strings.Contains(stderr, synopsis) || !strings.Contains(stderr, "missing") && !strings.Contains(stderr, "required") {
				t.Errorf("hookd %s: exit %d, stdout %q, stderr %q; want 2, what is missing and the usage on stderr", name, code, stdout, stderr)
			}
			if files := created(); len(files) > 0 {
				t.Fatalf("hookd %s with a missing argument created %v", name, files)
			}
		case "runs":
			code, _, stderr := runIn(append(append([]string{}, c.args...), "--db", filepath.Join(t.TempDir(), "hookd.db")))
			if code != 0 {
				t.Errorf("hookd %s: exit %d (stderr %q), want 0: it needs no argument", name, code, stderr)
			}
		}
	}
	if code, stdout, _ := runIn([]string{"--help"}); code != 0 || !strings.Contains(stdout, "commands:") {
		t.Errorf("hookd --help: exit %d, stdout %q", code, stdout)
	}
	if code, _, stderr := runIn(nil); code != 2 || !strings.Contains(stderr, "commands:") {
		t.Errorf("hookd: exit %d, stderr %q; want 2 and the commands on stderr", code, stderr)
	}
	if code, _, stderr := runIn([]string{"frobnicate"}); code != 2 || !strings.Contains(stderr, `unknown command "frobnicate"`) {
		t.Errorf("hookd frobnicate: exit %d, stderr %q", code, stderr)
	}
}

// TestFlagsAfterArguments: flags may follow the positional arguments, as
// the README writes `hookd owner create ID --profile kwork --attr …`, and a
// kwork owner missing its attributes hears of all of them at once.
func TestFlagsAfterArguments(t *testing.T) {
	// Not parallel: t.Setenv (run reads HOOKD_MASTER_KEY from the process environment).
	db := filepath.Join(t.TempDir(), "hookd.db")
	t.Setenv("HOOKD_MASTER_KEY", "")
	runIn := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	code, _, stderr := runIn("owner", "create", "shop", "--db", db, "--profile", "kwork")
	for _, want := range []string{"app (required", "environment (required: test or live)"} {
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("kwork owner without attributes: exit %d, stderr %q; want 1 naming %q", code, stderr, want)
		}
	}
	code, _, stderr = runIn("owner", "create", "shop", "--db", db, "--profile", "kwork", "--attr", "environment=prod")
	if code != 1 || !strings.Contains(stderr, "app (required") || !strings.Contains(stderr, `environment "prod" (must be test or live)`) {
		t.Errorf("kwork owner with a bad environment: exit %d, stderr %q", code, stderr)
	}
	code, stdout, stderr := runIn("owner", "create", "shop", "--db", db, "--profile", "kwork", "--attr", "app=app_1", "--attr", "environment=test")
	if code != 0 || !strings.Contains(stdout, "created owner shop (profile kwork)") {
		t.Fatalf("owner create with flags after the id: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = runIn("apikey", "create", "--db", db, "--owner", "shop")
	if code != 0 {
		t.Fatalf("apikey create: exit %d, %s", code, stderr)
	}
	keyID := strings.Fields(stdout)[3]
	if code, _, stderr := runIn("apikey", "create", "--db", db, "--role", "operator"); code != 0 {
		t.Fatalf("apikey create --role operator: exit %d, %s", code, stderr)
	}
	code, stdout, _ = runIn("apikey", "list", "--db", db)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "ID ") || !strings.Contains(stdout, keyID) || !strings.Contains(lines[2], "operator") {
		t.Fatalf("apikey list without --owner: exit %d, %q; want a header and both keys", code, stdout)
	}
	// Aligned: every row's OWNER column starts where the header's does.
	col := strings.Index(lines[0], "OWNER")
	for _, l := range lines[1:] {
		if l[col-1] != ' ' || l[col] == ' ' {
			t.Errorf("row %q is not aligned under %q", l, lines[0])
		}
	}
	code, stdout, _ = runIn("apikey", "list", "--json", "--db", db, "--owner", "shop")
	if code != 0 || !strings.HasPrefix(stdout, "[") || !strings.Contains(stdout, `"id": "`+keyID+`"`) || strings.Contains(stdout, "operator") {
		t.Errorf("apikey list --json --owner shop: exit %d, %q", code, stdout)
	}
	code, stdout, stderr = runIn("apikey", "revoke", keyID, "--db", db)
	if code != 0 || !strings.Contains(stdout, "revoked admin key "+keyID+` of owner "shop"`) {
		t.Errorf("apikey revoke KEY_ID by id alone: exit %d, %q %q", code, stdout, stderr)
	}
	if code, _, stderr = runIn("apikey", "revoke", "key_nope", "--db", db); code != 1 || !strings.Contains(stderr, "not found") {
		t.Errorf("revoke of an unknown id: exit %d, %q", code, stderr)
	}
}
