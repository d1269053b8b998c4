package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Machine is what the figures were measured on.
type Machine struct {
	Cores int    // CPUs this process may use
	Model string // /proc/cpuinfo's model name ("" where unknown)
}

func (m Machine) String() string {
	model := m.Model
	if model == "" {
		model = "unknown CPU"
	}
	return fmt.Sprintf("%d cores, %s", m.Cores, model)
}

func thisMachine() Machine {
	m := Machine{Cores: runtime.NumCPU()}
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return m
	}
	defer f.Close() //nolint:errcheck // opened read-only: closing cannot lose data
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			m.Model = strings.TrimSpace(v)
			break
		}
	}
	return m
}

// clockTick is USER_HZ, the unit of /proc/PID/stat's utime and stime: 100
// on every Linux architecture Go runs on.
const clockTick = 100

// procCPU returns utime + stime of process pid from /proc, and false where
// it cannot be read (not Linux, the process gone or on another machine).
func procCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name (field 2) is parenthesised and may hold spaces:
	// count fields from the last ')'. utime and stime are fields 14 and 15.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(u+s) * time.Second / clockTick, true
}

// cpuMeter measures the CPU hookd and its PostgreSQL backends use between
// start and stop.
type cpuMeter struct {
	pid   int // hookd's process
	db    *database
	hookd time.Duration
	pg    map[int]time.Duration // backend pid → CPU at start
}

func (m *cpuMeter) start(ctx context.Context) {
	m.hookd, _ = procCPU(m.pid)
	m.pg = m.backends(ctx)
}

// stop fills in res's CPU figures.
func (m *cpuMeter) stop(ctx context.Context, res *Result) {
	if now, ok := procCPU(m.pid); ok {
		res.CPU.Hookd, res.CPU.HookdKnown = now-m.hookd, true
	}
	if m.db.engine != "postgres" {
		return
	}
	end := m.backends(ctx)
	if len(end) == 0 {
		return
	}
	res.CPU.PostgresKnown, res.CPU.Backends = true, len(end)
	for pid, t := range end {
		res.CPU.Postgres += t - m.pg[pid] // a backend opened since starts at 0
	}
}

// backends returns the CPU so far of each PostgreSQL backend serving this
// run's hookd (its connections carry the run's application_name), where
// /proc shows them (the server runs on this machine).
func (m *cpuMeter) backends(ctx context.Context) map[int]time.Duration {
	if m.db.engine != "postgres" {
		return nil
	}
	conn, err := pgx.Connect(ctx, pgURL(m.db.url))
	if err != nil {
		return nil
	}
	defer conn.Close(context.WithoutCancel(ctx)) //nolint:errcheck // one read; the server ends the session either way
	rows, err := conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, m.db.appName)
	if err != nil {
		return nil
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil
	}
	out := map[int]time.Duration{}
	for _, pid := range pids {
		if t, ok := procCPU(int(pid)); ok {
			out[int(pid)] = t
		}
	}
	return out
}

// CPU is the processor time a run used, from /proc (utime + stime).
type CPU struct {
	// Hookd is the hookd process's: with an in-process run, the load
	// generator's and the receiver's too (use --spawn for hookd alone).
	Hookd      time.Duration
	HookdKnown bool
	// Postgres is the run's PostgreSQL backends' (Backends of them), not
	// the server's shared processes (WAL writer, checkpointer), which on a
	// shared server also work for others.
	Postgres      time.Duration
	Backends      int
	PostgresKnown bool
}

// Total is hookd's and its backends' CPU.
func (c CPU) Total() time.Duration { return c.Hookd + c.Postgres }
