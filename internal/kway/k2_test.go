package kway

import (
	"flag"
	"testing"

	"github.com/gpusched/gpusched/internal/teeth"
	"pgregory.net/rapid"
)

// Issue #19: with K = 2 the partitioner ignored Imbalance (the larger part
// was always ceil(W/2)), so slack never helped.

// TestK2MoreSlackStaysFeasible: for K = 2 and any tolerance, increasing
// ones included, the result is feasible and every part weighs at most
// max(floor((1+imbalance) x target), ceil(target) + w_max - 1), the rule
// Options documents (checkResult recomputes it independently).
func TestK2MoreSlackStaysFeasible(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := genGraph(t, 1, 80, rapid.SampledFrom([]int64{1, 1, 4}).Draw(t, "maxvw"))
		method := rapid.SampledFrom([]Method{KWay, RecursiveBisection}).Draw(t, "method")
		seed := rapid.Uint64().Draw(t, "seed")
		eps := 0.0
		for range 3 {
			opts := Options{K: 2, Imbalance: eps, Seed: seed, Method: method}
			res, err := Partition(g, opts)
			if err != nil {
				t.Fatalf("imbalance %v: %v", eps, err)
			}
			if err := checkResult(g, opts, res); err != nil {
				t.Fatalf("imbalance %v: %v", eps, err)
			}
			eps += rapid.Float64Range(0, 0.3).Draw(t, "more slack")
		}
	})
}

// plantedPair builds two clusters of a and b unit-weight vertices joined
// by one edge of weight 1. Each cluster is a ring of heavy edges (5-9)
// with as many to three times as many random heavy chords (5-9), so any
// cut through a cluster costs at least 10 (and a cluster is no long path
// that FM would have to walk along at zero gain): when
// the larger cluster fits in a part, the only partition into two parts of
// cut 1 puts each cluster in its own part.
func plantedPair(t *rapid.T, a, b int) *Graph {
	bld := NewBuilder(a + b)
	ring := func(first, size int) {
		for i := range size {
			bld.AddEdge(first+i, first+(i+1)%size, rapid.Int64Range(5, 9).Draw(t, "ring"))
		}
		for range rapid.IntRange(2*size, 4*size).Draw(t, "chords") {
			u := first + rapid.IntRange(0, size-1).Draw(t, "u")
			v := first + rapid.IntRange(0, size-1).Draw(t, "v")
			if u != v {
				bld.AddEdge(u, v, rapid.Int64Range(5, 9).Draw(t, "chord"))
			}
		}
	}
	ring(0, a)
	ring(a, b)
	bld.AddEdge(rapid.IntRange(0, a-1).Draw(t, "end a"), a+rapid.IntRange(0, b-1).Draw(t, "end b"), 1)
	g, err := bld.Build()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// k2UsesSlack is the property that K = 2 uses its tolerance: two planted
// clusters of unequal size (20-150 and up to three times as many
// vertices), an imbalance just large enough for the larger one to fill a
// part; the partition must cut only the edge between them (a balanced
// split must cut a cluster, at a cost of 10 or more). (With a much
// smaller second cluster, coarsening may merge its vertices with the
// other cluster's across the bridge, and the multilevel heuristic, ours
// as METIS's, can miss the planted cut at any imbalance.) The partitioner
// runs three trials: one multilevel run can still miss the planted cut on
// small pairs (clusters of 24 and 20 at imbalance 0.19, seed 0, cut 10:
// rapid seed 11250352036020516450), which made this test fail about once
// in a few hundred runs; with three trials 1,500 checks pass, and the
// broken variant below still fails.
func k2UsesSlack(ws func() *workspace) func(*rapid.T) {
	return func(t *rapid.T) {
		b := rapid.IntRange(20, 150).Draw(t, "b")
		a := b + rapid.IntRange(4, 2*b).Draw(t, "a-b")
		g := plantedPair(t, a, b)
		half := float64(a+b) / 2
		opts := Options{K: 2, Imbalance: float64(a)/half - 1 + rapid.Float64Range(0, 0.1).Draw(t, "extra"),
			Seed: rapid.Uint64().Draw(t, "seed"), Method: rapid.SampledFrom([]Method{KWay, RecursiveBisection}).Draw(t, "method"), Trials: 3}
		res, err := partitionWith(g, opts, ws())
		if err != nil {
			t.Fatal(err)
		}
		if res.Cut != 1 {
			t.Fatalf("clusters of %d and %d, imbalance %.3f: cut %d with part weights %v (limits %v), want 1",
				a, b, opts.Imbalance, res.Cut, res.PartWeights, res.MaxWeights)
		}
	}
}

// TestK2UsesSlack: the partitioner finds the planted unbalanced cut; with
// METIS's alternating 2-way FM everywhere (the code before the fix) the
// same property fails.
func TestK2UsesSlack(t *testing.T) {
	rapid.Check(t, k2UsesSlack(func() *workspace { return &workspace{} }))
	// The broken variant fails at once; shrinking its counterexample (a
	// few hundred vertices) would take rapid's default 30 s, so cap it.
	if f := flag.Lookup("rapid.shrinktime"); f != nil {
		old := f.Value.String()
		if err := f.Value.Set("1s"); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = f.Value.Set(old) }()
	}
	if !teeth.Fails(k2UsesSlack(func() *workspace { return &workspace{brokenAlternate: true} })) {
		t.Fatal("the property does not catch a K = 2 partitioner that ignores Imbalance")
	}
}

// TestK2SlackOnMesh is the case on a mesh: two grids, 12x10 and
// 10x8, joined by one edge. At imbalance 0.2 the larger part may hold 120
// vertices, so the best cut is that one edge; before the fix the parts
// always weighed 100 and 100, and the cut went through a grid.
func TestK2SlackOnMesh(t *testing.T) {
	b := NewBuilder(120 + 80)
	grid := func(first, rows, cols int) {
		for i := range rows {
			for j := range cols {
				v := first + i*cols + j
				if j+1 < cols {
					b.AddEdge(v, v+1, 1)
				}
				if i+1 < rows {
					b.AddEdge(v, v+cols, 1)
				}
			}
		}
	}
	grid(0, 12, 10)
	grid(120, 10, 8)
	b.AddEdge(0, 120, 1)
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []Method{KWay, RecursiveBisection} {
		for seed := range uint64(5) {
			res, err := Partition(g, Options{K: 2, Imbalance: 0.2, Seed: seed, Method: m})
			if err != nil {
				t.Fatal(err)
			}
			if res.Cut != 1 {
				t.Errorf("%v, seed %d: cut %d with part weights %v, want 1 (weights 120 and 80)", m, seed, res.Cut, res.PartWeights)
			}
		}
	}
}

// Issue #33: with K = 2 a looser tolerance could give a larger cut than a
// tighter one (the relaxed refinement settles wherever the slack leads it;
// 13 of 24 graphs in the issue). Partition now computes the balanced
// partition beside the relaxed one and keeps the better.

// looserNeverWorse is the property: for K = 2 in Balanced mode, any
// Imbalance gives a cut no larger than Imbalance 0 (the balanced partition)
// with the same seed, method, Quick, Trials, VCycles and FlowRefinement,
// and its result respects
// the looser limits. Graphs: random (up to 150 vertices, weights 1-3), two planted
// clusters (where the relaxed partition wins), grids and random geometric
// graphs (where refinement with and without slack ends in different local
// optima, and the old partitioner most often did worse with slack).
func looserNeverWorse(ws func() *workspace) func(*rapid.T) {
	return func(t *rapid.T) {
		var g *Graph
		switch rapid.IntRange(0, 3).Draw(t, "family") {
		case 0:
			g = genGraph(t, 2, 150, rapid.SampledFrom([]int64{1, 1, 3}).Draw(t, "maxvw"))
		case 1:
			b := rapid.IntRange(10, 60).Draw(t, "b")
			g = plantedPair(t, b+rapid.IntRange(0, b).Draw(t, "a-b"), b)
		case 2:
			g = testGrid(t, rapid.IntRange(5, 30).Draw(t, "rows"), rapid.IntRange(5, 30).Draw(t, "cols"))
		default:
			g = testRGG(t, rapid.IntRange(50, 600).Draw(t, "n"), rapid.Uint64().Draw(t, "rgg seed"))
		}
		base := Options{K: 2, Seed: rapid.Uint64().Draw(t, "seed"),
			Method: rapid.SampledFrom([]Method{KWay, RecursiveBisection}).Draw(t, "method"),
			Quick:  rapid.Bool().Draw(t, "quick"), Trials: rapid.IntRange(0, 3).Draw(t, "trials"),
			VCycles: rapid.IntRange(0, 2).Draw(t, "vcycles"), FlowRefinement: rapid.Bool().Draw(t, "flow")}
		tight, err := partitionWith(g, base, ws())
		if err != nil {
			t.Skip("no balanced partition within the limits:", err)
		}
		loose := base
		loose.Imbalance = rapid.SampledFrom([]float64{0.01, 0.03, 0.1, 0.3, 1}).Draw(t, "imbalance")
		res, err := partitionWith(g, loose, ws())
		if err != nil {
			t.Fatalf("imbalance %v: %v", loose.Imbalance, err)
		}
		if err := checkResult(g, loose, res); err != nil {
			t.Fatalf("imbalance %v: %v", loose.Imbalance, err)
		}
		if res.Cut > tight.Cut {
			t.Fatalf("imbalance %v: cut %d (part weights %v), larger than %d with imbalance 0 (part weights %v)",
				loose.Imbalance, res.Cut, res.PartWeights, tight.Cut, tight.PartWeights)
		}
	}
}

// TestK2LooserNeverWorse: the property holds, and fails for the partitioner
// before issue #33 (the relaxed partition alone).
func TestK2LooserNeverWorse(t *testing.T) {
	rapid.Check(t, looserNeverWorse(func() *workspace { return &workspace{} }))
	if !teeth.Fails(looserNeverWorse(func() *workspace { return &workspace{brokenNoTwin: true} })) {
		t.Fatal("the property does not catch a K = 2 partitioner that keeps only the relaxed partition")
	}
}
