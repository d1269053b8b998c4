package main

import (
	"context"
	"log/slog"
	"time"

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
	h, err := hookd.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &hookdApp{h, parts.Of(h)}, nil
}

func (a *hookdApp) now() int64 { return time.Now().UnixMicro() }
