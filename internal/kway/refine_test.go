package kway

import (
	"math/rand/v2"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// refineCase is a graph with a feasible starting partition.
type refineCase struct {
	g      *Graph
	k      int
	part   []int32
	limit  []int64
	target []float64
}

// randomFeasible assigns every vertex to a random part with room; limits
// are drawn so that this always succeeds (first fit would).
func randomFeasible(g *Graph, k int, slackPct int64, pick func(n int) int) refineCase {
	W := g.TotalVertexWeight()
	var maxVW int64
	for v := range g.NumVertices() {
		maxVW = max(maxVW, g.VertexWeight(v))
	}
	limit := make([]int64, k)
	target := make([]float64, k)
	for p := range limit {
		target[p] = float64(W) / float64(k)
		limit[p] = (W+int64(k)-1)/int64(k) + maxVW - 1 + W*slackPct/100/int64(k)
	}
	part := make([]int32, g.NumVertices())
	pw := make([]int64, k)
	for v := range part {
		var ok []int32
		for p := range int32(k) {
			if pw[p]+g.VertexWeight(v) <= limit[p] {
				ok = append(ok, p)
			}
		}
		p := ok[pick(len(ok))]
		part[v] = p
		pw[p] += g.VertexWeight(v)
	}
	return refineCase{g: g, k: k, part: part, limit: limit, target: target}
}

// checkRefine runs FM refinement on a copy of the case's partition and
// reports a violation of the refinement contract: the cut may not grow,
// limits must keep holding, and the incremental connectivity data must
// agree with a fresh computation.
func checkRefine(c refineCase, seed uint64, broken bool) string {
	part := append([]int32(nil), c.part...)
	before, _ := EdgeCut(c.g, toInts(part))
	var r refiner
	r.rng = rand.New(rand.NewPCG(seed, 1))
	r.init(c.g, part, c.k, c.limit, c.target)
	r.brokenNoRollback = broken
	r.refine()
	after, _ := EdgeCut(c.g, toInts(part))
	if after > before {
		return sprintf("cut grew from %d to %d", before, after)
	}
	if r.cut() != after {
		return sprintf("incremental cut %d, recomputed %d", r.cut(), after)
	}
	pw := make([]int64, c.k)
	for v, p := range part {
		pw[p] += c.g.VertexWeight(v)
	}
	for p := range pw {
		if pw[p] > c.limit[p] {
			return sprintf("part %d weighs %d above limit %d", p, pw[p], c.limit[p])
		}
		if pw[p] != r.pw[p] {
			return sprintf("part %d weight %d, tracked %d", p, pw[p], r.pw[p])
		}
	}
	var fresh refiner
	fresh.rng = r.rng
	fresh.init(c.g, append([]int32(nil), part...), c.k, c.limit, c.target)
	for v := range part {
		if fresh.vx[v].id != r.vx[v].id || fresh.vx[v].ed != r.vx[v].ed {
			return sprintf("vertex %d: id/ed %d/%d, fresh %d/%d", v, r.vx[v].id, r.vx[v].ed, fresh.vx[v].id, fresh.vx[v].ed)
		}
	}
	return ""
}

func toInts(p []int32) []int {
	out := make([]int, len(p))
	for i, x := range p {
		out[i] = int(x)
	}
	return out
}

// TestRefineNeverIncreasesCut is the refinement contract as a property.
func TestRefineNeverIncreasesCut(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := genGraph(t, 2, 80, rapid.SampledFrom([]int64{1, 4}).Draw(t, "maxvw"))
		k := rapid.IntRange(2, 8).Draw(t, "k")
		c := randomFeasible(g, k, rapid.Int64Range(0, 20).Draw(t, "slack%"), func(n int) int {
			return rapid.IntRange(0, n-1).Draw(t, "pick")
		})
		if rapid.Bool().Draw(t, "prerefine") { // also start from local optima
			var r refiner
			r.rng = rand.New(rand.NewPCG(7, 7))
			r.init(c.g, c.part, c.k, c.limit, c.target)
			r.refine()
		}
		if msg := checkRefine(c, rapid.Uint64().Draw(t, "seed"), false); msg != "" {
			t.Fatal(msg)
		}
	})
}

// TestBrokenRefinementIsCaught: a refinement that keeps every move of a
// pass, losing ones included (no rollback), must fail the same check.
func TestBrokenRefinementIsCaught(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	caught := 0
	for i := range 50 {
		g := testRGG(t, 60+i, uint64(i))
		c := randomFeasible(g, 2+i%6, 5, rng.IntN)
		// Start from a refined (locally optimal) partition: from there
		// every losing move that is kept shows up in the cut.
		var r refiner
		r.rng = rand.New(rand.NewPCG(uint64(i), 3))
		r.init(c.g, c.part, c.k, c.limit, c.target)
		r.refine()
		if checkRefine(c, uint64(i), false) != "" {
			t.Fatalf("case %d: the correct refiner fails: %s", i, checkRefine(c, uint64(i), false))
		}
		if msg := checkRefine(c, uint64(i), true); strings.HasPrefix(msg, "cut grew") {
			caught++
		}
	}
	if caught == 0 {
		t.Fatal("the broken refinement was never caught")
	}
	t.Logf("broken refinement increased the cut on %d of 50 cases", caught)
}

// TestBalanceRestoresFeasibility: from any assignment, balance plus
// forceFit reach the limits of Balanced mode (which always admit a fit).
func TestBalanceRestoresFeasibility(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := genGraph(t, 1, 60, rapid.SampledFrom([]int64{1, 5}).Draw(t, "maxvw"))
		k := rapid.IntRange(1, 7).Draw(t, "k")
		c, err := checkOptions(g, Options{K: k, Imbalance: rapid.Float64Range(0, 0.1).Draw(t, "eps")})
		if err != nil {
			t.Fatal(err)
		}
		part := make([]int32, g.NumVertices())
		for v := range part {
			part[v] = int32(rapid.IntRange(0, k-1).Draw(t, "p"))
		}
		var r refiner
		r.rng = rand.New(rand.NewPCG(1, 1))
		r.init(g, part, k, c.limit, c.target)
		r.balance()
		if !r.forceFit() {
			t.Fatalf("infeasible after forceFit: weights %v limits %v", r.pw, c.limit)
		}
	})
}
