// Command hookd is the webhook delivery server and its tools.
//
//	hookd serve      run the API and the delivery workers
//	hookd migrate    apply database migrations, or list them (status)
//	hookd backup     copy a live SQLite database to a backup file
//	hookd restore    write a backup to a new SQLite database
//	hookd apikey     create, list or revoke API keys
//	hookd owner      create owners
//	hookd catalog    list the shared event types, or remove some
//	hookd listen     a local receiver that verifies and prints deliveries
//	hookd verify     verify one delivery from stdin
//	hookd mcp        serve the ops as MCP tools over stdio
//	hookd bench      measure throughput, latency and memory end to end
//	hookd version    print the version and VCS revision
//	hookd healthcheck GET /healthz (the container's HEALTHCHECK)
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/hookd/hookd/internal/cliflag"
	"github.com/hookd/hookd/internal/receiver"
)

const usage = `usage: hookd <command> [flags]

commands:
  serve     run the admin/publish API and the delivery workers
  migrate   apply hookd's and River's migrations (idempotent); status lists
            them, up --dry-run prints their SQL
  backup    copy a live SQLite database to a file (the master key is not in it)
  restore   write a backup to a new SQLite database (checks it and the key)
  apikey    create | list | revoke API keys
  owner     create owners
  catalog   list | remove the shared event types every process offers
  listen    run a local receiver that verifies and prints deliveries
  verify    verify one delivery (body on stdin)
  mcp       serve every operation as an MCP tool over stdio
  bench     measure hookd end to end on a fresh database (docs/performance.md)
  version   print the module version and VCS revision
  healthcheck  GET a running hookd's /healthz; exit 0 if it answers 200

Flags may come before or after arguments. Run 'hookd <command> -h' for a
command's flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit code. Every
// command parses its flags before it opens anything (cliflag): -h prints
// the usage to stdout (0), a command-line mistake prints it to stderr (2).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "hookd: missing command\n\n%s", usage)
		return cliflag.ExitUsage
	}
	cmd, rest := args[0], args[1:]
	var err error
	switch cmd {
	case "serve":
		err = serve(ctx, rest, stdout, stderr)
	case "migrate":
		err = migrate(ctx, rest, stdout, stderr)
	case "backup":
		err = backupCmd(ctx, rest, stdout, stderr)
	case "restore":
		err = restoreCmd(ctx, rest, stdout, stderr)
	case "apikey":
		err = apikey(ctx, rest, stdout, stderr)
	case "owner":
		err = ownerCmd(ctx, rest, stdout, stderr)
	case "catalog":
		err = catalogCmd(ctx, rest, stdout, stderr)
	case "listen":
		err = receiver.Listen(ctx, rest, stdout, stderr)
	case "mcp":
		err = mcpCmd(ctx, rest, stdin, stdout, stderr)
	case "bench":
		err = benchCmd(ctx, rest, stdout, stderr)
	case "version", "--version":
		err = versionCmd(stdout)
	case "healthcheck":
		err = healthcheck(ctx, rest, stdout, stderr)
	case "verify":
		return receiver.Verify(rest, stdin, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return cliflag.ExitOK
	default:
		fmt.Fprintf(stderr, "hookd: unknown command %q\n\n%s", cmd, usage)
		return cliflag.ExitUsage
	}
	return cliflag.Report(err, "hookd "+cmd, stdout, stderr)
}
