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
// start and stop, and the whole machine's busy time beside it.
type cpuMeter struct {
	pids    []int // hookd's processes (one per node)
	db      *database
	hookd   time.Duration
	pg      map[int]time.Duration // backend pid → CPU at start
	shared  map[int]time.Duration // the server's own processes (WAL writer, …) → CPU at start
	machine machineCPU
	probe   time.Duration
	began   time.Time
}

func (m *cpuMeter) start(ctx context.Context) {
	m.hookd, _ = m.hookdCPU()
	m.pg, m.shared = m.backends(ctx)
	m.probe, _ = selfCPU()
	m.machine, _ = readMachineCPU()
	m.began = time.Now()
}

func (m *cpuMeter) hookdCPU() (time.Duration, bool) {
	var sum time.Duration
	for _, pid := range m.pids {
		t, ok := procCPU(pid)
		if !ok {
			return 0, false
		}
		sum += t
	}
	return sum, true
}

// stop fills in res's CPU figures.
func (m *cpuMeter) stop(ctx context.Context, res *Result) {
	// The machine and the probe first: the reads below (a connection to
	// PostgreSQL) are the meter's own work, not the run's.
	if now, ok := readMachineCPU(); ok && m.machine.total > 0 {
		res.CPU.Machine, res.CPU.MachineKnown = now.sub(m.machine), true
		res.CPU.Wall = time.Since(m.began)
	}
	if now, ok := selfCPU(); ok {
		res.CPU.Probe = now - m.probe
	}
	if now, ok := m.hookdCPU(); ok {
		res.CPU.Hookd, res.CPU.HookdKnown = now-m.hookd, true
	}
	res.CPU.Nodes = len(m.pids)
	if m.db.engine != "postgres" {
		return
	}
	end, shared := m.backends(ctx)
	if len(end) == 0 {
		return
	}
	res.CPU.PostgresKnown, res.CPU.Backends = true, len(end)
	for pid, t := range end {
		res.CPU.Postgres += t - m.pg[pid] // a backend opened since starts at 0
	}
	if len(shared) > 0 {
		res.CPU.PostgresSharedKnown = true
		for pid, t := range shared {
			if t0, ok := m.shared[pid]; ok {
				res.CPU.PostgresShared += t - t0
			}
		}
	}
}

// backends returns the CPU so far of each PostgreSQL backend serving this
// run's hookd (its connections carry the run's application_name), and of
// the server's own processes (WAL writer, checkpointer, background writer,
// launchers), where /proc shows them (the server runs on this machine).
func (m *cpuMeter) backends(ctx context.Context) (hookd, shared map[int]time.Duration) {
	if m.db.engine != "postgres" {
		return nil, nil
	}
	conn, err := pgx.Connect(ctx, pgURL(m.db.url))
	if err != nil {
		return nil, nil
	}
	defer conn.Close(context.WithoutCancel(ctx)) //nolint:errcheck // one read; the server ends the session either way
	rows, err := conn.Query(ctx, `SELECT pid, application_name = $1 FROM pg_stat_activity
		WHERE application_name = $1 OR backend_type NOT IN ('client backend', 'autovacuum worker', 'parallel worker')`, m.db.appName)
	if err != nil {
		return nil, nil
	}
	type proc struct {
		PID   int32
		Hookd bool
	}
	procs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[proc])
	if err != nil {
		return nil, nil
	}
	hookd, shared = map[int]time.Duration{}, map[int]time.Duration{}
	for _, p := range procs {
		if t, ok := procCPU(int(p.PID)); ok {
			if p.Hookd {
				hookd[int(p.PID)] = t
			} else {
				shared[int(p.PID)] = t
			}
		}
	}
	return hookd, shared
}

// machineCPU is /proc/stat's first line: every CPU's time so far, in
// USER_HZ ticks.
type machineCPU struct {
	busy, irq, total int64 // busy includes irq (hard and soft); total includes idle and iowait
}

func (a machineCPU) sub(b machineCPU) MachineCPU {
	tick := func(n int64) time.Duration { return time.Duration(n) * time.Second / clockTick }
	return MachineCPU{Busy: tick(a.busy - b.busy), IRQ: tick(a.irq - b.irq), Total: tick(a.total - b.total)}
}

// readMachineCPU reads /proc/stat: false where there is none.
func readMachineCPU() (machineCPU, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineCPU{}, false
	}
	return parseProcStat(string(b))
}

// parseProcStat reads /proc/stat's aggregate "cpu" line.
func parseProcStat(stat string) (machineCPU, bool) {
	var err error
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return machineCPU{}, false
	}
	var v [8]int64 // user nice system idle iowait irq softirq steal (guest is inside user)
	for i := range v {
		if v[i], err = strconv.ParseInt(f[i+1], 10, 64); err != nil {
			return machineCPU{}, false
		}
	}
	m := machineCPU{irq: v[5] + v[6]}
	m.busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
	m.total = m.busy + v[3] + v[4]
	return m, true
}

// selfCPU is this process's own CPU (every thread's user and system time):
// with --spawn, the probe's (load generator and receiver).
func selfCPU() (time.Duration, bool) { return procCPU(os.Getpid()) }

// MachineCPU is the whole machine's CPU time over a run, from /proc/stat.
type MachineCPU struct {
	// Busy is every CPU's non-idle time (user, nice, system, irq,
	// softirq, steal), IRQ the part of it in interrupts (the loopback
	// network's softirq mostly), Total Busy plus idle and iowait.
	Busy, IRQ, Total time.Duration
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
	// Nodes is how many hookd processes Hookd sums.
	Nodes int
	// PostgresShared is the server's own processes' (WAL writer,
	// checkpointer, background writer, launchers): they also work for
	// whatever else uses the server.
	PostgresShared      time.Duration
	PostgresSharedKnown bool
	// Machine is the whole machine's CPU over Wall; Probe is this bench
	// process's own (/proc/self/stat), which Machine less it is the stack's
	// as an outside probe measures it (issue 48 §3): hookd, PostgreSQL,
	// the kernel's work for both, and whatever else ran meanwhile.
	Machine      MachineCPU
	MachineKnown bool
	Probe        time.Duration
	Wall         time.Duration
}

// Stack is the whole machine's busy time less the probe's own.
func (c CPU) Stack() time.Duration { return c.Machine.Busy - c.Probe }

// Total is hookd's and its backends' CPU.
func (c CPU) Total() time.Duration { return c.Hookd + c.Postgres }
