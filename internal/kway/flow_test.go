package kway

import (
	"fmt"
	"testing"

	"github.com/gpusched/gpusched/internal/teeth"
	"pgregory.net/rapid"
)

// flowNeverWorse is the property of flowRefine: on a random graph with a
// random feasible partition (2-5 parts, tolerance 0-20%), it returns the
// decrease of the cut (recomputed by EdgeCut), the cut does not grow, the
// part weights it maintains are right, and every part stays within its
// limit.
func flowNeverWorse(broken bool) func(*rapid.T) {
	return func(t *rapid.T) {
		g := genGraph(t, 2, 120, rapid.SampledFrom([]int64{1, 1, 3}).Draw(t, "maxvw"))
		k := rapid.IntRange(2, 5).Draw(t, "k")
		c := randomFeasible(g, k, rapid.Int64Range(0, 20).Draw(t, "slack"), func(n int) int {
			return rapid.IntRange(0, n-1).Draw(t, "pick")
		})
		part := append([]int32(nil), c.part...)
		pw := make([]int64, k)
		for v, p := range part {
			pw[p] += g.VertexWeight(v)
		}
		before, _ := EdgeCut(g, toInts(part))
		f := flowScratch{brokenNoBalance: broken}
		gain := f.flowRefine(g, part, pw, c.limit, c.target)
		after, _ := EdgeCut(g, toInts(part))
		if after > before || before-after != gain {
			t.Fatalf("cut %d -> %d, reported gain %d", before, after, gain)
		}
		want := make([]int64, k)
		for v, p := range part {
			want[p] += g.VertexWeight(v)
		}
		for p := range k {
			if pw[p] != want[p] {
				t.Fatalf("part %d: weight %d kept, %d recomputed", p, pw[p], want[p])
			}
			if want[p] > c.limit[p] {
				t.Fatalf("part %d weighs %d, above its limit %d", p, want[p], c.limit[p])
			}
		}
	}
}

// TestFlowRefineNeverWorse: the property holds, and fails for flow
// refinement that applies a minimum cut without checking the limits.
func TestFlowRefineNeverWorse(t *testing.T) {
	rapid.Check(t, flowNeverWorse(false))
	if !teeth.Fails(flowNeverWorse(true)) {
		t.Fatal("the property does not catch flow refinement that breaks the limits")
	}
}

// TestMaxFlowMatchesBruteForce: on random networks of up to 10 nodes
// besides the source and the sink (undirected edges of capacity 1-9, and
// arcs from the source and to the sink, as flowScratch.pair builds them),
// maxFlow's value equals the minimum source-sink cut found by enumerating
// every set of nodes, and both cuts read off the residual network (the
// nodes the source reaches; the nodes that do not reach the sink) have
// that value.
func TestMaxFlowMatchesBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 10).Draw(t, "n")
		src, snk := int32(n), int32(n+1)
		type arc struct {
			x, y  int32
			c, rc int64
		}
		var arcs []arc
		for range rapid.IntRange(0, 3*n).Draw(t, "edges") {
			x := int32(rapid.IntRange(0, n-1).Draw(t, "x"))
			y := int32(rapid.IntRange(0, n-1).Draw(t, "y"))
			if x != y {
				w := rapid.Int64Range(1, 9).Draw(t, "w")
				arcs = append(arcs, arc{x, y, w, w})
			}
		}
		for v := range int32(n) {
			if rapid.Bool().Draw(t, "from source") {
				arcs = append(arcs, arc{src, v, rapid.Int64Range(1, 9).Draw(t, "ws"), 0})
			}
			if rapid.Bool().Draw(t, "to sink") {
				arcs = append(arcs, arc{v, snk, rapid.Int64Range(1, 9).Draw(t, "wt"), 0})
			}
		}
		var f flowScratch
		nn := n + 2
		f.head = make([]int32, nn+1)
		for _, a := range arcs {
			f.head[a.x+1]++
			f.head[a.y+1]++
		}
		for i := 1; i <= nn; i++ {
			f.head[i] += f.head[i-1]
		}
		m := f.head[nn]
		f.to, f.capa, f.rev = make([]int32, m), make([]int64, m), make([]int32, m)
		f.iter = make([]int32, nn)
		pos := append([]int32(nil), f.head[:nn]...)
		for _, a := range arcs {
			i, j := pos[a.x], pos[a.y]
			f.to[i], f.capa[i], f.rev[i] = a.y, a.c, j
			f.to[j], f.capa[j], f.rev[j] = a.x, a.rc, i
			pos[a.x]++
			pos[a.y]++
		}
		cutOf := func(in func(v int32) bool) int64 { // in: node on the source side
			var c int64
			for _, a := range arcs {
				if in(a.x) && !in(a.y) {
					c += a.c
				}
				if in(a.y) && !in(a.x) {
					c += a.rc
				}
			}
			return c
		}
		best := int64(-1)
		for set := range 1 << n {
			c := cutOf(func(v int32) bool { return v == src || (v != snk && set&(1<<v) != 0) })
			if best < 0 || c < best {
				best = c
			}
		}
		flow := f.maxFlow(nn, src, snk)
		if flow != best {
			t.Fatalf("max flow %d, minimum cut %d (%s)", flow, best, fmt.Sprint(arcs))
		}
		fromS := reachable(&f, nn, src, false, nil)
		toT := reachable(&f, nn, snk, true, nil)
		if fromS[snk] || toT[src] {
			t.Fatalf("the sink is reachable in the residual network after max flow")
		}
		if c := cutOf(func(v int32) bool { return fromS[v] }); c != best {
			t.Fatalf("cut of the nodes the source reaches: %d, want %d", c, best)
		}
		if c := cutOf(func(v int32) bool { return !toT[v] }); c != best {
			t.Fatalf("cut of the nodes that do not reach the sink: %d, want %d", c, best)
		}
	})
}
