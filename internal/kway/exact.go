package kway

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// MaxExactVertices is the largest number of vertices Exact accepts.
const MaxExactVertices = 12

// Exact returns a partition of minimum cut among all assignments that
// respect the same per-part limits as Partition (Options.Mode,
// Capacities, Imbalance; Seed, Method and Trials are ignored). It
// enumerates assignments by branch and bound, with symmetry breaking
// between parts of equal limit, so it is meant for tiny graphs: at most
// MaxExactVertices vertices. It serves as the independent reference that
// tests compare Partition with, and can place small jobs optimally.
//
// Errors: those of Partition, ErrTooLarge for more than MaxExactVertices
// vertices, and ErrInfeasible when no assignment fits the limits.
func Exact(g *Graph, opts Options) (Result, error) {
	if g == nil {
		return Result{}, fmt.Errorf("%w: nil graph", ErrInvalidGraph)
	}
	n := g.NumVertices()
	if n > MaxExactVertices {
		return Result{}, fmt.Errorf("%w: %d vertices, Exact accepts at most %d", ErrTooLarge, n, MaxExactVertices)
	}
	c, err := checkOptions(g, opts)
	if err != nil {
		return Result{}, err
	}
	k := c.k
	// Visit heavy-degree vertices first: their edges fix the cut early.
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	wdeg := func(v int) int64 {
		var s int64
		for _, w := range g.Neighbors(v) {
			s += w
		}
		return s
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(wdeg(b), wdeg(a)) })
	// Dense adjacency for speed.
	adj := make([][]int64, n)
	for v := range n {
		adj[v] = make([]int64, n)
		for u, w := range g.Neighbors(v) {
			adj[v][u] = w
		}
	}
	// Parts with equal limits are interchangeable: a vertex may open at
	// most one new (so far empty) part of each limit class, the first.
	class := make([]int, k)
	classOf := map[int64]int{}
	for p, l := range c.limit {
		id, ok := classOf[l]
		if !ok {
			id = len(classOf)
			classOf[l] = id
		}
		class[p] = id
	}
	part := make([]int, n)
	for i := range part {
		part[i] = -1
	}
	pw := make([]int64, k)
	used := make([]int, k) // vertices in each part
	best := make([]int, n)
	bestCut := int64(math.MaxInt64)
	found := false
	seen := make([][]bool, n) // per depth: limit classes already opened
	for i := range seen {
		seen[i] = make([]bool, len(classOf))
	}
	var rec func(i int, cut int64)
	rec = func(i int, cut int64) {
		if cut >= bestCut {
			return
		}
		if i == n {
			bestCut, found = cut, true
			copy(best, part)
			return
		}
		// lower bound: each unassigned vertex pays at least its cheapest
		// connection cost to the already assigned vertices
		var lb int64
		for _, u := range order[i:] {
			cheapest := int64(math.MaxInt64)
			for p := range k {
				if pw[p]+g.vw[u] > c.limit[p] {
					continue
				}
				var x int64
				for _, a := range order[:i] {
					if part[a] != p {
						x += adj[u][a]
					}
				}
				cheapest = min(cheapest, x)
			}
			if cheapest == math.MaxInt64 {
				return // u fits nowhere
			}
			lb += cheapest
		}
		if cut+lb >= bestCut {
			return
		}
		v := order[i]
		wv := g.vw[v]
		seenClass := seen[i]
		clear(seenClass)
		for p := range k {
			if pw[p]+wv > c.limit[p] {
				continue
			}
			if used[p] == 0 {
				if seenClass[class[p]] {
					continue
				}
				seenClass[class[p]] = true
			}
			var add int64
			for _, a := range order[:i] {
				if part[a] != p {
					add += adj[v][a]
				}
			}
			part[v] = p
			pw[p] += wv
			used[p]++
			rec(i+1, cut+add)
			used[p]--
			pw[p] -= wv
			part[v] = -1
		}
	}
	rec(0, 0)
	if !found {
		return Result{}, fmt.Errorf("%w: no assignment of the %d vertices fits the part limits", ErrInfeasible, n)
	}
	res := Result{Part: best, Cut: bestCut, PartWeights: make([]int64, k), MaxWeights: c.limit}
	for v, p := range best {
		res.PartWeights[p] += g.vw[v]
	}
	return res, nil
}
