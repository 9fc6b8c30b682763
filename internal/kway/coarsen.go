package kway

import (
	"math/rand/v2"
)

// level is one step of a multilevel hierarchy: the graph at this level and
// the map from its vertices to the vertices of the next, coarser graph.
type level struct {
	g    *Graph
	cmap []int32
}

// coarsenFraction: a level that keeps more than this fraction of the
// vertices counts as a stall, and coarsening stops after it (as in METIS).
const coarsenFraction = 0.85

// coarsen builds a hierarchy by repeated heavy-edge matching until the
// graph has at most `to` vertices or coarsening stalls. No coarse vertex is
// heavier than maxVW unless a single fine vertex already is. It returns the
// levels (finest first) and the coarsest graph.
func coarsen(g *Graph, to int, maxVW int64, rng *rand.Rand, s *matchScratch) ([]level, *Graph) {
	levels, cg, _ := coarsenWithin(g, nil, to, maxVW, rng, s)
	return levels, cg
}

// coarsenWithin is coarsen that, with a partition part of g (nil: none),
// never merges vertices of different parts, and returns the partition of
// the coarsest graph that part induces (nil for nil part): projected back
// through the levels, it gives part again. It is the coarsening of a
// V-cycle.
func coarsenWithin(g *Graph, part []int32, to int, maxVW int64, rng *rand.Rand, s *matchScratch) ([]level, *Graph, []int32) {
	var levels []level
	for g.NumVertices() > to && g.NumEdges() > 0 {
		s.side = part
		match := s.matchHeavyEdge(g, maxVW, rng)
		s.side = nil
		cmap, cg := contract(g, match, s)
		levels = append(levels, level{g: g, cmap: cmap})
		if part != nil {
			cpart := make([]int32, cg.NumVertices())
			for v, c := range cmap {
				cpart[c] = part[v]
			}
			part = cpart
		}
		n := g.NumVertices()
		g = cg
		if float64(cg.NumVertices()) > coarsenFraction*float64(n) {
			break
		}
	}
	return levels, g, part
}

// matchScratch holds buffers reused by every matching and contraction.
type matchScratch struct {
	// side, when set, is a partition of the graph being matched: only
	// vertices of the same part are matched (coarsenWithin).
	side  []int32
	match []int32
	order []int32
	perm  []int32
	cnt   []int32
	htab  []int32
	lists []int32
}

// matchHeavyEdge computes a matching: vertices are visited in increasing
// degree order (ties in random order) and each unmatched vertex is matched
// with the unmatched neighbour joined by the heaviest edge, subject to the
// weight bound. When many vertices stay unmatched (stars in power-law
// graphs), unmatched vertices sharing a neighbour are matched together and
// isolated vertices are paired. match[v] == v marks a singleton.
func (s *matchScratch) matchHeavyEdge(g *Graph, maxVW int64, rng *rand.Rand) []int32 {
	n := g.NumVertices()
	s.match = grow(s.match, n)
	s.order = grow(s.order, n)
	s.perm = grow(s.perm, n)
	s.htab = grow(s.htab, n)
	match, order, perm, side := s.match, s.order, s.perm, s.side
	for i := range match {
		match[i] = -1
	}
	// random permutation, then stable counting sort by (capped) degree
	for i := range perm {
		perm[i] = int32(i)
	}
	shuffle(rng, perm)
	const maxBucket = 64
	var cnt [maxBucket + 2]int32
	for _, v := range perm {
		d := min(g.Degree(int(v)), maxBucket)
		cnt[d+1]++
	}
	for i := 1; i < len(cnt); i++ {
		cnt[i] += cnt[i-1]
	}
	for _, v := range perm {
		d := min(g.Degree(int(v)), maxBucket)
		order[cnt[d]] = v
		cnt[d]++
	}
	unmatched := 0
	var lastIsolated int32 = -1
	for _, u := range order {
		if match[u] >= 0 {
			continue
		}
		lo, hi := g.xadj[u], g.xadj[u+1]
		if lo == hi {
			// pair isolated vertices with each other
			if lastIsolated >= 0 && g.vw[u]+g.vw[lastIsolated] <= maxVW && (side == nil || side[u] == side[lastIsolated]) {
				match[u], match[lastIsolated] = lastIsolated, u
				lastIsolated = -1
				unmatched--
			} else {
				lastIsolated = u
				unmatched++
			}
			continue
		}
		best := int32(-1)
		var bestW int64 = -1
		room := maxVW - g.vw[u]
		// The edge weight is tested first: it is read in sequence, while
		// the neighbour's state and weight are random accesses (with unit
		// weights only the neighbours up to the first unmatched one are
		// looked up).
		ew, adj := g.ew[lo:hi], g.adj[lo:hi]
		if side == nil {
			for i, w := range ew {
				if w > bestW {
					if v := adj[i]; match[v] < 0 && g.vw[v] <= room {
						best, bestW = v, w
					}
				}
			}
		} else {
			su := side[u]
			for i, w := range ew {
				if w > bestW {
					if v := adj[i]; match[v] < 0 && g.vw[v] <= room && side[v] == su {
						best, bestW = v, w
					}
				}
			}
		}
		if best >= 0 {
			match[u], match[best] = best, u
		} else {
			unmatched++
		}
	}
	if unmatched > n/10 {
		s.match2Hop(g, match, 2, maxVW, perm)
		s.match2Hop(g, match, n, maxVW, perm)
	}
	for i := range match {
		if match[i] < 0 {
			match[i] = int32(i)
		}
	}
	return match
}

// match2Hop pairs unmatched vertices of degree < maxDeg that share a
// neighbour, visiting the shared neighbours in the order given by perm.
func (s *matchScratch) match2Hop(g *Graph, match []int32, maxDeg int, maxVW int64, perm []int32) {
	n := g.NumVertices()
	s.cnt = grow(s.cnt, n+1)
	cnt := s.cnt
	clear(cnt)
	total := 0
	for v := range n {
		if match[v] >= 0 {
			continue
		}
		if d := g.Degree(v); d > 0 && d < maxDeg {
			for i := g.xadj[v]; i < g.xadj[v+1]; i++ {
				cnt[g.adj[i]+1]++
			}
			total += d
		}
	}
	if total == 0 {
		return
	}
	for i := 1; i <= n; i++ {
		cnt[i] += cnt[i-1]
	}
	s.lists = grow(s.lists, total)
	lists := s.lists
	pos := s.htab[:n]
	copy(pos, cnt[:n])
	for v := range n {
		if match[v] >= 0 {
			continue
		}
		if d := g.Degree(v); d > 0 && d < maxDeg {
			for i := g.xadj[v]; i < g.xadj[v+1]; i++ {
				x := g.adj[i]
				lists[pos[x]] = int32(v)
				pos[x]++
			}
		}
	}
	for _, x := range perm {
		pending := int32(-1)
		for j := cnt[x]; j < cnt[x+1]; j++ {
			v := lists[j]
			if match[v] >= 0 {
				continue
			}
			if pending < 0 {
				pending = v
				continue
			}
			if g.vw[pending]+g.vw[v] <= maxVW && (s.side == nil || s.side[pending] == s.side[v]) {
				match[pending], match[v] = v, pending
				pending = -1
			}
		}
	}
}

// contract builds the coarse graph of a matching. Coarse vertices are
// numbered in order of their smallest fine vertex.
func contract(g *Graph, match []int32, s *matchScratch) ([]int32, *Graph) {
	n := g.NumVertices()
	cmap := make([]int32, n)
	for i := range cmap {
		cmap[i] = -1
	}
	cn := int32(0)
	for v := range n {
		if cmap[v] < 0 {
			cmap[v] = cn
			cmap[match[v]] = cn
			cn++
		}
	}
	xadj := make([]int32, cn+1)
	cadj := make([]int32, len(g.adj))
	cew := make([]int64, len(g.adj))
	cvw := make([]int64, cn)
	htab := s.htab[:cn]
	for i := range htab {
		htab[i] = -1
	}
	gx, ga, gw := g.xadj, g.adj, g.ew
	nc := int32(0) // entries written
	c := int32(0)
	for v := range int32(n) {
		if cmap[v] != c {
			continue // already handled as the partner of a smaller vertex
		}
		start := nc
		m := match[v]
		w := g.vw[v]
		for u := v; ; u = m {
			for i := gx[u]; i < gx[u+1]; i++ {
				cu := cmap[ga[i]]
				if cu == c {
					continue
				}
				if h := htab[cu]; h >= 0 {
					cew[h] += gw[i]
				} else {
					htab[cu] = nc
					cadj[nc] = cu
					cew[nc] = gw[i]
					nc++
				}
			}
			if u == m {
				break
			}
			w += g.vw[m]
		}
		cvw[c] = w
		for _, u := range cadj[start:nc] {
			htab[u] = -1
		}
		c++
		xadj[c] = nc
	}
	cg := &Graph{xadj: xadj, adj: cadj[:nc:nc], ew: cew[:nc:nc], vw: cvw}
	cg.totalVW = g.totalVW
	var mv, te int64
	for _, w := range cg.vw {
		mv = max(mv, w)
	}
	for _, w := range cg.ew {
		te += w
	}
	cg.maxVW, cg.totalEW = mv, te/2
	return cmap, cg
}
