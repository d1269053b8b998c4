package main

import (
	"context"
	"errors"
	"io"
	"log/slog"

	"github.com/hookd/hookd/internal/app"
)

// openApp opens hookd for a one-shot admin command, its parts at hand.
func openApp(ctx context.Context, f *dbFlags, log *slog.Logger) (*app.App, error) {
	cfg, err := f.config(log)
	if err != nil {
		return nil, err
	}
	cfg.KeepCatalog = true // an admin command never changes what the servers offer
	return app.Open(ctx, cfg)
}

// closing closes c as a command returns and adds a failure to close to the
// command's error (deferred: defer closing(&err, c)), so no Close error is
// dropped.
func closing(err *error, c io.Closer) {
	*err = errors.Join(*err, c.Close())
}
