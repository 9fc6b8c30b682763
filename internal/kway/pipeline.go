package kway

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Stages is a split of the layers of a model into pipeline stages. Layer
// costs are in one caller-chosen unit (for example seconds of forward plus
// backward compute per iteration, or FLOPs); stage costs and the
// bottleneck are in the same unit.
type Stages struct {
	// Stage[v] is the stage, in 0..p-1, of layer v. Every stage holds at
	// least one layer, and for every edge u->v, Stage[u] <= Stage[v].
	Stage []int
	// Order is a topological order of the layers in which every stage is
	// a contiguous run: stage s is Order[Starts[s]:Starts[s+1]] (with
	// Starts[p] taken as len(Order)). For a chain Order is 0..n-1.
	Order []int
	// Starts[s] is the position in Order of the first layer of stage s.
	Starts []int
	// Cost[s] is the total cost of the layers in stage s.
	Cost []float64
	// Bottleneck is the largest stage cost, the quantity minimised: the
	// steady-state time per micro-batch of the pipeline is set by it.
	Bottleneck float64
}

// SplitChain splits a chain of layers (layer i feeds layer i+1) with the
// given costs into p contiguous, non-empty stages minimising the largest
// stage cost. The result is optimal (dynamic programming over prefix sums,
// O(p n)). Costs must be finite and >= 0; p must be in 1..len(costs).
func SplitChain(costs []float64, p int) (Stages, error) {
	if err := checkCosts(costs, p); err != nil {
		return Stages{}, err
	}
	order := make([]int, len(costs))
	for i := range order {
		order[i] = i
	}
	starts := chainDP(costs, order, p)
	return makeStages(costs, order, starts), nil
}

func checkCosts(costs []float64, p int) error {
	n := len(costs)
	if n == 0 {
		return fmt.Errorf("%w: no layers", ErrInvalidStages)
	}
	if p < 1 || p > n {
		return fmt.Errorf("%w: %d stages for %d layers, want 1..%d", ErrInvalidStages, p, n, n)
	}
	for i, c := range costs {
		if math.IsNaN(c) || math.IsInf(c, 0) || c < 0 {
			return fmt.Errorf("%w: layer %d has cost %v, want a finite value >= 0", ErrInvalidStages, i, c)
		}
	}
	return nil
}

// chainDP returns the stage starts of an optimal min-max split of the
// layers in the given order into p non-empty contiguous stages.
//
// f[j][i] is the best bottleneck of the first i layers in j stages;
// f[j][i] = min over l of max(f[j-1][l], S[i]-S[l]). f[j-1][l] grows with
// l and S[i]-S[l] shrinks, so the best l sits at their crossing, which
// moves right as i grows: O(p n) in all.
func chainDP(costs []float64, order []int, p int) []int {
	n := len(order)
	S := make([]float64, n+1)
	for i, v := range order {
		S[i+1] = S[i] + costs[v]
	}
	prev := make([]float64, n+1)
	cur := make([]float64, n+1)
	arg := make([][]int32, p+1) // arg[j][i]: start of stage j-1 (0-based) in the best split
	for i := 1; i <= n; i++ {
		prev[i] = S[i]
	}
	prev[0] = math.Inf(1) // zero layers in >= 1 stage: impossible (stages are non-empty)
	for j := 2; j <= p; j++ {
		arg[j] = make([]int32, n+1)
		for i := range cur {
			cur[i] = math.Inf(1)
		}
		lo := j - 1
		for i := j; i <= n; i++ {
			// l ranges over j-1..i-1 (each stage non-empty); lo is the
			// smallest l with prev[l] >= S[i]-S[l] (or i-1), and it only
			// moves right as i grows
			for lo < i-1 && prev[lo] < S[i]-S[lo] {
				lo++
			}
			best, bestL := math.Inf(1), -1
			for _, l := range []int{lo - 1, lo} {
				if l < j-1 || l > i-1 {
					continue
				}
				if v := math.Max(prev[l], S[i]-S[l]); v < best {
					best, bestL = v, l
				}
			}
			cur[i] = best
			arg[j][i] = int32(bestL)
		}
		prev, cur = cur, prev
	}
	starts := make([]int, p)
	i := n
	for j := p; j >= 2; j-- {
		l := int(arg[j][i])
		starts[j-1] = l
		i = l
	}
	return starts
}

// makeStages assembles a Stages from an order and stage starts, summing
// each stage's cost directly.
func makeStages(costs []float64, order []int, starts []int) Stages {
	p := len(starts)
	st := Stages{
		Stage:  make([]int, len(costs)),
		Order:  order,
		Starts: starts,
		Cost:   make([]float64, p),
	}
	for s := range p {
		end := len(order)
		if s+1 < p {
			end = starts[s+1]
		}
		for _, v := range order[starts[s]:end] {
			st.Stage[v] = s
			st.Cost[s] += costs[v]
		}
		st.Bottleneck = math.Max(st.Bottleneck, st.Cost[s])
	}
	return st
}

// dagOrderTries is the number of seeded random topological orders SplitDAG
// tries besides its deterministic ones.
const dagOrderTries = 8

// SplitDAG splits a layer DAG into p non-empty pipeline stages such that
// every edge u->v has stage(u) <= stage(v), minimising the largest stage
// cost. edges lists the data dependencies as (from, to) layer indices.
//
// The problem is NP-hard in general; SplitDAG is a heuristic: it splits
// several topological orders optimally as chains (the index order, a
// depth-first order that keeps branches together, a breadth-first order by
// depth, and seeded random orders), keeps the best, then moves single
// layers between adjacent stages while that lowers the larger of the two
// stage costs and keeps every edge feasible. On a chain it is exact.
//
// Errors (ErrInvalidStages) name the offending layer or edge: a cost that
// is negative, NaN or infinite, an edge with an endpoint out of range or a
// self-loop, a cycle, or p outside 1..len(costs).
func SplitDAG(costs []float64, edges [][2]int, p int, seed uint64) (Stages, error) {
	if err := checkCosts(costs, p); err != nil {
		return Stages{}, err
	}
	n := len(costs)
	succ := make([][]int, n)
	pred := make([][]int, n)
	for i, e := range edges {
		u, v := e[0], e[1]
		if u < 0 || u >= n || v < 0 || v >= n {
			return Stages{}, fmt.Errorf("%w: edge %d (%d->%d): layer out of range [0,%d)", ErrInvalidStages, i, u, v, n)
		}
		if u == v {
			return Stages{}, fmt.Errorf("%w: edge %d (%d->%d): self-loop", ErrInvalidStages, i, u, v)
		}
		succ[u] = append(succ[u], v)
		pred[v] = append(pred[v], u)
	}
	for v := range n {
		slices.Sort(succ[v])
		succ[v] = slices.Compact(succ[v])
		slices.Sort(pred[v])
		pred[v] = slices.Compact(pred[v])
	}
	// Kahn's algorithm with a priority; also detects cycles.
	topo := func(prio func(v int) float64) ([]int, error) {
		indeg := make([]int, n)
		for v := range n {
			indeg[v] = len(pred[v])
		}
		var ready []int
		for v := range n {
			if indeg[v] == 0 {
				ready = append(ready, v)
			}
		}
		order := make([]int, 0, n)
		for len(ready) > 0 {
			bi := 0
			for i, v := range ready {
				if prio(v) < prio(ready[bi]) || (prio(v) == prio(ready[bi]) && v < ready[bi]) {
					bi = i
				}
			}
			v := ready[bi]
			ready[bi] = ready[len(ready)-1]
			ready = ready[:len(ready)-1]
			order = append(order, v)
			for _, u := range succ[v] {
				if indeg[u]--; indeg[u] == 0 {
					ready = append(ready, u)
				}
			}
		}
		if len(order) < n {
			for v := range n {
				if indeg[v] > 0 {
					return nil, fmt.Errorf("%w: the layer graph has a cycle through layer %d", ErrInvalidStages, v)
				}
			}
		}
		return order, nil
	}
	byIndex, err := topo(func(v int) float64 { return float64(v) })
	if err != nil {
		return Stages{}, err
	}
	depth := make([]float64, n)
	for _, v := range byIndex {
		for _, u := range succ[v] {
			depth[u] = math.Max(depth[u], depth[v]+1)
		}
	}
	candidates := [][]int{byIndex}
	if o, _ := topo(func(v int) float64 { return depth[v] }); o != nil {
		candidates = append(candidates, o)
	}
	candidates = append(candidates, dfsTopo(n, succ, pred))
	rng := rand.New(rand.NewPCG(seed, 0x2545f4914f6cdd1d))
	for range dagOrderTries {
		key := make([]float64, n)
		for v := range key {
			key[v] = rng.Float64()
		}
		o, _ := topo(func(v int) float64 { return key[v] })
		candidates = append(candidates, o)
	}
	var best Stages
	for i, order := range candidates {
		st := makeStages(costs, order, chainDP(costs, order, p))
		if i == 0 || st.Bottleneck < best.Bottleneck {
			best = st
		}
	}
	return refineStages(costs, succ, pred, best, p), nil
}

// dfsTopo returns a reverse post-order of a depth-first search from the
// sources, which keeps the layers of a branch together.
func dfsTopo(n int, succ, pred [][]int) []int {
	seen := make([]bool, n)
	post := make([]int, 0, n)
	type frame struct{ v, i int }
	for s := range n {
		if len(pred[s]) > 0 || seen[s] {
			continue
		}
		stack := []frame{{s, 0}}
		seen[s] = true
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			if f.i < len(succ[f.v]) {
				u := succ[f.v][f.i]
				f.i++
				if !seen[u] {
					seen[u] = true
					stack = append(stack, frame{u, 0})
				}
				continue
			}
			post = append(post, f.v)
			stack = stack[:len(stack)-1]
		}
	}
	slices.Reverse(post)
	return post
}

// refineStages moves single layers between adjacent stages while the move
// keeps every edge feasible and every stage non-empty and lowers the
// larger of the two stage costs (so the sum of squared stage costs falls
// and the loop ends). The result is renumbered into a topological order.
func refineStages(costs []float64, succ, pred [][]int, st Stages, p int) Stages {
	n := len(costs)
	stage := slices.Clone(st.Stage)
	cost := slices.Clone(st.Cost)
	size := make([]int, p)
	for _, s := range stage {
		size[s]++
	}
	canMove := func(v, to int) bool {
		if to == stage[v]-1 {
			for _, u := range pred[v] {
				if stage[u] > to {
					return false
				}
			}
			return true
		}
		for _, u := range succ[v] {
			if stage[u] < to {
				return false
			}
		}
		return true
	}
	for round := 0; round < 4*n+16; round++ {
		bestV, bestTo := -1, -1
		bestGain := 0.0
		for v := range n {
			a := stage[v]
			if size[a] == 1 || costs[v] == 0 {
				continue
			}
			for _, b := range [2]int{a - 1, a + 1} {
				if b < 0 || b >= p || !canMove(v, b) {
					continue
				}
				old := math.Max(cost[a], cost[b])
				nw := math.Max(cost[a]-costs[v], cost[b]+costs[v])
				if g := old - nw; g > bestGain {
					bestV, bestTo, bestGain = v, b, g
				}
			}
		}
		if bestV < 0 {
			break
		}
		a := stage[bestV]
		cost[a] -= costs[bestV]
		cost[bestTo] += costs[bestV]
		size[a]--
		size[bestTo]++
		stage[bestV] = bestTo
	}
	pos := make([]int, n)
	for i, v := range st.Order {
		pos[v] = i
	}
	order := slices.Clone(st.Order)
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(stage[a], stage[b]); c != 0 {
			return c
		}
		return cmp.Compare(pos[a], pos[b])
	})
	starts := make([]int, p)
	for i := len(order) - 1; i >= 0; i-- {
		starts[stage[order[i]]] = i
	}
	return makeStages(costs, order, starts)
}
