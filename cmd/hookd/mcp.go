package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hookd/hookd/internal/app"
	"github.com/hookd/hookd/internal/audit"
	"github.com/hookd/hookd/internal/cliflag"
	"github.com/hookd/hookd/internal/egress"
	"github.com/hookd/hookd/internal/mcpserver"
	"github.com/hookd/hookd/internal/ops"
	"github.com/hookd/hookd/internal/owner"
)

// mcpCmd serves every op as an MCP tool over stdio (stdin/stdout carry the
// protocol; logs go to stderr). With --key the tools act as that key, checked
// again on every call; without one, as an operator of the database opened
// (whoever can open the database can change it anyway).
func mcpCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	fs := cliflag.New("mcp", "hookd mcp [--key KEY] [--owner ID] [flags]",
		"Serves every operation as an MCP tool over stdio (stdin/stdout carry the\nprotocol, logs go to stderr). It answers every request written before stdin\ncloses, then exits 0. Without --key the tools act as an operator of the\ndatabase opened.")
	var f dbFlags
	f.register(fs.FlagSet)
	key := fs.String("key", os.Getenv("HOOKD_API_KEY"), "API key the tools act with (env HOOKD_API_KEY); default: operator on the database opened")
	ownerName := fs.String("owner", "", "the owner an operator acts on when a tool call names none")
	allow := fs.String("egress-allow", os.Getenv("HOOKD_EGRESS_ALLOW"), "CIDR[,CIDR…] endpoint URLs may point into, as serve's (env HOOKD_EGRESS_ALLOW)")
	if _, err := fs.Parse(args); err != nil {
		return err
	}
	egressAllow, err := egress.ParseAllow(*allow)
	if err != nil {
		return fs.Errorf("--egress-allow: %v", err)
	}
	log, err := f.logger(stderr)
	if err != nil {
		return fs.Errorf("%v", err)
	}
	cfg, err := f.config(log)
	if err != nil {
		return err
	}
	cfg.EgressAllow = egressAllow
	cfg.KeepCatalog = true // a tool session never changes what the servers offer
	a, err := app.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer closing(&err, a)
	srv, err := mcpserver.New(mcpserver.Config{Ops: a.Ops, Log: log})
	if err != nil {
		return err
	}
	caller := func(ctx context.Context) (ops.Principal, error) {
		if *key == "" {
			return a.Ops.ActAs(ctx, ops.Principal{KeyID: "local", Role: owner.Operator, Actor: audit.Actor{Kind: audit.KindMCP, ID: "local", Name: "hookd mcp (stdio)"}}, *ownerName)
		}
		return a.Ops.Authenticate(ctx, *key, *ownerName, false)
	}
	if _, err := caller(ctx); err != nil {
		return fmt.Errorf("--key/--owner: %w", err)
	}
	err = srv.Run(ctx, mcpserver.Stdio(stdin, stdout), caller)
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) {
		return nil // the client left, or SIGINT
	}
	return err
}
