package bench

import (
	"strings"
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	// user nice system idle iowait irq softirq steal guest guest_nice
	a, ok := parseProcStat("cpu  100 1 50 1000 9 2 20 3 40 0\ncpu0 50 0 25 500 4 1 10 1 20 0\n")
	if !ok {
		t.Fatal("not parsed")
	}
	b, ok := parseProcStat("cpu  300 1 150 1500 19 2 70 3 90 0\n")
	if !ok {
		t.Fatal("not parsed")
	}
	d := b.sub(a)
	// busy: user +200, system +100, softirq +50 (guest is inside user);
	// idle +500 and iowait +10 are not busy.
	if want := 350 * time.Second / clockTick; d.Busy != want {
		t.Errorf("busy %v, want %v", d.Busy, want)
	}
	if want := 50 * time.Second / clockTick; d.IRQ != want {
		t.Errorf("irq %v, want %v", d.IRQ, want)
	}
	if want := 860 * time.Second / clockTick; d.Total != want {
		t.Errorf("total %v, want %v", d.Total, want)
	}
	for _, bad := range []string{"", "intr 1 2 3\n", "cpu 1 2 x 4 5 6 7 8\n", "cpu 1 2 3\n"} {
		if _, ok := parseProcStat(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestWriteMachineCPU(t *testing.T) {
	r := Result{Engine: "postgres", Received: 1000, Options: Options{Spawn: true}}
	r.CPU = CPU{
		Hookd: 200 * time.Millisecond, HookdKnown: true, Nodes: 1,
		Postgres: 150 * time.Millisecond, Backends: 3, PostgresKnown: true,
		PostgresShared: 10 * time.Millisecond, PostgresSharedKnown: true,
		Machine:      MachineCPU{Busy: 500 * time.Millisecond, IRQ: 20 * time.Millisecond, Total: 2 * time.Second},
		MachineKnown: true, Probe: 100 * time.Millisecond, Wall: time.Second,
	}
	var b strings.Builder
	if _, err := r.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	// Stack: 500 − 100 = 400 ms over 1,000 deliveries; rest: 400 − 200 − 150 − 10.
	for _, want := range []string{
		"cpu stack per delivery 0.400 ms (whole machine less the probe: hookd 0.200, backends 0.150, server 0.010, rest 0.040)",
		"cpu rest               0.04 s",
		"cpu machine            0.50 s busy of 2.00 s (25 %",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
	r.Options.Spawn = false
	b.Reset()
	if _, err := r.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "cpu stack") {
		t.Errorf("an in-process run cannot separate the probe, yet:\n%s", b.String())
	}
}

func TestNodesNeedSpawn(t *testing.T) {
	o := Options{Nodes: 2}
	o.defaults()
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--nodes needs --spawn") {
		t.Errorf("nodes without spawn: %v", err)
	}
	o.Spawn = true
	if err := o.Validate(); err != nil {
		t.Errorf("nodes with spawn: %v", err)
	}
}
