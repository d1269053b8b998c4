// Command sim runs the scale-out model (docs/scale-out.md, "Past one
// primary"): what N clusters carry for a skewed set of owners, given the
// deliveries/s one cluster was measured at, and many simulated owner moves
// under load, with what their receivers saw.
//
//	go run ./internal/scaleout/sim -cores 2 -per-core 2650 -offered 40000 -moves 2000
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/hookd/hookd/internal/scaleout"
)

func main() {
	perCore := flag.Float64("per-core", 2650, "deliveries/s one core of a cluster carries, hookd and PostgreSQL together (measured: docs/scale-out.md, \"Per-core figures\")")
	cores := flag.Int("cores", 2, "cores of one cluster (hookd and PostgreSQL on them together)")
	per := flag.Float64("per-cluster", 0, "deliveries/s one cluster carries; 0: -cores × -per-core")
	offered := flag.Float64("offered", 40000, "deliveries/s all owners ask for")
	owners := flag.Int("owners", 1000, "owners")
	skew := flag.Float64("skew", 1.1, "Zipf exponent of the owners' load (0: all equal)")
	clusters := flag.String("clusters", "1,2,4,8,16", "cluster counts to plan")
	moves := flag.Int("moves", 1000, "simulated moves (one seed each)")
	flag.Parse()
	if *per == 0 {
		*per = float64(*cores) * *perCore
	}

	all := scaleout.ZipfOwners(*owners, *offered, *skew)
	fmt.Printf("owners %d asking %.0f deliveries/s (Zipf %.2f; the largest %.0f/s), one cluster carries %.0f/s\n\n",
		*owners, *offered, *skew, all[0].Rate, *per)
	fmt.Printf("%-9s %-10s %12s %9s %13s\n", "clusters", "placement", "delivered/s", "busiest", "unsplittable")
	for _, f := range strings.Split(*clusters, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "sim: -clusters: %q is not a count\n", f)
			os.Exit(2)
		}
		for _, p := range []struct {
			name  string
			place scaleout.Placement
		}{{"hash", scaleout.HashPlacement}, {"directory", scaleout.DirectoryPlacement}} {
			c := scaleout.Plan(all, n, *per, p.place)
			fmt.Printf("%-9d %-10s %12.0f %8.2f× %13d\n", n, p.name, c.Delivered, c.Busiest, c.Unsplittable)
		}
	}

	fmt.Printf("\n%d moves under load (4 endpoints, the first ordered; 60 publishes; 20%% resent, 30%% of attempts fail, a stale route 30%%, the mover dies after 10%% of its steps):\n", *moves)
	for _, naive := range []bool{false, true} {
		var sum scaleout.MoveResult
		bad := 0
		for seed := range uint64(*moves) {
			r := scaleout.SimulateMove(scaleout.MoveConfig{Seed: seed, Endpoints: 4, Publishes: 60, Resend: 0.2, Fail: 0.3, Crash: 0.1, Stale: 0.3, Naive: naive})
			if !r.OK() {
				bad++
			}
			sum.Events += r.Events
			sum.Deliveries += r.Deliveries
			sum.Lost += r.Lost
			sum.Duplicated += r.Duplicated
			sum.DoubleEvents += r.DoubleEvents
			sum.OutOfOrder += r.OutOfOrder
			sum.Refused += r.Refused
			sum.MoverRestarts += r.MoverRestarts
			sum.Ticks += r.Ticks
			sum.HeldMax = max(sum.HeldMax, r.HeldMax)
		}
		name := "fence, copy, switch, hand over, release"
		if naive {
			name = "naive (switch, copy pending)"
		}
		fmt.Printf("  %-40s moves with a defect %d of %d; %v\n", name+":", bad, *moves, sum)
	}
}
