package main

import (
	"context"
	"errors"
	"io"
	"log/slog"

	"github.com/hookd/hookd"
	"github.com/hookd/hookd/internal/parts"
)

// hookdApp is hookd opened for a one-shot admin command, its parts at hand.
type hookdApp struct {
	*hookd.Hookd
	*parts.Parts
}

func openApp(ctx context.Context, f *dbFlags, log *slog.Logger) (*hookdApp, error) {
	cfg, err := f.config(log)
	if err != nil {
		return nil, err
	}
	cfg.KeepCatalog = true // an admin command never changes what the servers offer
	h, err := hookd.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &hookdApp{h, parts.Of(h)}, nil
}

// closing closes c as a command returns and adds a failure to close to the
// command's error (deferred: defer closing(&err, c)), so no Close error is
// dropped.
func closing(err *error, c io.Closer) {
	*err = errors.Join(*err, c.Close())
}
