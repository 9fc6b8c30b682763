package kway

import (
	"errors"
	"math"
	"testing"

	"pgregory.net/rapid"
)

// bruteForce enumerates all K^n assignments (no symmetry breaking, no
// bounds) and returns the minimum cut within the documented limits, or -1.
func bruteForce(g *Graph, opts Options) int64 {
	n, k := g.NumVertices(), opts.K
	lim := wantLimits(g, opts)
	part := make([]int, n)
	best := int64(-1)
	var rec func(i int)
	rec = func(i int) {
		if i == n {
			pw := make([]int64, k)
			for v, p := range part {
				pw[p] += g.VertexWeight(v)
			}
			for p := range pw {
				if pw[p] > lim[p] {
					return
				}
			}
			if c := naiveCut(g, part); best < 0 || c < best {
				best = c
			}
			return
		}
		for p := range k {
			part[i] = p
			rec(i + 1)
		}
	}
	rec(0)
	return best
}

func TestExactMatchesBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := genGraph(t, 1, 7, rapid.SampledFrom([]int64{1, 3}).Draw(t, "maxvw"))
		opts := genOptions(t, g, 4)
		want := bruteForce(g, opts)
		res, err := Exact(g, opts)
		if want < 0 {
			if !errors.Is(err, ErrInfeasible) {
				t.Fatalf("no feasible assignment exists, Exact says %v", err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if res.Cut != want {
			t.Fatalf("Exact cut %d, brute force %d", res.Cut, want)
		}
		if err := checkResult(g, opts, res); err != nil {
			t.Fatal(err)
		}
	})
}

func TestExactTooLarge(t *testing.T) {
	g := testGrid(t, 4, 4)
	if _, err := Exact(g, Options{K: 2}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
}

// TestHeuristicVersusExact compares Partition with the exact optimum on
// tiny random graphs (n <= 12): the heuristic can never beat the optimum
// (that would expose a bug in Exact), and it should usually match it. The
// match rate and worst ratio are logged for BENCHMARKS.md.
func TestHeuristicVersusExact(t *testing.T) {
	stats := tinyStats(t, 300)
	t.Logf("%d instances: heuristic optimal on %d (%.1f%%), worst ratio %.3f, geometric mean ratio %.4f",
		stats.n, stats.match, 100*float64(stats.match)/float64(stats.n), stats.worst, stats.geomean)
	if float64(stats.match) < 0.8*float64(stats.n) {
		t.Errorf("heuristic optimal on only %d of %d tiny instances", stats.match, stats.n)
	}
}

type tinyResult struct {
	n, match       int
	worst, geomean float64
}

// tinyStats runs Partition and Exact on count seeded random instances:
// 4..12 vertices, random edge weights, unit or small vertex weights, K 2..4,
// Balanced (imbalance 0..0.3) or Hard mode.
func tinyStats(tb testing.TB, count int) tinyResult {
	var st tinyResult
	st.worst = 1
	var logSum float64
	_ = rapid.Check // the instances come from a deterministic generator
	for i := range count {
		g, opts := tinyInstance(uint64(i))
		ex, err := Exact(g, opts)
		if errors.Is(err, ErrInfeasible) {
			continue
		}
		if err != nil {
			tb.Fatal(err)
		}
		h, err := Partition(g, opts)
		if err != nil {
			tb.Fatalf("instance %d: %v", i, err)
		}
		if err := checkResult(g, opts, h); err != nil {
			tb.Fatalf("instance %d: %v", i, err)
		}
		if h.Cut < ex.Cut {
			tb.Fatalf("instance %d: heuristic cut %d below the exact optimum %d", i, h.Cut, ex.Cut)
		}
		st.n++
		r := 1.0
		if h.Cut == ex.Cut {
			st.match++
		} else if ex.Cut == 0 {
			r = math.Inf(1)
		} else {
			r = float64(h.Cut) / float64(ex.Cut)
		}
		st.worst = math.Max(st.worst, r)
		if !math.IsInf(r, 1) {
			logSum += math.Log(r)
		}
	}
	st.geomean = math.Exp(logSum / float64(st.n))
	return st
}
