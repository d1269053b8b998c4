package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/hookd/hookd/internal/app"
	"github.com/hookd/hookd/internal/endpoint"
)

// dbFlags are the flags every command that opens the database shares.
type dbFlags struct {
	db            string
	schema        string
	masterKeyFile string
	logLevel      string
	logFormat     string
}

func (f *dbFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.db, "db", envOr("HOOKD_DATABASE", app.DefaultDatabase), "SQLite file or postgres:// URL (env HOOKD_DATABASE)")
	fs.StringVar(&f.schema, "schema", os.Getenv("HOOKD_SCHEMA"), "PostgreSQL schema for hookd's tables (env HOOKD_SCHEMA)")
	fs.StringVar(&f.masterKeyFile, "master-key-file", os.Getenv("HOOKD_MASTER_KEY_FILE"), "file holding the master key; default hookd.key beside the SQLite file (env HOOKD_MASTER_KEY_FILE; HOOKD_MASTER_KEY holds the key itself)")
	fs.StringVar(&f.logLevel, "log-level", envOr("HOOKD_LOG_LEVEL", "info"), "debug, info, warn or error (env HOOKD_LOG_LEVEL)")
	fs.StringVar(&f.logFormat, "log-format", envOr("HOOKD_LOG_FORMAT", "text"), "text (logfmt) or json, one object a line (env HOOKD_LOG_FORMAT)")
}

func (f *dbFlags) logger(w io.Writer) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(f.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", f.logLevel)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch f.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: use text or json", f.logFormat)
}

func (f *dbFlags) isPostgres() bool {
	return strings.HasPrefix(f.db, "postgres://") || strings.HasPrefix(f.db, "postgresql://")
}

// masterKey loads HOOKD_MASTER_KEY, or the key file (created on first start).
func (f *dbFlags) masterKey(log *slog.Logger) ([]byte, error) {
	return endpoint.LoadMasterKey(os.Getenv("HOOKD_MASTER_KEY"), f.masterKeyPath(), log)
}

// masterKeyPath is the key file the flags name: --master-key-file, or
// hookd.key beside the SQLite file (in the working directory for
// PostgreSQL).
func (f *dbFlags) masterKeyPath() string {
	switch {
	case f.masterKeyFile != "":
		return f.masterKeyFile
	case f.isPostgres():
		return "hookd.key"
	}
	return filepath.Join(filepath.Dir(f.sqlitePath()), "hookd.key")
}

// sqlitePath is the SQLite file --db names.
func (f *dbFlags) sqlitePath() string { return strings.TrimPrefix(f.db, "sqlite:") }

// config builds the library config the flags describe.
func (f *dbFlags) config(log *slog.Logger) (app.Config, error) {
	key, err := f.masterKey(log)
	if err != nil {
		return app.Config{}, err
	}
	return app.Config{Database: f.db, Schema: f.schema, MasterKey: key, Log: log}, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
