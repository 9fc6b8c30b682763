package kway

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// bruteChain: the optimal bottleneck over all splits into p non-empty
// contiguous stages, summing each stage directly.
func bruteChain(costs []float64, p int) float64 {
	n := len(costs)
	best := math.Inf(1)
	var rec func(start, stagesLeft int, worst float64)
	rec = func(start, stagesLeft int, worst float64) {
		if stagesLeft == 1 {
			var s float64
			for _, c := range costs[start:] {
				s += c
			}
			best = math.Min(best, math.Max(worst, s))
			return
		}
		var s float64
		for end := start + 1; end <= n-(stagesLeft-1); end++ {
			s += costs[end-1]
			rec(end, stagesLeft-1, math.Max(worst, s))
		}
	}
	rec(0, p, 0)
	return best
}

// bruteDAG: the optimal bottleneck over all stage assignments with every
// stage non-empty and stage(u) <= stage(v) on every edge.
func bruteDAG(costs []float64, edges [][2]int, p int) float64 {
	n := len(costs)
	stage := make([]int, n)
	best := math.Inf(1)
	var rec func(i int)
	rec = func(i int) {
		if i == n {
			sum := make([]float64, p)
			for v, s := range stage {
				sum[s] += costs[v]
			}
			for _, e := range edges {
				if stage[e[0]] > stage[e[1]] {
					return
				}
			}
			size := make([]int, p)
			for _, s := range stage {
				size[s]++
			}
			if slices.Contains(size, 0) {
				return
			}
			best = math.Min(best, slices.Max(sum))
			return
		}
		for s := range p {
			stage[i] = s
			rec(i + 1)
		}
	}
	rec(0)
	return best
}

// checkStages verifies the structural contract of a split.
func checkStages(costs []float64, edges [][2]int, p int, st Stages) string {
	n := len(costs)
	if len(st.Stage) != n || len(st.Order) != n || len(st.Starts) != p || len(st.Cost) != p {
		return "wrong lengths"
	}
	seen := make([]bool, n)
	for i, v := range st.Order {
		if v < 0 || v >= n || seen[v] {
			return "Order is not a permutation"
		}
		seen[v] = true
		s := st.Stage[v]
		end := n
		if s+1 < p {
			end = st.Starts[s+1]
		}
		if i < st.Starts[s] || i >= end {
			return sprintf("layer %d at position %d outside stage %d's run", v, i, s)
		}
	}
	sum := make([]float64, p)
	size := make([]int, p)
	for v, s := range st.Stage {
		sum[s] += costs[v]
		size[s]++
	}
	for s := range p {
		if size[s] == 0 {
			return sprintf("stage %d is empty", s)
		}
		if math.Abs(sum[s]-st.Cost[s]) > 1e-9*(1+sum[s]) {
			return sprintf("stage %d cost %v, recomputed %v", s, st.Cost[s], sum[s])
		}
	}
	if st.Bottleneck != slices.Max(st.Cost) {
		return "bottleneck is not the largest stage cost"
	}
	for _, e := range edges {
		if st.Stage[e[0]] > st.Stage[e[1]] {
			return sprintf("edge %d->%d goes back from stage %d to %d", e[0], e[1], st.Stage[e[0]], st.Stage[e[1]])
		}
	}
	return ""
}

func genCosts(t *rapid.T, nMax int) []float64 {
	n := rapid.IntRange(1, nMax).Draw(t, "n")
	costs := make([]float64, n)
	for i := range costs {
		// integers and zeros make ties likely; fractions test rounding
		switch rapid.IntRange(0, 2).Draw(t, "kind") {
		case 0:
			costs[i] = float64(rapid.IntRange(0, 9).Draw(t, "int"))
		default:
			costs[i] = rapid.Float64Range(0, 10).Draw(t, "float")
		}
	}
	return costs
}

func TestSplitChainOptimal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		costs := genCosts(t, 10)
		p := rapid.IntRange(1, len(costs)).Draw(t, "p")
		st, err := SplitChain(costs, p)
		if err != nil {
			t.Fatal(err)
		}
		var edges [][2]int
		for i := 0; i+1 < len(costs); i++ {
			edges = append(edges, [2]int{i, i + 1})
		}
		if msg := checkStages(costs, edges, p, st); msg != "" {
			t.Fatal(msg)
		}
		if want := bruteChain(costs, p); math.Abs(st.Bottleneck-want) > 1e-9*(1+want) {
			t.Fatalf("bottleneck %v, optimum %v", st.Bottleneck, want)
		}
	})
}

// TestSplitDAGProperties: valid splits, never below the optimum (that
// would expose the checker), exact on chains, deterministic per seed.
func TestSplitDAGProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		costs := genCosts(t, 8)
		n := len(costs)
		var edges [][2]int
		for u := range n {
			for v := u + 1; v < n; v++ {
				if rapid.IntRange(0, 3).Draw(t, "edge") == 0 {
					edges = append(edges, [2]int{u, v})
				}
			}
		}
		// relabel so that edges do not always go from low to high index
		perm := rapid.Permutation(seq(n)).Draw(t, "perm")
		pc := make([]float64, n)
		for i, c := range costs {
			pc[perm[i]] = c
		}
		for i := range edges {
			edges[i] = [2]int{perm[edges[i][0]], perm[edges[i][1]]}
		}
		p := rapid.IntRange(1, min(n, 4)).Draw(t, "p") // brute force is p^n
		seed := rapid.Uint64().Draw(t, "seed")
		st, err := SplitDAG(pc, edges, p, seed)
		if err != nil {
			t.Fatal(err)
		}
		if msg := checkStages(pc, edges, p, st); msg != "" {
			t.Fatal(msg)
		}
		opt := bruteDAG(pc, edges, p)
		if st.Bottleneck < opt-1e-9*(1+opt) {
			t.Fatalf("bottleneck %v below the brute-force optimum %v", st.Bottleneck, opt)
		}
		again, _ := SplitDAG(pc, edges, p, seed)
		if !slices.Equal(st.Stage, again.Stage) {
			t.Fatal("same seed, different split")
		}
	})
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// TestSplitDAGQuality measures how often SplitDAG is optimal on small
// random DAGs and checks that chains given as DAGs are split exactly.
func TestSplitDAGQuality(t *testing.T) {
	rng := newTestRand(11)
	total, optimal, worst := 0, 0, 1.0
	for range 300 {
		n := 3 + rng.IntN(6)
		costs := make([]float64, n)
		for i := range costs {
			costs[i] = float64(1 + rng.IntN(9))
		}
		var edges [][2]int
		chain := rng.IntN(4) == 0
		for u := range n {
			for v := u + 1; v < n; v++ {
				if (chain && v == u+1) || (!chain && rng.IntN(3) == 0) {
					edges = append(edges, [2]int{u, v})
				}
			}
		}
		p := 1 + rng.IntN(min(n, 4))
		st, err := SplitDAG(costs, edges, p, 1)
		if err != nil {
			t.Fatal(err)
		}
		opt := bruteDAG(costs, edges, p)
		if chain && st.Bottleneck != opt {
			t.Fatalf("chain %v into %d: bottleneck %v, optimum %v", costs, p, st.Bottleneck, opt)
		}
		total++
		if st.Bottleneck == opt {
			optimal++
		}
		worst = math.Max(worst, st.Bottleneck/opt)
	}
	t.Logf("SplitDAG optimal on %d of %d small DAGs, worst ratio %.3f", optimal, total, worst)
	if optimal < total*9/10 {
		t.Errorf("SplitDAG optimal on only %d of %d", optimal, total)
	}
}

func TestSplitRejects(t *testing.T) {
	cases := []struct {
		name  string
		costs []float64
		edges [][2]int
		p     int
		want  string
	}{
		{"no layers", nil, nil, 1, "no layers"},
		{"p zero", []float64{1, 2}, nil, 0, "0 stages for 2 layers"},
		{"p too big", []float64{1, 2}, nil, 3, "3 stages for 2 layers"},
		{"NaN", []float64{1, math.NaN()}, nil, 1, "layer 1 has cost NaN"},
		{"negative", []float64{-1, 2}, nil, 1, "layer 0 has cost -1"},
		{"infinite", []float64{1, math.Inf(1)}, nil, 1, "layer 1 has cost +Inf"},
		{"edge range", []float64{1, 2}, [][2]int{{0, 2}}, 1, "edge 0 (0->2): layer out of range"},
		{"self-loop", []float64{1, 2}, [][2]int{{1, 1}}, 1, "edge 0 (1->1): self-loop"},
		{"cycle", []float64{1, 2, 3}, [][2]int{{0, 1}, {1, 2}, {2, 1}}, 2, "cycle through layer 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := SplitDAG(c.costs, c.edges, c.p, 1)
			if !errors.Is(err, ErrInvalidStages) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrInvalidStages naming %q", err, c.want)
			}
			if c.edges == nil {
				if _, err := SplitChain(c.costs, c.p); !errors.Is(err, ErrInvalidStages) {
					t.Fatalf("SplitChain: got %v", err)
				}
			}
		})
	}
}
