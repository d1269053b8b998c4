package bench_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/bench"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/destination/brokertest"
)

// TestRun runs a tiny bench on each engine and profile: every delivery
// arrives, every signature verifies. Timings are not asserted. On
// PostgreSQL hookd's tables are partitioned by day (the current day, the
// three after it and the default), or not with Unpartitioned.
func TestRun(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name          string
		db            func(t *testing.T) string
		profile       string
		unpartitioned bool
		partitions    int
	}{
		{"sqlite/standard", func(*testing.T) string { return "sqlite" }, bench.ProfileStandard, false, 0},
		{"sqlite/kwork", func(*testing.T) string { return "sqlite" }, bench.ProfileKwork, false, 0},
		{"postgres/standard", func(t *testing.T) string { return dbtest.PostgresURL(t) }, bench.ProfileStandard, false, 5},
		{"postgres/unpartitioned", func(t *testing.T) string { return dbtest.PostgresURL(t) }, bench.ProfileStandard, true, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var progress strings.Builder
			res, err := bench.Run(context.Background(), bench.Options{
				DB: c.db(t), Events: 20, Endpoints: 3, Owners: 1, Profile: c.profile, Unpartitioned: c.unpartitioned,
				// The lease's 2 s snooze would make this test wait; it is
				// not what is being checked here.
				BusySnooze:   50 * time.Millisecond,
				StallTimeout: 30 * time.Second, Timeout: 2 * time.Minute,
				Progress: &progress,
			})
			if err != nil {
				t.Fatalf("Run: %v\n%s", err, progress.String())
			}
			var out strings.Builder
			_, _ = res.WriteTo(&out)
			t.Logf("\n%s", out.String())
			if res.Expected != 60 {
				t.Errorf("expected deliveries = %d, want 60 (20 events × 3 endpoints)", res.Expected)
			}
			if res.Partitions != c.partitions {
				t.Errorf("the delivery table had %d partitions, want %d", res.Partitions, c.partitions)
			}
			if res.Lost != 0 || res.BadSignatures != 0 || res.Stray != 0 || res.Redone != 0 || !res.OK() {
				t.Errorf("lost %d, bad signatures %d, stray %d, redone %d; want all 0", res.Lost, res.BadSignatures, res.Stray, res.Redone)
			}
			if c.profile == bench.ProfileStandard && res.MaxInFlight > 1 {
				t.Errorf("max in flight = %d at one endpoint; the standard profile's lease allows 1", res.MaxInFlight)
			}
			if res.Received != 60 || res.Requests < 60 {
				t.Errorf("received %d pairs in %d requests, want 60", res.Received, res.Requests)
			}
		})
	}
}

// TestRunWarmup: warm-up events are delivered before the measured run and
// counted in none of its figures (open loop, to cover both publishers'
// ranges with TestRun's closed loop).
func TestRunWarmup(t *testing.T) {
	t.Parallel()
	var progress strings.Builder
	res, err := bench.Run(context.Background(), bench.Options{
		DB: "sqlite", Events: 12, Warmup: 7, Endpoints: 4, Owners: 2, Rate: 200,
		BusySnooze: 50 * time.Millisecond, StallTimeout: 30 * time.Second, Timeout: 2 * time.Minute,
		Progress: &progress,
	})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, progress.String())
	}
	if !strings.Contains(progress.String(), "warming up: 7 events") {
		t.Errorf("progress does not mention the warm-up:\n%s", progress.String())
	}
	// 12 events over 2 owners of 2 endpoints each: 24 pairs.
	if res.Expected != 24 || res.Received != 24 || res.Requests != 24 || res.Stray != 0 || !res.OK() {
		t.Fatalf("expected %d, received %d in %d requests, stray %d; want 24, 24, 24, 0", res.Expected, res.Received, res.Requests, res.Stray)
	}
}

// TestRunSinglePublishes: with a batch size of 1 every event is its own
// POST /api/v1/events, from many clients at once (the group commit's load),
// and still every delivery arrives; without subscribers the run measures
// publishing alone. Both report request times and the CPU from /proc; on
// PostgreSQL, the backends' too.
func TestRunSinglePublishes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		db          func(t *testing.T) string
		publishOnly bool
		generator   string
	}{
		{"sqlite/delivering", func(*testing.T) string { return "sqlite" }, false, ""},
		{"sqlite/delivering/conns", func(*testing.T) string { return "sqlite" }, false, bench.GeneratorConns},
		{"sqlite/publish-only", func(*testing.T) string { return "sqlite" }, true, ""},
		{"postgres/publish-only", func(t *testing.T) string { return dbtest.PostgresURL(t) }, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var progress strings.Builder
			res, err := bench.Run(context.Background(), bench.Options{
				DB: c.db(t), Events: 100, Endpoints: 2, Owners: 1, PublishOnly: c.publishOnly,
				BatchSize: 1, Publishers: 16, Generator: c.generator,
				BusySnooze: 50 * time.Millisecond, StallTimeout: 30 * time.Second, Timeout: 2 * time.Minute,
				Progress: &progress,
			})
			if err != nil {
				t.Fatalf("Run: %v\n%s", err, progress.String())
			}
			var out strings.Builder
			_, _ = res.WriteTo(&out)
			t.Logf("\n%s", out.String())
			want := 200
			if c.publishOnly {
				want = 0
			}
			if res.Expected != want || res.Received != want || !res.OK() {
				t.Fatalf("expected %d, received %d, ok %v; want %d", res.Expected, res.Received, res.OK(), want)
			}
			if res.PublishLatency.P50 <= 0 || res.PublishLatency.P99 < res.PublishLatency.P50 {
				t.Errorf("publish request times %+v", res.PublishLatency)
			}
			if !res.CPU.HookdKnown || res.CPU.Hookd <= 0 { // 100 requests take more than a clock tick (10 ms)
				t.Errorf("hookd's CPU not measured: %+v", res.CPU)
			}
			if res.Engine == "postgres" && (!res.CPU.PostgresKnown || res.CPU.Backends == 0) {
				t.Errorf("PostgreSQL backends' CPU not measured: %+v", res.CPU)
			}
			if res.Machine.Cores < 1 || !strings.Contains(out.String(), "machine ") {
				t.Errorf("machine not reported: %+v", res.Machine)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	valid := bench.Options{DB: "sqlite", Events: 1, Endpoints: 1, Owners: 1, Profile: "standard", BatchSize: 1, Publishers: 1}
	for _, g := range []string{"", bench.GeneratorLoop, bench.GeneratorConns, bench.GeneratorNetHTTP} {
		o := valid
		o.Generator = g
		if err := o.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v, want nil", o, err)
		}
	}
	for _, o := range []bench.Options{
		{DB: "sqlite", Events: 1, Endpoints: 1, Owners: 1, Profile: "standard", BatchSize: 1, Publishers: 1, Generator: "wrk"},
		{DB: "sqlite", Events: 1, Endpoints: 1, Owners: 1, Profile: "standard", BatchSize: 1, Publishers: 1, Generator: bench.GeneratorLoop, Rate: 100},
		{DB: "mysql://x", Events: 1, Endpoints: 1, Owners: 1, Profile: "standard", BatchSize: 1, Publishers: 1},
		{DB: "sqlite", Events: 1, Endpoints: 1, Owners: 2, Profile: "standard", BatchSize: 1, Publishers: 1},
		{DB: "sqlite", Events: 1, Endpoints: 1, Owners: 1, Profile: "other", BatchSize: 1, Publishers: 1},
		{DB: "sqlite", Events: 1, Endpoints: 1, Owners: 1, Profile: "standard", BatchSize: 1001, Publishers: 1},
		{DB: "sqlite", Events: 1, Endpoints: 1, Owners: 1, Profile: "standard", BatchSize: 1, Publishers: 1, Spawn: true, BusySnooze: time.Second},
		{DB: "sqlite", Events: 1, Warmup: -1, Endpoints: 1, Owners: 1, Profile: "standard", BatchSize: 1, Publishers: 1},
		{DB: "sqlite", Events: 1, Endpoints: 1, Owners: 1, Profile: "standard", BatchSize: 1, Publishers: 1, Executable: "/bin/hookd"},
		{DB: "sqlite", Events: 1, Endpoints: 1, Owners: 1, Profile: "standard", BatchSize: 1, Publishers: 1, Unpartitioned: true, Partitions: 30},
	} {
		if err := o.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", o)
		}
	}
}

// TestRunLargeBatches: batches of 1,000 events, whose answers hookd sends
// chunked in several writes, publish through the default load generator.
// (The loop once failed when a read ended between a chunk's data and its
// CRLF; TestLoopAnswersInParts cuts answers there on purpose, this run
// only may.)
func TestRunLargeBatches(t *testing.T) {
	t.Parallel()
	var progress strings.Builder
	res, err := bench.Run(context.Background(), bench.Options{
		DB: "sqlite", Events: 3000, PublishOnly: true, BatchSize: 1000, Publishers: 3,
		StallTimeout: 30 * time.Second, Timeout: 2 * time.Minute, Progress: &progress,
	})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, progress.String())
	}
	if !res.OK() || res.PublishLatency.P50 <= 0 {
		t.Fatalf("ok %v, publish request times %+v", res.OK(), res.PublishLatency)
	}
}

// TestRunDestination: endpoints on the machine's Redis and RabbitMQ, a
// consumer verifying and counting every message: all arrive, signed.
func TestRunDestination(t *testing.T) {
	t.Parallel()
	for _, d := range []struct{ kind, addr string }{{bench.DestinationRedis, "127.0.0.1:6379"}, {bench.DestinationAMQP, "127.0.0.1:5672"}} {
		t.Run(d.kind, func(t *testing.T) {
			brokertest.Need(t, d.kind, d.addr)
			var progress strings.Builder
			res, err := bench.Run(context.Background(), bench.Options{
				DB: "sqlite", Events: 20, Endpoints: 3, Owners: 1, Destination: d.kind,
				BusySnooze: 50 * time.Millisecond, StallTimeout: 30 * time.Second, Timeout: 2 * time.Minute,
				Progress: &progress,
			})
			if err != nil {
				t.Fatalf("Run: %v\n%s", err, progress.String())
			}
			if res.Expected != 60 || res.Received != 60 || res.BadSignatures != 0 || !res.OK() {
				t.Fatalf("expected %d, received %d, bad %d; want 60, 60, 0", res.Expected, res.Received, res.BadSignatures)
			}
		})
	}
}

// engines are the two databases a test runs the bench on.
var engines = []struct {
	name string
	db   func(t *testing.T) string
}{
	{"sqlite", func(*testing.T) string { return "sqlite" }},
	{"postgres", func(t *testing.T) string { return dbtest.PostgresURL(t) }},
}

// TestSoak fills a small history on each engine and times the pages at
// that size: every filled delivery written, each page answered with the
// rows it must show (the probes check them), the tables measured, and
// the run's deliveries all arriving beside the history.
func TestSoak(t *testing.T) {
	t.Parallel()
	for _, c := range engines {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var progress strings.Builder
			res, err := bench.Run(context.Background(), bench.Options{
				DB: c.db(t), Soak: 6000, Events: 10, Endpoints: 4, Owners: 2,
				BusySnooze: 50 * time.Millisecond, StallTimeout: 30 * time.Second, Timeout: 2 * time.Minute,
				Progress: &progress,
			})
			if err != nil {
				t.Fatalf("Run: %v\n%s", err, progress.String())
			}
			// 2 endpoints an owner: 3,000 events, 2 deliveries each.
			if res.Filled != 6000 {
				t.Errorf("filled %d deliveries, want 6000", res.Filled)
			}
			if len(res.Pages) != 11 {
				t.Errorf("%d pages timed, want the 11 of pages.go: %+v", len(res.Pages), res.Pages)
			}
			vacuumed := 0
			if c.name == "postgres" {
				vacuumed = 11
			}
			if len(res.PagesVacuumed) != vacuumed || (vacuumed > 0) != (res.Vacuumed > 0) {
				t.Errorf("%d pages timed after a VACUUM of %v, want %d", len(res.PagesVacuumed), res.Vacuumed, vacuumed)
			}
			for _, pg := range append(res.Pages, res.PagesVacuumed...) {
				if pg.P50 <= 0 || pg.P99 < pg.P50 || pg.Max < pg.P99 || pg.First <= 0 || pg.First > pg.Max {
					t.Errorf("page %s: p50 %v, p99 %v, max %v, first %v", pg.Name, pg.P50, pg.P99, pg.Max, pg.First)
				}
			}
			if res.TableBytes < 6000*100 {
				t.Errorf("tables hold %d bytes for 6,000 deliveries: not measured", res.TableBytes)
			}
			if !res.OK() || res.Received != 20 {
				t.Errorf("the run beside the history: received %d of 20, lost %d", res.Received, res.Lost)
			}
		})
	}
}

// TestPrunePass fills a small history on each engine and runs the two
// measured retention passes: each deletes about the history's oldest
// 5 days (a fifth), in batches each timed; the second beside the
// publish probe, whose requests are timed before and during it; the
// run's own deliveries all arrive afterwards. On PostgreSQL's daily
// partitions (a 20-day window: a day is a tenth of it at most) the
// expired days go by the partition instead: at least four dropped a
// pass, and the row loop leaves the cutoff's day to its drop; on
// unpartitioned tables the row loop deletes them all.
func TestPrunePass(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name          string
		db            func(t *testing.T) string
		unpartitioned bool
	}{
		{"sqlite", engines[0].db, false},
		{"postgres", engines[1].db, false},
		{"postgres-unpartitioned", engines[1].db, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var progress strings.Builder
			res, err := bench.Run(context.Background(), bench.Options{
				DB: c.db(t), Soak: 10000, PrunePass: 5 * 24 * time.Hour, Events: 10, Endpoints: 4, Owners: 2, Unpartitioned: c.unpartitioned,
				BusySnooze: 50 * time.Millisecond, StallTimeout: 30 * time.Second, Timeout: 2 * time.Minute,
				Progress: &progress,
			})
			if err != nil {
				t.Fatalf("Run: %v\n%s", err, progress.String())
			}
			if len(res.PrunePasses) != 2 {
				t.Fatalf("%d passes measured, want 2", len(res.PrunePasses))
			}
			if res.TableBytes < 10000*100 {
				t.Errorf("tables hold %d bytes for 10,000 deliveries: not measured", res.TableBytes)
			}
			partitioned := c.name == "postgres"
			for _, pp := range res.PrunePasses {
				// A fifth of 10,000 deliveries (2 an event), give or take
				// the minutes between the fill and the pass.
				switch {
				case partitioned:
					// Four or five whole days dropped; the cutoff's day,
					// up to one of the five, left to its own drop.
					if gone := pp.Deliveries + pp.DroppedRows; pp.PartitionsDropped < 4 || gone < 1500 || gone > 2100 || pp.Deliveries > 100 {
						t.Errorf("pass %s: %d partitions dropped with %d deliveries, %d deleted row by row; want 4–5 days' partitions and 1,500–2,100 deliveries, nearly none row by row",
							pp.Label, pp.PartitionsDropped, pp.DroppedRows, pp.Deliveries)
					}
					if len(pp.Drops) < 2*pp.PartitionsDropped {
						t.Errorf("pass %s: %d DROP statements timed for %d partitions, want two each (events, deliveries)", pp.Label, len(pp.Drops), pp.PartitionsDropped)
					}
				case pp.Deliveries < 1900 || pp.Deliveries > 2100 || pp.Events < 950 || pp.Events > 1050:
					t.Errorf("pass %s deleted %d deliveries and %d events, want about 2,000 and 1,000", pp.Label, pp.Deliveries, pp.Events)
				}
				if !partitioned && pp.PartitionsDropped != 0 {
					t.Errorf("pass %s dropped %d partitions of an unpartitioned table", pp.Label, pp.PartitionsDropped)
				}
				if len(pp.Batches) < 3 || pp.Took <= 0 {
					t.Errorf("pass %s: %d batches timed in %v; want at least one a table (deliveries, events, polls)", pp.Label, len(pp.Batches), pp.Took)
				}
				if c.name == "sqlite" && pp.ReadBytes < 0 {
					t.Errorf("pass %s: this process's I/O not read", pp.Label)
				}
				if c.name == "sqlite" && len(pp.Waits) != len(pp.Batches) {
					t.Errorf("pass %s: %d lock waits timed for %d batches, want one each", pp.Label, len(pp.Waits), len(pp.Batches))
				}
				// (The backends' CPU is in clock ticks: a partition's drop may
				// take under one.)
				if c.name != "sqlite" && (pp.WALBytes <= 0 || pp.BackendCPU < 0) {
					t.Errorf("pass %s: WAL %d bytes, backends' CPU %v; want both measured", pp.Label, pp.WALBytes, pp.BackendCPU)
				}
			}
			if loaded := res.PrunePasses[1]; len(loaded.ProbeBase) < 100 || len(loaded.ProbeDuring) == 0 {
				t.Errorf("probe: %d publishes before the pass, %d during it; want 10 s at 50/s before, and some during", len(loaded.ProbeBase), len(loaded.ProbeDuring))
			}
			if !res.OK() || res.Received != 20 {
				t.Errorf("the run after the passes: received %d of 20, lost %d, stray %d", res.Received, res.Lost, res.Stray)
			}
		})
	}
}

// TestSoakRefusesBadOptions: a negative soak, or one with nothing to
// fill it with, is refused before anything starts.
func TestSoakRefusesBadOptions(t *testing.T) {
	t.Parallel()
	for _, o := range []bench.Options{{Soak: -1}, {Soak: 10, PublishOnly: true}, {PrunePass: time.Hour}, {Soak: 10, PrunePass: 13 * 24 * time.Hour}} {
		if _, err := bench.Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "soak") {
			t.Errorf("options %+v: err %v, want one naming --soak", o, err)
		}
	}
}

// TestSeries samples an open-loop run and writes its series: a CSV row
// per sample with the tables' size and the interval's deliveries, and an
// SVG that draws them.
func TestSeries(t *testing.T) {
	t.Parallel()
	prefix := filepath.Join(t.TempDir(), "steady")
	var progress strings.Builder
	res, err := bench.Run(context.Background(), bench.Options{
		Events: 120, Endpoints: 2, Owners: 1, Rate: 60, Retention: 2 * time.Minute,
		Series: prefix, SampleEvery: 250 * time.Millisecond,
		BusySnooze: 50 * time.Millisecond, StallTimeout: 30 * time.Second, Timeout: 2 * time.Minute,
		Progress: &progress,
	})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, progress.String())
	}
	if !res.OK() {
		t.Fatalf("lost %d", res.Lost)
	}
	raw, err := os.ReadFile(prefix + ".csv")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(raw)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// 2 s of publishing at 60/s, a sample every 250 ms.
	if len(rows) < 6 || strings.Join(rows[0], ",") != "seconds,table_bytes,file_bytes,deliveries_per_s,publish_p99_ms" {
		t.Fatalf("series %q: want a header and a row a sample", raw)
	}
	var grew, file, delivered bool
	for _, r := range rows[1:] {
		size, _ := strconv.ParseInt(r[1], 10, 64)
		fileBytes, _ := strconv.ParseInt(r[2], 10, 64)
		rate, _ := strconv.ParseFloat(r[3], 64)
		if size <= 0 {
			t.Errorf("sample %v: table size %d; a size not read is not a sample", r, size)
		}
		grew = grew || size > 0
		file = file || fileBytes >= size && fileBytes > 0 // the file holds the tables, and more
		delivered = delivered || rate > 0
	}
	if !grew || !file || !delivered {
		t.Errorf("series %q: no size, no file size or no deliveries measured", raw)
	}
	svg, err := os.ReadFile(prefix + ".svg")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(svg), "<polyline"); n != 4 || !strings.Contains(string(svg), "tables and indexes") || !strings.Contains(string(svg), "SQLite file + WAL") {
		t.Errorf("chart has %d lines, want 4 (size, file, deliveries, publish p99):\n%.500s", n, svg)
	}
	if _, err := bench.Run(context.Background(), bench.Options{Retention: 30 * time.Second}); err == nil || !strings.Contains(err.Error(), "--retention") {
		t.Errorf("a retention under a minute: err %v, want one naming --retention", err)
	}
}
