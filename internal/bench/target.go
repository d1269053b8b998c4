package bench

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hookd/hookd"
)

// target is the hookd under measurement: its API URL, how to read its peak
// RSS and how to stop it.
type target struct {
	url     string
	pids    []int // hookd's processes: this one in-process; with --nodes, one a node
	peakRSS func() (bytes int64, scope string)
	stop    func()
}

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}

// startHookd creates the plan's owners and their admin keys on db, then
// runs hookd with its workers: in this process, or as a `hookd serve` child.
func startHookd(ctx context.Context, opts Options, db *database, p *plan) (*target, error) {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	cfg := hookd.Config{
		Database: db.url, Schema: db.schema, MasterKey: key, EgressAllow: loopback,
		Work: !opts.Spawn, Workers: opts.Workers,
		FetchCooldown: opts.FetchCooldown, FetchPollInterval: opts.FetchPollInterval,
		BusySnooze: opts.BusySnooze, Retention: opts.Retention, Unpartitioned: opts.Unpartitioned,
		Log: opts.Log,
	}
	h, err := hookd.Open(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open hookd: %w", err)
	}
	if err := createOwners(ctx, h, p); err != nil {
		return nil, errors.Join(err, h.Close())
	}
	if opts.Spawn {
		// The child owns the database from here.
		if err := h.Close(); err != nil {
			return nil, fmt.Errorf("close hookd before spawning: %w", err)
		}
		return spawnNodes(ctx, opts, db, key)
	}
	return inProcess(ctx, h)
}

func createOwners(ctx context.Context, h *hookd.Hookd, p *plan) error {
	p.keys = make([]string, p.owners)
	for k := range p.owners {
		if err := h.CreateOwner(ctx, p.ownerID(k), p.profile, p.ownerAttrs(k)); err != nil {
			return fmt.Errorf("create owner: %w", err)
		}
		secret, err := h.CreateAPIKey(ctx, p.ownerID(k), "admin")
		if err != nil {
			return fmt.Errorf("create key: %w", err)
		}
		p.keys[k] = secret
	}
	if p.probe {
		if err := h.CreateOwner(ctx, probeOwner, "standard", nil); err != nil {
			return fmt.Errorf("create the probe owner: %w", err)
		}
		var err error
		if p.probeKey, err = h.CreateAPIKey(ctx, probeOwner, "admin"); err != nil {
			return err
		}
	}
	if !p.noisy {
		return nil
	}
	if err := h.CreateOwner(ctx, noisyOwner, "standard", nil); err != nil {
		return fmt.Errorf("create the noisy owner: %w", err)
	}
	secret, err := h.CreateAPIKey(ctx, noisyOwner, "admin")
	p.noisyKey = secret
	return err
}

func inProcess(ctx context.Context, h *hookd.Hookd) (*target, error) {
	if err := h.Start(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("start hookd: %w", err), h.Close())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, errors.Join(err, h.Close())
	}
	srv := &http.Server{Handler: h.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return &target{
		url:  "http://" + ln.Addr().String(),
		pids: []int{os.Getpid()},
		peakRSS: func() (int64, string) {
			return readPeakRSS("/proc/self/status"), "hookd and the bench in one process"
		},
		stop: func() {
			sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			// The run is measured by now: a slow stop costs nothing.
			_ = srv.Shutdown(sctx)
			_ = h.Stop(sctx)
			_ = h.Close()
		},
	}, nil
}

// spawnNodes starts opts.Nodes `hookd serve` processes on db: the first
// with every role (the API the bench calls, and workers), the others
// workers only, as a deployment adds delivery nodes.
func spawnNodes(ctx context.Context, opts Options, db *database, key []byte) (*target, error) {
	t, err := spawn(ctx, opts, db, key, "all")
	if err != nil {
		return nil, err
	}
	if opts.Nodes > 1 {
		rss := t.peakRSS
		t.peakRSS = func() (int64, string) {
			b, _ := rss()
			return b, "the first hookd serve process (the API's; the workers' not counted)"
		}
	}
	for range max(opts.Nodes, 1) - 1 {
		w, err := spawn(ctx, opts, db, key, "worker")
		if err != nil {
			t.stop()
			return nil, fmt.Errorf("worker node: %w", err)
		}
		t.pids = append(t.pids, w.pids...)
		stop := t.stop
		t.stop = func() { w.stop(); stop() }
	}
	return t, nil
}

// spawn starts `hookd serve --role role` on db and waits until it listens.
func spawn(ctx context.Context, opts Options, db *database, key []byte, role string) (*target, error) {
	exe := opts.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	args := []string{"serve", "--db", db.url, "--addr", "127.0.0.1:0", "--egress-allow", "127.0.0.1/32", "--log-level", "warn", "--role", role}
	if db.schema != "" {
		args = append(args, "--schema", db.schema)
	}
	if opts.Workers > 0 {
		args = append(args, "--workers", strconv.Itoa(opts.Workers))
	}
	if opts.Retention > 0 {
		args = append(args, "--retention", opts.Retention.String())
	}
	if opts.Unpartitioned {
		args = append(args, "--partition-interval", "0")
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "HOOKD_MASTER_KEY="+base64.StdEncoding.EncodeToString(key))
	logs := &tail{max: 16 << 10}
	cmd.Stderr = io.MultiWriter(logs, opts.Progress) // its warnings, as the in-process run's go to opts.Log
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("spawn %s: %w", exe, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "hookd listening on "); ok {
				u, _, _ := strings.Cut(rest, " ")
				addr <- u
			}
		}
	}()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(25 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	select {
	case u := <-addr:
		pid := cmd.Process.Pid
		return &target{
			url:  u,
			pids: []int{pid},
			peakRSS: func() (int64, string) {
				return readPeakRSS(fmt.Sprintf("/proc/%d/status", pid)), "the hookd serve process"
			},
			stop: stop,
		}, nil
	case <-exited:
		return nil, fmt.Errorf("hookd serve exited at start:\n%s", logs)
	case <-time.After(time.Minute):
		stop()
		return nil, fmt.Errorf("hookd serve did not listen within a minute:\n%s", logs)
	case <-ctx.Done():
		stop()
		return nil, ctx.Err()
	}
}

// readPeakRSS returns VmHWM (peak resident set) from a /proc status file,
// in bytes; 0 where it cannot be read (not Linux).
func readPeakRSS(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// tail keeps the last max bytes written to it (a child's log).
type tail struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
