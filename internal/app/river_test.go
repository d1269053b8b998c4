package app

import (
	"log/slog"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/store"
)

// TestCompletedJobRetention: River keeps a completed job its own 24 h,
// or hookd's retention when that is shorter, so a steady state of minutes
// does not keep a day of finished jobs.
func TestCompletedJobRetention(t *testing.T) {
	for _, c := range []struct{ retention, want time.Duration }{
		{0, 24 * time.Hour},
		{DefaultRetention, 24 * time.Hour},
		{time.Minute, time.Minute},
		{6 * time.Hour, 6 * time.Hour},
	} {
		if got := completedJobRetention(c.retention); got != c.want {
			t.Errorf("retention %v: River keeps completed jobs %v, want %v", c.retention, got, c.want)
		}
	}
	cfg := Config{Retention: time.Minute, Log: slog.New(slog.DiscardHandler)}
	if got := riverConfig(cfg, nil, store.SQLite).CompletedJobRetentionPeriod; got != time.Minute {
		t.Errorf("riverConfig with a 1m retention: CompletedJobRetentionPeriod %v, want 1m", got)
	}
}
