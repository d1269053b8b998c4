package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hookd/hookd/internal/app"
	"github.com/hookd/hookd/internal/cliflag"
	"github.com/hookd/hookd/internal/ops"
	"github.com/hookd/hookd/internal/owner"
)

// openOps opens the database with the full library so admin commands use
// the same ops as the API (no workers).
func openOps(ctx context.Context, f *dbFlags, stderr io.Writer) (*app.App, error) {
	log, err := f.logger(stderr)
	if err != nil {
		return nil, err
	}
	return openApp(ctx, f, log)
}

// withOps runs do with the ops opened on the flags' database and closes
// them after, joining a failed close into do's error.
func withOps(ctx context.Context, f *dbFlags, stderr io.Writer, do func(a *app.App) error) (err error) {
	a, err := openOps(ctx, f, stderr)
	if err != nil {
		return err
	}
	defer closing(&err, a)
	return do(a)
}

const apikeyUsage = `usage: hookd apikey <subcommand> [flags]

subcommands:
  create --owner ID [--role admin|publisher|operator]   a new key, shown once
  list [--owner ID] [--json]                            every key (or one owner's)
  revoke KEY_ID                                         revoke a key by its id

Run 'hookd apikey <subcommand> -h' for its flags.
`

func apikey(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub, args, err := cliflag.Group(args, apikeyUsage, "create", "list", "revoke")
	if err != nil {
		return err
	}
	switch sub {
	case "create":
		return apikeyCreate(ctx, args, stdout, stderr)
	case "list":
		return apikeyList(ctx, args, stdout, stderr)
	}
	return apikeyRevoke(ctx, args, stdout, stderr)
}

func apikeyCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cliflag.New("apikey create", "hookd apikey create --owner ID [--role admin|publisher|operator] [flags]",
		"Creates an API key and prints it once, on the last line. The owner is created\n(profile standard) when it does not exist. Operator keys belong to no owner.")
	var f dbFlags
	f.register(fs.FlagSet)
	ownerID := fs.String("owner", "", "the owner the key belongs to (created if missing); not for operator keys")
	roleName := fs.String("role", "admin", "admin, publisher or operator")
	if _, err := fs.Parse(args); err != nil {
		return err
	}
	role, err := owner.ParseRole(*roleName)
	if err != nil {
		return fs.Errorf("--role %q: use admin, publisher or operator", *roleName)
	}
	if *ownerID == "" && role != owner.Operator {
		return fs.Errorf("--owner is required for %s keys", role)
	}
	return withOps(ctx, &f, stderr, func(a *app.App) error {
		ctx := a.Ops.ByCLI(ctx, "api_keys.create", *ownerID, "hookd apikey create", &ops.CreateAPIKeyIn{Role: role})
		k, err := a.Ops.CreateKey(ctx, *ownerID, role)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "created %s key %s for owner %q; it is shown only now:\n%s\n", k.Role, k.ID, k.OwnerID, k.Secret)
		return nil
	})
}

func apikeyList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cliflag.New("apikey list", "hookd apikey list [--owner ID] [--json] [flags]",
		"Lists API keys (never their secrets): every key, or one owner's with --owner.")
	var f dbFlags
	f.register(fs.FlagSet)
	ownerID := fs.String("owner", "", "only this owner's keys")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	if _, err := fs.Parse(args); err != nil {
		return err
	}
	return withOps(ctx, &f, stderr, func(a *app.App) error {
		ks, err := a.Ops.ListKeys(ctx, *ownerID)
		if err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(ks)
		}
		return printKeys(stdout, ks)
	})
}

// printKeys writes keys as an aligned table.
func printKeys(w io.Writer, ks []*owner.APIKey) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tOWNER\tROLE\tPREFIX\tCREATED\tREVOKED")
	for _, k := range ks {
		ownerID, revoked := k.OwnerID, "-"
		if ownerID == "" {
			ownerID = "-"
		}
		if k.RevokedAt != nil {
			revoked = k.RevokedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, ownerID, k.Role, k.Prefix, k.CreatedAt.UTC().Format(time.RFC3339), revoked)
	}
	return tw.Flush()
}

func apikeyRevoke(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cliflag.New("apikey revoke", "hookd apikey revoke KEY_ID [flags]",
		"Revokes a key at once, whoever owns it ('hookd apikey list' shows the ids).", "KEY_ID")
	var f dbFlags
	f.register(fs.FlagSet)
	pos, err := fs.Parse(args)
	if err != nil {
		return err
	}
	return withOps(ctx, &f, stderr, func(a *app.App) error {
		k, err := a.Ops.RevokeKeyByID(ctx, pos[0], "hookd apikey revoke")
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked %s key %s of owner %q\n", k.Role, k.ID, k.OwnerID)
		return nil
	})
}

const ownerUsage = `usage: hookd owner <subcommand> [flags]

subcommands:
  create ID [--profile standard|kwork] [--attr k=v]...   a new owner

Run 'hookd owner create -h' for its flags and the kwork attributes.
`

func ownerCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	_, args, err := cliflag.Group(args, ownerUsage, "create")
	if err != nil {
		return err
	}
	fs := cliflag.New("owner create", "hookd owner create ID [--profile standard|kwork] [--attr k=v]... [flags]",
		"Creates an owner. The kwork profile needs two attributes:\n"+
			"  --attr app=ID                 the app id put in every envelope\n"+
			"  --attr environment=test|live  the environment put in every envelope\n"+
			"and takes one more: --attr app_kind=integration|page.", "ID")
	var f dbFlags
	f.register(fs.FlagSet)
	profileName := fs.String("profile", "standard", "the owner's profile: standard or kwork")
	attrs := attrFlag{}
	fs.Var(attrs, "attr", "a profile attribute k=v (repeatable)")
	pos, err := fs.Parse(args)
	if err != nil {
		return err
	}
	return withOps(ctx, &f, stderr, func(a *app.App) error {
		ctx := a.Ops.ByCLI(ctx, "owners.create", pos[0], "hookd owner create", &ops.CreateOwnerIn{ID: pos[0], Profile: *profileName, Attributes: attrs})
		o, err := a.Ops.CreateOwner(ctx, pos[0], *profileName, attrs)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "created owner %s (profile %s)\n", o.ID, o.Profile)
		return nil
	})
}

type attrFlag map[string]string

func (a attrFlag) String() string { return fmt.Sprint(map[string]string(a)) }

func (a attrFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("--attr %q: use key=value", s)
	}
	a[k] = v
	return nil
}
