package scaleout_test

import (
	"testing"

	"github.com/hookd/hookd/internal/scaleout"
)

// busy is a move under load with everything that can go wrong going wrong
// often: resent publishes, failed attempts, a stale router, a mover that dies.
func busy(seed uint64, naive bool) scaleout.MoveConfig {
	return scaleout.MoveConfig{Seed: seed, Endpoints: 4, Publishes: 60, Resend: 0.2, Fail: 0.3, Crash: 0.1, Stale: 0.3, Naive: naive}
}

func TestMoveLosesNothing(t *testing.T) {
	var refused, restarts, held int
	for seed := range uint64(200) {
		r := scaleout.SimulateMove(busy(seed, false))
		if !r.OK() {
			t.Fatalf("seed %d: %v", seed, r)
		}
		if r.Events != 60 {
			t.Fatalf("seed %d: %d events accepted, want one a key (60): %v", seed, r.Events, r)
		}
		refused += r.Refused
		restarts += r.MoverRestarts
		held = max(held, r.HeldMax)
	}
	// The runs must have met what the protocol is there for, or passing
	// says nothing.
	if refused == 0 || restarts == 0 || held == 0 {
		t.Fatalf("the runs never exercised the fence (refused %d), a mover's crash (%d) or the hold (%d)", refused, restarts, held)
	}
}

// TestNaiveMoveIsCaught: a move without the fence, the claim and the hold
// (switch the directory, copy the pending deliveries) must show each kind
// of damage in some run; a model that cannot see them proves nothing.
func TestNaiveMoveIsCaught(t *testing.T) {
	var dup, double, disorder int
	for seed := range uint64(200) {
		r := scaleout.SimulateMove(busy(seed, true))
		dup += r.Duplicated
		double += r.DoubleEvents
		disorder += r.OutOfOrder
		if r.Lost != 0 {
			t.Fatalf("seed %d: the naive move never converged: %v", seed, r)
		}
	}
	if dup == 0 || double == 0 || disorder == 0 {
		t.Fatalf("the naive move should duplicate (%d), double an event (%d) and disorder (%d)", dup, double, disorder)
	}
}

func TestPlan(t *testing.T) {
	const per = 5000.0
	owners := scaleout.ZipfOwners(1000, 8*per, 1.1)
	var total float64
	for _, o := range owners {
		total += o.Rate
	}
	if total < 8*per-1 || total > 8*per+1 {
		t.Fatalf("owners ask for %.0f/s, want %.0f", total, 8*per)
	}
	one := scaleout.Plan(owners, 1, per, scaleout.DirectoryPlacement)
	if one.Delivered != per || one.Busiest < 7.99 {
		t.Fatalf("one cluster: %+v, want it full at %.0f/s and 8× over", one, per)
	}
	prev := one.Delivered
	for _, n := range []int{2, 4, 8, 16} {
		dir := scaleout.Plan(owners, n, per, scaleout.DirectoryPlacement)
		hash := scaleout.Plan(owners, n, per, scaleout.HashPlacement)
		if dir.Delivered < prev || dir.Delivered > float64(n)*per {
			t.Fatalf("%d clusters deliver %.0f/s after %.0f with fewer (each %.0f)", n, dir.Delivered, prev, per)
		}
		if dir.Delivered < hash.Delivered || dir.Busiest > hash.Busiest {
			t.Fatalf("%d clusters: the directory (%+v) should do at least as well as the hash (%+v)", n, dir, hash)
		}
		prev = dir.Delivered
	}
	// The largest owner of a skewed 1,000 asks for more than one cluster
	// carries at this size; the plan must say so rather than hide it.
	if big := scaleout.Plan(owners, 16, per, scaleout.DirectoryPlacement); big.Unsplittable != 1 || big.Delivered >= big.Offered {
		t.Fatalf("16 clusters: %+v, want the one owner above a cluster's %0.f/s named and its excess undelivered", big, per)
	}
}
