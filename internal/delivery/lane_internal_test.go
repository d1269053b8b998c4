package delivery

import (
	"fmt"
	"slices"
	"testing"

	"github.com/riverqueue/river"
)

// TestPlaceCountsInFlight: the jobs an owner holds in flight count
// toward its share when its new jobs are placed, so an owner at its
// healthy share (its attempts hanging) sends every new job of a fast
// endpoint to the slow lane, behind the others (priority 2); a slow
// endpoint's jobs past the share of the slow lane stay there behind; and
// another owner's first share stays in the healthy lane at the default
// priority.
func TestPlaceCountsInFlight(t *testing.T) {
	sh := newShares(map[string]int{QueueDeliver: 4, QueueDeliverSlow: 4}, 0.5) // a share of 2
	for range 2 {
		if !sh.take(QueueDeliver, "noisy", true) {
			t.Fatal("noisy could not take its share")
		}
	}
	jobs := func(lanes ...string) []river.InsertManyParams {
		out := make([]river.InsertManyParams, len(lanes))
		for i, lane := range lanes {
			out[i] = river.InsertManyParams{Args: DeliverArgs{}, InsertOpts: &river.InsertOpts{Queue: lane}}
		}
		return out
	}
	placed := func(ps []river.InsertManyParams) []string {
		out := make([]string, len(ps))
		for i, p := range ps {
			out[i] = fmt.Sprintf("%s/%d", p.InsertOpts.Queue, max(1, p.InsertOpts.Priority))
		}
		return out
	}
	const h, s = QueueDeliver, QueueDeliverSlow
	noisy := jobs(h, h, s, s, s)
	sh.place("noisy", noisy)
	if got, want := placed(noisy), []string{s + "/2", s + "/2", s + "/1", s + "/1", s + "/2"}; !slices.Equal(got, want) {
		t.Fatalf("noisy at its healthy share: placed %v, want %v", got, want)
	}
	calm := jobs(h, h, h)
	sh.place("calm", calm)
	if got, want := placed(calm), []string{h + "/1", h + "/1", s + "/2"}; !slices.Equal(got, want) {
		t.Fatalf("calm holding nothing: placed %v, want %v", got, want)
	}
	sh.give(QueueDeliver, "noisy", true)
	again := jobs(h, h)
	sh.place("noisy", again)
	if got, want := placed(again), []string{h + "/1", s + "/2"}; !slices.Equal(got, want) {
		t.Fatalf("noisy with one slot free: placed %v, want %v", got, want)
	}
}

// TestSlowLaneCapsSlowEndpointsOnly: in the slow lane only a slow
// endpoint's jobs count toward the owner's share; a fast endpoint's there
// (a burst's overflow) run uncapped, and are still seen by the operator.
func TestSlowLaneCapsSlowEndpointsOnly(t *testing.T) {
	sh := newShares(map[string]int{QueueDeliver: 4, QueueDeliverSlow: 4}, 0.5)
	sh.seen("ep_slow", true)
	if !sh.counts(QueueDeliverSlow, "ep_slow") || sh.counts(QueueDeliverSlow, "ep_fast") || !sh.counts(QueueDeliver, "ep_fast") {
		t.Fatal("counts: want the slow endpoint's slow-lane job and every healthy-lane job counted, a fast endpoint's slow-lane job not")
	}
	for i := range 10 {
		if !sh.take(QueueDeliverSlow, "acme", false) {
			t.Fatalf("overflow job %d refused: overflow is not capped", i)
		}
	}
	for i := range 2 {
		if !sh.take(QueueDeliverSlow, "acme", true) {
			t.Fatalf("slow job %d refused within the share", i)
		}
	}
	if sh.take(QueueDeliverSlow, "acme", true) {
		t.Fatal("a third slow job taken past the share of 2")
	}
	if top, lanes := sh.top(1); len(top) != 1 || top[0].InFlight != 12 || lanes[QueueDeliverSlow] != 12 {
		t.Fatalf("operator's view %+v %v; want acme with all 12 in flight", top, lanes)
	}
	sh.seen("ep_slow", false)
	if sh.counts(QueueDeliverSlow, "ep_slow") {
		t.Fatal("an endpoint seen fast again still counted as slow")
	}
}
