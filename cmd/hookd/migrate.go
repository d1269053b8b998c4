package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hookd/hookd/internal/cliflag"
	"github.com/hookd/hookd/internal/dbadmin"
)

const migrateUsage = `usage: hookd migrate [up|status] [flags]

subcommands:
  up       apply hookd's and River's migrations (the default; idempotent,
           safe to run concurrently); --dry-run prints their SQL instead
  status   list every migration of hookd's and River's, applied or pending

Run 'hookd migrate <subcommand> -h' for its flags.
`

// migrate is `hookd migrate [up|status]`: without a subcommand it
// applies the migrations, as it did before it had subcommands.
func migrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "status":
			return migrateStatus(ctx, args[1:], stdout, stderr)
		case "up":
			return migrateUp(ctx, "hookd migrate up [--dry-run] [flags]", args[1:], stdout, stderr)
		case "help":
			return &cliflag.Help{Text: migrateUsage}
		}
	}
	return migrateUp(ctx, "hookd migrate [up|status] [--dry-run] [flags]", args, stdout, stderr)
}

func migrateUp(ctx context.Context, synopsis string, args []string, stdout, stderr io.Writer) (err error) {
	fs := cliflag.New("migrate", synopsis,
		"Applies hookd's and River's migrations (idempotent; safe to run concurrently).\n"+
			"With --dry-run it prints the SQL it would run and changes nothing.\n"+
			"'hookd migrate status' lists them.")
	var f dbFlags
	f.register(fs.FlagSet)
	dryRun := fs.Bool("dry-run", false, "print the SQL of the pending migrations; apply nothing")
	partitionInterval := fs.String("partition-interval", envOr("HOOKD_PARTITION_INTERVAL", "24h"), "PostgreSQL: partition the event and delivery tables by time, one partition per interval (at least 1h); an older database is converted in place, one-way; 0 leaves the tables as they are (env HOOKD_PARTITION_INTERVAL)")
	if _, err := fs.Parse(args); err != nil {
		return err
	}
	if *dryRun {
		return withMigrations(ctx, &f, stderr, func(ms []dbadmin.Migration, note string) error {
			return printPendingSQL(stdout, ms, note)
		})
	}
	log, err := f.logger(stderr)
	if err != nil {
		return fs.Errorf("%v", err)
	}
	interval, err := parsePartitionInterval(*partitionInterval)
	if err != nil {
		return fs.Errorf("%v", err)
	}
	if err := dbadmin.MigratePartitioned(ctx, f.db, f.schema, interval, log); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "migrations applied")
	return nil
}

func migrateStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cliflag.New("migrate status", "hookd migrate status [flags]",
		"Lists River's and hookd's migrations, each applied or pending, and any the\n"+
			"database has that this binary does not know (a newer hookd applied them).\n"+
			"It changes nothing: a missing SQLite file is not created.")
	var f dbFlags
	f.register(fs.FlagSet)
	if _, err := fs.Parse(args); err != nil {
		return err
	}
	return withMigrations(ctx, &f, stderr, func(ms []dbadmin.Migration, note string) error {
		return printMigrations(stdout, ms, note)
	})
}

// withMigrations reads the migrations of the flags' database without
// changing it. A missing SQLite file is not created: an empty in-memory
// database stands in (every migration pending), and note says so.
func withMigrations(ctx context.Context, f *dbFlags, stderr io.Writer, do func(ms []dbadmin.Migration, note string) error) (err error) {
	log, err := f.logger(stderr)
	if err != nil {
		return err
	}
	url, note := f.db, ""
	if !f.isPostgres() {
		path := f.sqlitePath()
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			url, note = ":memory:", fmt.Sprintf("%s does not exist yet: a new database gets every migration", path)
		}
	}
	ms, err := dbadmin.Migrations(ctx, url, f.schema, log)
	if err != nil {
		return err
	}
	return do(ms, note)
}

// printMigrations writes the migrations as a table and a summary line.
func printMigrations(w io.Writer, ms []dbadmin.Migration, note string) error {
	if note != "" {
		fmt.Fprintln(w, note)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "LINE\tVERSION\tNAME\tSTATE")
	pending, unknown := 0, 0
	for _, m := range ms {
		state := "applied"
		switch {
		case m.Unknown:
			state = "applied by a newer hookd (unknown to this binary)"
			unknown++
		case !m.Applied:
			state = "pending"
			pending++
		case !m.AppliedAt.IsZero():
			state = "applied " + m.AppliedAt.Format(time.RFC3339)
		}
		name := m.Name
		if name == "" {
			name = "-"
		}
		fmt.Fprintf(tw, "%s\t%03d\t%s\t%s\n", m.Line, m.Version, name, state)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	switch {
	case unknown > 0:
		fmt.Fprintf(w, "%d pending; %d applied by a newer hookd: run that version (or newer)\n", pending, unknown)
	case pending > 0:
		fmt.Fprintf(w, "%d pending: 'hookd migrate' applies them ('hookd migrate up --dry-run' prints their SQL)\n", pending)
	default:
		fmt.Fprintln(w, "up to date")
	}
	return nil
}

// printPendingSQL writes the SQL of every pending migration, in the order
// `hookd migrate` would run it.
func printPendingSQL(w io.Writer, ms []dbadmin.Migration, note string) error {
	if note != "" {
		fmt.Fprintf(w, "-- %s\n", note)
	}
	n := 0
	for _, m := range ms {
		if m.Applied {
			continue
		}
		n++
		fmt.Fprintf(w, "\n-- %s migration %03d %s\n", m.Line, m.Version, m.Name)
		if len(m.SQL) == 0 {
			fmt.Fprintln(w, "-- (PostgreSQL only: on SQLite it is recorded as applied and runs nothing)")
		}
		for _, stmt := range m.SQL {
			fmt.Fprintln(w, strings.TrimRight(stmt, "\n"))
		}
	}
	if n == 0 {
		fmt.Fprintln(w, "-- nothing to apply: the database is up to date")
		return nil
	}
	_, err := fmt.Fprintf(w, "\n-- %d migrations; nothing was applied (--dry-run)\n", n)
	return err
}

// parsePartitionInterval reads --partition-interval: 0 (unpartitioned)
// or a duration of at least an hour.
func parsePartitionInterval(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || (d > 0 && d < time.Hour) {
		return 0, fmt.Errorf("--partition-interval %q: a duration of at least 1h (24h, the default, for daily partitions), or 0 to leave the tables unpartitioned", v)
	}
	return d, nil
}
