package hookdtest

import (
	"bytes"
	"log/slog"
	"sync"
	"time"
)

// How often WaitFor checks a condition between signals: often without a
// wake channel, rarely (a backstop) with one.
const (
	pollEvery   = 20 * time.Millisecond
	backstopFor = 250 * time.Millisecond
)

// WaitFor checks cond until it holds or d has passed, and reports whether it
// held. It checks again whenever wake fires (such as [Logs.Wrote]); rows
// hookd writes change without a signal of their own, so without a wake
// (nil) it checks every 20 ms, and with one every 250 ms as a backstop.
func WaitFor(d time.Duration, wake <-chan struct{}, cond func() bool) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	every := pollEvery
	if wake != nil {
		every = backstopFor
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if cond() {
			return true
		}
		select {
		case <-wake:
		case <-tick.C:
		case <-deadline.C:
			return cond()
		}
	}
}

// Logs is a log destination for a test's hookd: it keeps every line and
// signals each write on Wrote. hookd logs each delivery attempt once it is
// recorded, so a test waiting for a delivery's state can wake on the line.
type Logs struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	wrote chan struct{}
}

// NewLogs returns an empty Logs.
func NewLogs() *Logs { return &Logs{wrote: make(chan struct{}, 1)} }

func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	n, err := l.buf.Write(p)
	l.mu.Unlock()
	select {
	case l.wrote <- struct{}{}:
	default:
	}
	return n, err
}

// String returns everything logged so far.
func (l *Logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Wrote fires after a write (one pending signal at most).
func (l *Logs) Wrote() <-chan struct{} { return l.wrote }

// Logger returns a text logger into l for lines at level and above: a
// test's hookd.Config.Log.
func (l *Logs) Logger(level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: level}))
}
