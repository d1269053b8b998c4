package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/hookd/hookd/internal/cliflag"
	"github.com/hookd/hookd/internal/dbadmin"
	"github.com/hookd/hookd/internal/endpoint"
)

// pgBackupHint is what backup and restore say to a PostgreSQL user.
const pgBackupHint = "back up and restore PostgreSQL with pg_dump and pg_restore, or point-in-time recovery (docs/deploy.md, \"Backup and restore\")"

func backupCmd(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := cliflag.New("backup", "hookd backup --to FILE [flags]",
		"Copies a live SQLite database to FILE, consistently (VACUUM INTO), while hookd\n"+
			"serve keeps delivering; then checks the copy. FILE must not exist.\n"+
			"The master key is NOT in the backup: keep it too, apart from the backup.")
	var f dbFlags
	f.register(fs.FlagSet)
	to := fs.String("to", "", "the backup file to write (must not exist)")
	if _, err := fs.Parse(args); err != nil {
		return err
	}
	if *to == "" {
		return fs.Errorf("--to is required: the backup file to write")
	}
	if f.isPostgres() {
		return fs.Errorf("--db is PostgreSQL: hookd backup copies an SQLite database; %s", pgBackupHint)
	}
	info, err := dbadmin.BackupSQLite(ctx, f.sqlitePath(), *to)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "backed up %s to %s (%s)\n", f.sqlitePath(), info.Path, describeBackup(info))
	fmt.Fprintf(stdout, "The master key is not in the backup. Its endpoint secrets are sealed with %s:\n"+
		"without that key they cannot be opened. Keep the key, apart from the backup.\n", f.keySource())
	return nil
}

func restoreCmd(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := cliflag.New("restore", "hookd restore --from FILE [flags]",
		"Writes the backup FILE (from 'hookd backup') to a new SQLite database at --db.\n"+
			"It refuses while a hookd has that database open, refuses to replace an\n"+
			"existing one, refuses a backup written by a newer hookd, and checks that\n"+
			"the master key (HOOKD_MASTER_KEY, --master-key-file, or hookd.key beside\n"+
			"--db) opens the backup's endpoint secrets. On a refusal nothing is written.")
	var f dbFlags
	f.register(fs.FlagSet)
	from := fs.String("from", "", "the backup file to restore")
	ignoreKey := fs.Bool("ignore-key", false, "restore even when the master key cannot open the backup's secrets (every endpoint's secret must then be rotated)")
	if _, err := fs.Parse(args); err != nil {
		return err
	}
	if *from == "" {
		return fs.Errorf("--from is required: the backup file to restore")
	}
	if f.isPostgres() {
		return fs.Errorf("--db is PostgreSQL: hookd restore writes an SQLite database; %s", pgBackupHint)
	}
	check := func(info *dbadmin.BackupInfo) error {
		if *ignoreKey || info.Sealed == nil {
			return nil
		}
		return f.keyOpens(info.Sealed)
	}
	info, err := dbadmin.RestoreSQLite(ctx, *from, f.sqlitePath(), check)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "restored %s to %s (%s)\n", *from, info.Path, describeBackup(info))
	if n := info.Unfinished(); n > 0 {
		fmt.Fprintf(stdout, "%d deliveries were not finished when the backup was taken: hookd serve sends them\n"+
			"(those in flight then, after --rescue-after); a receiver may get some twice (it dedupes on the id).\n", n)
	}
	if info.HookdPending > 0 {
		fmt.Fprintf(stdout, "%d hookd migrations pending: hookd serve (or hookd migrate) applies them.\n", info.HookdPending)
	}
	return nil
}

// keySource names where the flags' master key comes from.
func (f *dbFlags) keySource() string {
	if os.Getenv("HOOKD_MASTER_KEY") != "" {
		return "the key in HOOKD_MASTER_KEY"
	}
	return "the key in " + f.masterKeyPath()
}

// keyOpens checks that the flags' master key opens sealed, without
// creating a key file: restoring without the key that sealed the backup's
// secrets makes every one of them useless.
func (f *dbFlags) keyOpens(sealed []byte) error {
	path := f.masterKeyPath()
	if os.Getenv("HOOKD_MASTER_KEY") == "" {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("no master key: HOOKD_MASTER_KEY is unset and %s does not exist. Put the key of the hookd that wrote the backup there (or set HOOKD_MASTER_KEY) first: the backup's endpoint secrets are sealed with it, and a hookd started without it would create a new key that opens none of them (--ignore-key restores anyway)", path)
		}
	}
	key, err := endpoint.LoadMasterKey(os.Getenv("HOOKD_MASTER_KEY"), path, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	sealer, err := endpoint.NewSealer(key)
	if err != nil {
		return err
	}
	if _, err := sealer.Open(sealed); err != nil {
		return fmt.Errorf("%s does not open the backup's endpoint secrets: it is not the key of the hookd that wrote the backup (--ignore-key restores anyway; every endpoint's secret must then be rotated)", f.keySource())
	}
	return nil
}

// describeBackup summarises a backup for a person: its size, migrations
// and deliveries.
func describeBackup(b *dbadmin.BackupInfo) string {
	var states []string
	for state, n := range b.Deliveries {
		states = append(states, fmt.Sprintf("%d %s", n, state))
	}
	slices.Sort(states)
	deliveries := "none"
	if len(states) > 0 {
		deliveries = strings.Join(states, ", ")
	}
	return fmt.Sprintf("%d bytes; hookd migrations %s, River migrations %s; deliveries: %s", b.Bytes, versionSpan(b.Hookd), versionSpan(b.River), deliveries)
}

func versionSpan(vs []int) string {
	if len(vs) == 0 {
		return "none"
	}
	return fmt.Sprintf("%d–%d", vs[0], vs[len(vs)-1])
}
