package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/store"
)

func migrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f dbFlags
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	log, err := f.logger(stderr)
	if err != nil {
		return err
	}
	db, err := store.Open(ctx, store.Config{URL: f.db, Schema: f.schema, Log: log})
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "migrations applied")
	return nil
}

// openOps opens the database with the full library so admin commands use
// the same ops as the API (no workers).
func openOps(ctx context.Context, f *dbFlags, stderr io.Writer) (*hookdApp, error) {
	log, err := f.logger(stderr)
	if err != nil {
		return nil, err
	}
	return openApp(ctx, f, log)
}

func apikey(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: hookd apikey create --owner NAME [--role admin|publisher|operator] | list --owner NAME | revoke --owner NAME KEY_ID")
		return errUsage
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("apikey "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f dbFlags
	f.register(fs)
	ownerID := fs.String("owner", "", "the owner the key belongs to (created if missing)")
	roleName := fs.String("role", "admin", "admin, publisher or operator")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	app, err := openOps(ctx, &f, stderr)
	if err != nil {
		return err
	}
	defer app.Close()
	switch sub {
	case "create":
		role, err := owner.ParseRole(*roleName)
		if err != nil {
			return err
		}
		if *ownerID == "" && role != owner.Operator {
			return fmt.Errorf("--owner is required for %s keys", role)
		}
		k, err := app.Ops.CreateKey(ctx, *ownerID, role)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "created %s key %s for owner %q; it is shown only now:\n%s\n", k.Role, k.ID, k.OwnerID, k.Secret)
	case "list":
		ks, err := app.DB.Q().ListAPIKeys(ctx, *ownerID)
		if err != nil {
			return err
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(ks)
	case "revoke":
		if fs.NArg() != 1 {
			return fmt.Errorf("usage: hookd apikey revoke --owner NAME KEY_ID")
		}
		if err := app.DB.Q().RevokeAPIKey(ctx, *ownerID, fs.Arg(0), app.now()); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked %s\n", fs.Arg(0))
	default:
		return fmt.Errorf("unknown apikey command %q: use create, list or revoke", sub)
	}
	return nil
}

func ownerCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		fmt.Fprintln(stderr, "usage: hookd owner create [--profile P] [--attr k=v]... ID")
		return errUsage
	}
	fs := flag.NewFlagSet("owner create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f dbFlags
	f.register(fs)
	profileName := fs.String("profile", "standard", "the owner's profile: standard or kwork")
	attrs := attrFlag{}
	fs.Var(attrs, "attr", "a profile attribute k=v (repeatable)")
	if err := fs.Parse(args[1:]); err != nil {
		return errUsage
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("usage: hookd owner create [--profile P] [--attr k=v]... ID")
	}
	app, err := openOps(ctx, &f, stderr)
	if err != nil {
		return err
	}
	defer app.Close()
	o, err := app.Ops.CreateOwner(ctx, fs.Arg(0), *profileName, attrs)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "created owner %s (profile %s)\n", o.ID, o.Profile)
	return nil
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
