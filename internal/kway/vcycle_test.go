package kway

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/gpusched/gpusched/internal/teeth"
	"pgregory.net/rapid"
)

// within is the property of coarsenWithin: no coarse vertex holds fine
// vertices of different parts, and the coarse partition it returns,
// projected back through every level (composing the cmaps, independently
// of the code under test), gives the partition it started from.
func within(coarsenFn func(g *Graph, part []int32, rng *rand.Rand) ([]level, *Graph, []int32)) func(*rapid.T) {
	return func(t *rapid.T) {
		g := genGraph(t, 2, 120, rapid.SampledFrom([]int64{1, 1, 3}).Draw(t, "maxvw"))
		k := rapid.IntRange(2, 6).Draw(t, "k")
		part := make([]int32, g.NumVertices())
		for v := range part {
			part[v] = int32(rapid.IntRange(0, k-1).Draw(t, "part"))
		}
		levels, cg, cpart := coarsenFn(g, part, rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 1)))
		if len(cpart) != cg.NumVertices() {
			t.Fatalf("coarse partition of %d vertices for a coarsest graph of %d", len(cpart), cg.NumVertices())
		}
		// top[v]: the coarsest vertex that fine vertex v ends in
		top := make([]int32, g.NumVertices())
		for v := range top {
			top[v] = int32(v)
		}
		for _, lv := range levels {
			for v := range top {
				top[v] = lv.cmap[top[v]]
			}
		}
		for v, c := range top {
			if cpart[c] != part[v] {
				t.Fatalf("vertex %d of part %d lies in coarse vertex %d of part %d (%d levels)", v, part[v], c, cpart[c], len(levels))
			}
		}
	}
}

// TestCoarsenWithinKeepsParts: the V-cycle's coarsening keeps the parts
// apart; plain coarsening (the broken V-cycle's) does not.
func TestCoarsenWithinKeepsParts(t *testing.T) {
	var ms matchScratch
	rapid.Check(t, within(func(g *Graph, part []int32, rng *rand.Rand) ([]level, *Graph, []int32) {
		return coarsenWithin(g, part, 2, g.TotalVertexWeight(), rng, &ms)
	}))
	broken := func(g *Graph, part []int32, rng *rand.Rand) ([]level, *Graph, []int32) {
		levels, cg, _ := coarsenWithin(g, nil, 2, g.TotalVertexWeight(), rng, &ms)
		return levels, cg, projectDown(levels, cg, part)
	}
	if !teeth.Fails(within(broken)) {
		t.Fatal("the property does not catch a coarsening that merges vertices of different parts")
	}
}

// vcyclesNeverWorse is the property of Options.VCycles and
// Options.FlowRefinement: with any number of V-cycles, with or without
// flow refinement, the result is valid (checkResult) and its cut is no
// larger than without either, with the same seed, method, mode and limits. The
// graphs (grids, random geometric graphs and random graphs of 150-1,500
// vertices) are larger than the coarsening target, so the cycles run.
func vcyclesNeverWorse(ws func() *workspace) func(*rapid.T) {
	return func(t *rapid.T) {
		var g *Graph
		switch rapid.IntRange(0, 2).Draw(t, "family") {
		case 0:
			g = testGrid(t, rapid.IntRange(12, 40).Draw(t, "rows"), rapid.IntRange(12, 40).Draw(t, "cols"))
		case 1:
			g = testRGG(t, rapid.IntRange(150, 1500).Draw(t, "n"), rapid.Uint64().Draw(t, "rgg seed"))
		default:
			g = genGraph(t, 150, 400, rapid.SampledFrom([]int64{1, 1, 3}).Draw(t, "maxvw"))
		}
		opts := genOptions(t, g, 5)
		opts.Method = rapid.SampledFrom([]Method{KWay, RecursiveBisection}).Draw(t, "method")
		opts.Quick = rapid.Bool().Draw(t, "quick")
		base, err := partitionWith(g, opts, ws())
		if err != nil {
			if errors.Is(err, ErrInfeasible) {
				t.Skip("no partition within the limits:", err)
			}
			t.Fatal(err)
		}
		more := opts
		more.VCycles = rapid.IntRange(1, 3).Draw(t, "vcycles")
		more.FlowRefinement = rapid.Bool().Draw(t, "flow")
		res, err := partitionWith(g, more, ws())
		if err != nil {
			t.Fatalf("%d V-cycles, flow %v: %v", more.VCycles, more.FlowRefinement, err)
		}
		if err := checkResult(g, more, res); err != nil {
			t.Fatalf("%d V-cycles, flow %v: %v", more.VCycles, more.FlowRefinement, err)
		}
		if res.Cut > base.Cut {
			t.Fatalf("%d V-cycles, flow %v: cut %d, larger than %d without", more.VCycles, more.FlowRefinement, res.Cut, base.Cut)
		}
	}
}

// TestVCyclesNeverWorse: the property holds, and fails for V-cycles that
// coarsen across part boundaries and keep whatever they find.
func TestVCyclesNeverWorse(t *testing.T) {
	rapid.Check(t, vcyclesNeverWorse(func() *workspace { return &workspace{} }))
	if !teeth.Fails(vcyclesNeverWorse(func() *workspace { return &workspace{brokenVCycle: true} })) {
		t.Fatal("the property does not catch V-cycles that can make the partition worse")
	}
}

// TestVCyclesImprove: on a random geometric graph into 8 parts, two
// V-cycles find a smaller cut than none, for each of three seeds (the
// cycles are worth their time; BENCHMARKS.md has the benchmark set).
func TestVCyclesImprove(t *testing.T) {
	g := testRGG(t, 4000, 3)
	for seed := range uint64(3) {
		opts := Options{K: 8, Imbalance: 0.03, Seed: seed}
		base, err := Partition(g, opts)
		if err != nil {
			t.Fatal(err)
		}
		opts.VCycles = 2
		res, err := Partition(g, opts)
		if err != nil {
			t.Fatal(err)
		}
		if res.Cut >= base.Cut {
			t.Errorf("seed %d: cut %d with 2 V-cycles, %d without", seed, res.Cut, base.Cut)
		}
		t.Logf("seed %d: cut %d -> %d", seed, base.Cut, res.Cut)
	}
}

// TestFlowRefinementImproves: on a random geometric graph into 2 and 8
// parts, flow refinement finds a smaller total cut over three seeds than
// FM alone, and no larger cut for any seed.
func TestFlowRefinementImproves(t *testing.T) {
	g := testRGG(t, 4000, 3)
	for _, k := range []int{2, 8} {
		var sumBase, sumFlow int64
		for seed := range uint64(3) {
			opts := Options{K: k, Imbalance: 0.03, Seed: seed}
			base, err := Partition(g, opts)
			if err != nil {
				t.Fatal(err)
			}
			opts.FlowRefinement = true
			res, err := Partition(g, opts)
			if err != nil {
				t.Fatal(err)
			}
			if res.Cut > base.Cut {
				t.Errorf("k = %d, seed %d: cut %d with flow refinement, %d without", k, seed, res.Cut, base.Cut)
			}
			sumBase += base.Cut
			sumFlow += res.Cut
			t.Logf("k = %d, seed %d: cut %d -> %d", k, seed, base.Cut, res.Cut)
		}
		if sumFlow >= sumBase {
			t.Errorf("k = %d: total cut %d with flow refinement, %d without", k, sumFlow, sumBase)
		}
	}
}
