package kway

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"
)

// fataler is what the graph helpers need of a test: testing.TB or
// *rapid.T.
type fataler interface {
	Helper()
	Fatal(args ...any)
}

// testGrid returns an r x c grid graph with unit weights.
func testGrid(tb fataler, r, c int) *Graph {
	tb.Helper()
	b := NewBuilder(r * c)
	for i := range r {
		for j := range c {
			v := i*c + j
			if j+1 < c {
				b.AddEdge(v, v+1, 1)
			}
			if i+1 < r {
				b.AddEdge(v, v+c, 1)
			}
		}
	}
	g, err := b.Build()
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// testRGG returns a random geometric graph in the unit square with the
// DIMACS radius 0.55*sqrt(ln n / n).
func testRGG(tb fataler, n int, seed uint64) *Graph {
	tb.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	xs, ys := make([]float64, n), make([]float64, n)
	for i := range n {
		xs[i], ys[i] = rng.Float64(), rng.Float64()
	}
	rad := 0.55 * math.Sqrt(math.Log(float64(n))/float64(n))
	cells := max(int(1/rad), 1)
	cell := func(x float64) int { return min(int(x*float64(cells)), cells-1) }
	bucket := make([][]int, cells*cells)
	for i := range n {
		k := cell(xs[i])*cells + cell(ys[i])
		bucket[k] = append(bucket[k], i)
	}
	b := NewBuilder(n)
	for i := range n {
		cx, cy := cell(xs[i]), cell(ys[i])
		for dx := -1; dx <= 1; dx++ {
			for dy := -1; dy <= 1; dy++ {
				x, y := cx+dx, cy+dy
				if x < 0 || y < 0 || x >= cells || y >= cells {
					continue
				}
				for _, j := range bucket[x*cells+y] {
					if j > i && math.Hypot(xs[i]-xs[j], ys[i]-ys[j]) <= rad {
						b.AddEdge(i, j, 1)
					}
				}
			}
		}
	}
	g, err := b.Build()
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// testWorkers synthesises a dp x tp x pp worker graph: complete TP groups
// (weight 100), DP rings (10), PP chains (1).
func testWorkers(tb testing.TB, dp, tp, pp int) *Graph {
	tb.Helper()
	id := func(s, d, t int) int { return (s*dp+d)*tp + t }
	b := NewBuilder(dp * tp * pp)
	for s := range pp {
		for d := range dp {
			for t := range tp {
				for t2 := t + 1; t2 < tp; t2++ {
					b.AddEdge(id(s, d, t), id(s, d, t2), 100)
				}
				if dp > 1 && (dp > 2 || d == 0) {
					b.AddEdge(id(s, d, t), id(s, (d+1)%dp, t), 10)
				}
				if s+1 < pp {
					b.AddEdge(id(s, d, t), id(s+1, d, t), 1)
				}
			}
		}
	}
	g, err := b.Build()
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// genGraph draws a random graph with nMin..nMax vertices, random vertex
// weights in 1..maxVW and random edge weights in 1..9.
func genGraph(t *rapid.T, nMin, nMax int, maxVW int64) *Graph {
	n := rapid.IntRange(nMin, nMax).Draw(t, "n")
	b := NewBuilder(n)
	for v := range n {
		if err := b.SetVertexWeight(v, rapid.Int64Range(1, maxVW).Draw(t, "vw")); err != nil {
			t.Fatal(err)
		}
	}
	if n >= 2 {
		m := rapid.IntRange(0, 3*n).Draw(t, "m")
		for range m {
			u := rapid.IntRange(0, n-1).Draw(t, "u")
			v := rapid.IntRange(0, n-1).Draw(t, "v")
			if u != v {
				if err := b.AddEdge(u, v, rapid.Int64Range(1, 9).Draw(t, "w")); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// genOptions draws options for g: K, mode, capacities and imbalance. In
// Hard mode the capacities always hold the total weight; with vertex
// weights above 1 a fit may still not exist (the caller checks
// ErrInfeasible).
func genOptions(t *rapid.T, g *Graph, kMax int) Options {
	k := rapid.IntRange(1, kMax).Draw(t, "k")
	opts := Options{K: k, Seed: rapid.Uint64().Draw(t, "seed")}
	W := g.TotalVertexWeight()
	switch rapid.IntRange(0, 2).Draw(t, "mode") {
	case 0:
		opts.Imbalance = rapid.Float64Range(0, 0.5).Draw(t, "imbalance")
	case 1:
		opts.Imbalance = rapid.Float64Range(0, 0.2).Draw(t, "imbalance")
		opts.Capacities = make([]int64, k)
		for i := range opts.Capacities {
			opts.Capacities[i] = rapid.Int64Range(0, 5).Draw(t, "share")
		}
		opts.Capacities[rapid.IntRange(0, k-1).Draw(t, "nonzero")]++
	case 2:
		opts.Mode = Hard
		opts.Capacities = make([]int64, k)
		var sum int64
		for i := range opts.Capacities {
			opts.Capacities[i] = rapid.Int64Range(0, W).Draw(t, "cap")
			sum += opts.Capacities[i]
		}
		if sum < W { // top up so the capacities hold the total weight
			opts.Capacities[rapid.IntRange(0, k-1).Draw(t, "topup")] += W - sum
		}
	}
	return opts
}

// wantLimits computes the per-part limits independently of checkOptions,
// straight from the Options documentation.
func wantLimits(g *Graph, opts Options) []int64 {
	k := opts.K
	lim := make([]int64, k)
	if opts.Mode == Hard {
		copy(lim, opts.Capacities)
		return lim
	}
	W := float64(g.TotalVertexWeight())
	var maxVW int64
	for v := range g.NumVertices() {
		maxVW = max(maxVW, g.VertexWeight(v))
	}
	shares := make([]float64, k)
	var sum float64
	for i := range shares {
		shares[i] = 1
		if opts.Capacities != nil {
			shares[i] = float64(opts.Capacities[i])
		}
		sum += shares[i]
	}
	for i := range lim {
		if shares[i] == 0 {
			continue
		}
		t := W * shares[i] / sum
		x := (1 + opts.Imbalance) * t
		lim[i] = int64(math.Max(0, math.Max(math.Floor(x+1e-9*math.Max(1, math.Abs(x))), math.Ceil(t)+float64(maxVW)-1)))
	}
	return lim
}

// naiveCut computes the cut from the edge list, independently of the CSR.
func naiveCut(g *Graph, part []int) int64 {
	var c int64
	for e := range g.Edges() {
		if part[e.U] != part[e.V] {
			c += e.W
		}
	}
	return c
}

func sprintf(format string, a ...any) string { return fmt.Sprintf(format, a...) }

// tinyInstance builds a deterministic random instance for the exact
// comparison.
func tinyInstance(seed uint64) (*Graph, Options) {
	rng := rand.New(rand.NewPCG(seed, 99))
	n := 4 + rng.IntN(9)
	b := NewBuilder(n)
	heavy := rng.IntN(3) == 0
	for v := range n {
		if heavy {
			b.SetVertexWeight(v, 1+rng.Int64N(3))
		}
	}
	density := 0.2 + 0.5*rng.Float64()
	for u := range n {
		for v := u + 1; v < n; v++ {
			if rng.Float64() < density {
				b.AddEdge(u, v, 1+rng.Int64N(9))
			}
		}
	}
	g, _ := b.Build()
	k := 2 + rng.IntN(3)
	opts := Options{K: k, Seed: seed}
	if rng.IntN(2) == 0 {
		opts.Imbalance = 0.3 * rng.Float64()
	} else {
		opts.Mode = Hard
		opts.Capacities = make([]int64, k)
		W := g.TotalVertexWeight()
		var sum int64
		for i := range opts.Capacities {
			opts.Capacities[i] = 1 + rng.Int64N(W)
			sum += opts.Capacities[i]
		}
		if sum < W {
			opts.Capacities[0] += W - sum
		}
	}
	return g, opts
}

func newTestRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 5)) }
