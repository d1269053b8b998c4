package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/hookd/hookd/internal/app"
	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/cliflag"
	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/profile"
)

// The shared catalog is database state: every `hookd serve` adds its
// --catalog to it and nothing removes a type but `hookd catalog remove`
// (docs/scale-out.md, "One catalog for every process").

const catalogUsage = `usage: hookd catalog <subcommand> [flags]

subcommands:
  list [--json]             the shared event types every process offers
  remove TYPE[,TYPE...]     take shared types away from every owner

Run 'hookd catalog <subcommand> -h' for its flags.
`

func catalogCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub, args, err := cliflag.Group(args, catalogUsage, "list", "remove")
	if err != nil {
		return err
	}
	if sub == "list" {
		return catalogList(ctx, args, stdout, stderr)
	}
	return catalogRemove(ctx, args, stdout, stderr)
}

func catalogList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cliflag.New("catalog list", "hookd catalog list [--json] [flags]",
		"Lists the shared event-type catalog: what every 'hookd serve --catalog' on this\ndatabase added, and hookd's built-in types (PROFILE: offered to that profile's\nowners only). Owners' own types are not listed.")
	var f dbFlags
	f.register(fs.FlagSet)
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	if _, err := fs.Parse(args); err != nil {
		return err
	}
	return withOps(ctx, &f, stderr, func(a *app.App) error {
		ts, err := a.Ops.SharedEventTypes(ctx)
		if err != nil {
			return err
		}
		if *asJSON {
			type row struct {
				Name     string `json:"name"`
				Exposure string `json:"exposure"`
				Scoped   bool   `json:"scoped"`
				Profile  string `json:"profile,omitempty"`
			}
			rows := make([]row, len(ts))
			for i, t := range ts {
				rows[i] = row{t.Name, string(t.Exposure), t.Scoped, t.Profile}
			}
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(rows)
		}
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tEXPOSURE\tSCOPED\tPROFILE")
		for _, t := range ts {
			fmt.Fprintf(tw, "%s\t%s\t%t\t%s\n", t.Name, t.Exposure, t.Scoped, cmp.Or(t.Profile, "-"))
		}
		return tw.Flush()
	})
}

func catalogRemove(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cliflag.New("catalog remove", "hookd catalog remove TYPE[,TYPE...] [flags]",
		"Removes shared event types from the catalog every owner is offered, all or\nnone. Owners' own registrations of those names stay. Take the types out of\nevery process's --catalog first: a process that starts with them adds them\nagain. hookd's built-in types (its failure notifications, the profiles' own)\ncannot be removed.", "TYPE[,TYPE...]")
	var f dbFlags
	f.register(fs.FlagSet)
	pos, err := fs.Parse(args)
	if err != nil {
		return err
	}
	var names []string
	for n := range strings.SplitSeq(pos[0], ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return fs.Errorf("missing argument TYPE: name the types to remove, comma-separated")
	}
	builtin := map[string]bool{}
	for _, t := range delivery.BuiltinTypes(profile.Default()) {
		builtin[t.Name] = true
	}
	for _, n := range names {
		if builtin[n] {
			return apperr.New(apperr.Invalid, "%s is built into hookd (every start offers it again) and cannot be removed; nothing was removed", n)
		}
	}
	return withOps(ctx, &f, stderr, func(a *app.App) error {
		if err := a.Ops.RemoveSharedEventTypes(ctx, names, "hookd catalog remove"); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "removed %d shared event type(s): %s\n", len(names), strings.Join(names, ", "))
		return nil
	})
}
