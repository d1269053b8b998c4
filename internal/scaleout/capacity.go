// Package scaleout models hookd past one PostgreSQL primary
// (docs/scale-out.md, "Past one primary"): owners placed on independent
// clusters, each a complete hookd and River deployment on a PostgreSQL of
// its own, and an owner moved from one cluster to another under load.
//
// It is a model, not a coordinator: Plan shows what N clusters carry given
// the throughput one cluster was measured at, and SimulateMove runs the
// move's protocol (fence, copy, switch, hand over, release) against
// producers, retries, a stale router and a mover that crashes, over many
// random interleavings, and counts what a receiver would see. The
// protocol's steps are the ones an operator runs with hookd's own tools;
// the model is how we know their order is right before anyone runs them.
package scaleout

import (
	"cmp"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
)

// Owner is one producer's customer account and the deliveries per second
// it asks for.
type Owner struct {
	ID   string
	Rate float64
}

// ZipfOwners returns n owners asking for total deliveries/s between them,
// the k-th largest in proportion to 1/k^s: a few large owners and a long
// tail, as a webhook provider's customers are.
func ZipfOwners(n int, total, s float64) []Owner {
	w := make([]float64, n)
	var sum float64
	for k := range n {
		w[k] = 1 / math.Pow(float64(k+1), s)
		sum += w[k]
	}
	out := make([]Owner, n)
	for k := range n {
		out[k] = Owner{ID: "owner-" + strconv.Itoa(k), Rate: total * w[k] / sum}
	}
	return out
}

// A Placement puts each owner on a cluster: the result holds, for each
// owner in order, its cluster's index.
type Placement func(owners []Owner, clusters int) []int

// HashPlacement places owners by rendezvous hashing of their id: no table
// to keep, and adding a cluster moves only the owners the new one wins,
// but it is blind to load.
func HashPlacement(owners []Owner, clusters int) []int {
	out := make([]int, len(owners))
	for i, o := range owners {
		var best uint64
		for c := range clusters {
			h := fnv.New64a()
			_, _ = h.Write([]byte(o.ID + "@" + strconv.Itoa(c)))
			if s := h.Sum64(); c == 0 || s > best {
				best, out[i] = s, c
			}
		}
	}
	return out
}

// DirectoryPlacement places owners by a directory table filled with the
// owners' measured load: largest first, each on the least loaded cluster.
// It is what the routing layer's table allows and a hash does not.
func DirectoryPlacement(owners []Owner, clusters int) []int {
	order := make([]int, len(owners))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(owners[b].Rate, owners[a].Rate) })
	load := make([]float64, clusters)
	out := make([]int, len(owners))
	for _, i := range order {
		c := 0
		for k := 1; k < clusters; k++ {
			if load[k] < load[c] {
				c = k
			}
		}
		out[i] = c
		load[c] += owners[i].Rate
	}
	return out
}

// Capacity is what a set of clusters carries for a set of owners.
type Capacity struct {
	Clusters  int
	Offered   float64 // deliveries/s the owners ask for
	Delivered float64 // deliveries/s the clusters carry: each at most its capacity
	// Busiest is the most loaded cluster's demand over its capacity; above
	// 1 its owners' deliveries fall behind while others idle.
	Busiest float64
	// Unsplittable counts owners asking for more than one cluster carries:
	// no placement helps them (an owner lives on one cluster).
	Unsplittable int
}

// Plan returns what clusters, each carrying perCluster deliveries/s (the
// figure measured on one), deliver for owners placed by place.
func Plan(owners []Owner, clusters int, perCluster float64, place Placement) Capacity {
	at := place(owners, clusters)
	load := make([]float64, clusters)
	c := Capacity{Clusters: clusters}
	for i, o := range owners {
		load[at[i]] += o.Rate
		c.Offered += o.Rate
		if o.Rate > perCluster {
			c.Unsplittable++
		}
	}
	for _, l := range load {
		c.Delivered += min(l, perCluster)
		c.Busiest = max(c.Busiest, l/perCluster)
	}
	return c
}

// rng is the model's seeded source, so a failing seed can be replayed.
func rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }
