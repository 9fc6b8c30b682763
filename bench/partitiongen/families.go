package main

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/gpusched/gpusched/internal/kway"
)

// The irregular families: stand-ins for the finite-element, circuit and
// road graphs that real benchmark collections hold (no graph file can be
// downloaded here). Every generator is deterministic for its seed.

// edgeSet collects unit-weight undirected edges without duplicates and
// builds a graph of the vertices that have at least one edge, renumbered
// in increasing order (generators drop isolated vertices: real graphs in
// partitioning collections are connected or nearly so).
type edgeSet struct {
	n    int
	seen map[[2]int32]bool
	us   []int32
	vs   []int32
	ws   []int64
}

func newEdgeSet(n int) *edgeSet { return &edgeSet{n: n, seen: make(map[[2]int32]bool)} }

// add adds {u, v} once with weight 1; repeated pairs and self-loops are
// ignored.
func (s *edgeSet) add(u, v int) {
	if u == v {
		return
	}
	if u > v {
		u, v = v, u
	}
	k := [2]int32{int32(u), int32(v)}
	if s.seen[k] {
		return
	}
	s.seen[k] = true
	s.us, s.vs, s.ws = append(s.us, k[0]), append(s.vs, k[1]), append(s.ws, 1)
}

// addWeighted adds w to the edge {u, v} (parallel devices of a circuit add
// up); self-loops are ignored.
func (s *edgeSet) addWeighted(u, v int, w int64) {
	if u == v {
		return
	}
	s.us, s.vs, s.ws = append(s.us, int32(u)), append(s.vs, int32(v)), append(s.ws, w)
}

// build returns the graph on the non-isolated vertices; with keep != nil
// only vertices with keep[v] are kept (edges to others are dropped).
func (s *edgeSet) build(keep []bool) (*kway.Graph, error) {
	deg := make([]int, s.n)
	for i := range s.us {
		u, v := s.us[i], s.vs[i]
		if keep != nil && (!keep[u] || !keep[v]) {
			continue
		}
		deg[u]++
		deg[v]++
	}
	id := make([]int, s.n)
	m := 0
	for v := range s.n {
		id[v] = -1
		if deg[v] > 0 {
			id[v] = m
			m++
		}
	}
	b := kway.NewBuilder(m)
	for i := range s.us {
		u, v := s.us[i], s.vs[i]
		if id[u] >= 0 && id[v] >= 0 {
			b.AddEdge(id[u], id[v], s.ws[i])
		}
	}
	return b.Build()
}

// hole is a disc (2-D) or ball (3-D) removed from a mesh.
type hole struct {
	c [3]float64
	r float64
}

func inHole(hs []hole, x [3]float64) bool {
	for _, h := range hs {
		d := 0.0
		for i := range 3 {
			d += (x[i] - h.c[i]) * (x[i] - h.c[i])
		}
		if d < h.r*h.r {
			return true
		}
	}
	return false
}

// randomHoles draws count holes with centres in the middle 80% of a
// side x side (x side) box and radii of rmin..rmax times the side.
func randomHoles(rng *rand.Rand, count int, side float64, dims int, rmin, rmax float64) []hole {
	hs := make([]hole, count)
	for i := range hs {
		for d := range dims {
			hs[i].c[d] = side * (0.1 + 0.8*rng.Float64())
		}
		hs[i].r = side * (rmin + (rmax-rmin)*rng.Float64())
	}
	return hs
}

// meshHoles2D is a triangular finite-element mesh of a square plate with
// circular holes (radii 3-12% of the side): a side x side lattice whose cells are split into two
// triangles along a random diagonal, refined (a lattice of twice the
// density) in the left third of the plate, with every triangle that has a
// vertex inside a hole removed. Edges are the triangles' edges.
func meshHoles2D(side, holes int, seed uint64) (*kway.Graph, error) {
	rng := rand.New(rand.NewPCG(seed, 11))
	hs := randomHoles(rng, holes, float64(side), 2, 0.03, 0.12)
	// Two lattices: a coarse one on x >= side/3 and one with half the
	// spacing on x <= side/3; they share the points of the line x = side/3
	// (every second fine point), where the fine triangles meet the coarse
	// ones through a strip of transition triangles.
	third := side / 3
	fine := 2 * third // fine lattice columns 0..fine, rows 0..2*side
	fid := func(i, j int) int { return i*(2*side+1) + j }
	nFine := (fine + 1) * (2*side + 1)
	cid := func(i, j int) int { return nFine + (i-third)*(side+1) + j } // coarse column i >= third
	n := nFine + (side-third+1)*(side+1)
	pos := make([][3]float64, n)
	for i := 0; i <= fine; i++ {
		for j := 0; j <= 2*side; j++ {
			pos[fid(i, j)] = [3]float64{float64(i) / 2, float64(j) / 2}
		}
	}
	for i := third; i <= side; i++ {
		for j := 0; j <= side; j++ {
			pos[cid(i, j)] = [3]float64{float64(i), float64(j)}
		}
	}
	// the shared line: coarse column third is fine column fine, even rows
	shared := func(v int) int {
		if v >= nFine {
			i, j := third+(v-nFine)/(side+1), (v-nFine)%(side+1)
			if i == third {
				return fid(fine, 2*j)
			}
		}
		return v
	}
	keep := make([]bool, n)
	for v := range n {
		keep[v] = !inHole(hs, pos[v])
	}
	es := newEdgeSet(n)
	tri := func(a, b, c int) {
		a, b, c = shared(a), shared(b), shared(c)
		if !keep[a] || !keep[b] || !keep[c] {
			return
		}
		es.add(a, b)
		es.add(b, c)
		es.add(a, c)
	}
	quad := func(a, b, c, d int) { // corners in cyclic order
		if rng.IntN(2) == 0 {
			tri(a, b, c)
			tri(a, c, d)
		} else {
			tri(a, b, d)
			tri(b, c, d)
		}
	}
	for i := 0; i < fine; i++ {
		for j := 0; j < 2*side; j++ {
			quad(fid(i, j), fid(i+1, j), fid(i+1, j+1), fid(i, j+1))
		}
	}
	for i := third; i < side; i++ {
		for j := 0; j < side; j++ {
			if i == third {
				// transition cell: the fine point in the middle of its
				// left edge splits it into three triangles
				m := fid(fine, 2*j+1)
				tri(cid(i, j), cid(i+1, j), m)
				tri(cid(i+1, j), cid(i+1, j+1), m)
				tri(cid(i+1, j+1), cid(i, j+1), m)
				continue
			}
			quad(cid(i, j), cid(i+1, j), cid(i+1, j+1), cid(i, j+1))
		}
	}
	return es.build(nil)
}

// meshHoles3D is a tetrahedral finite-element mesh of a cube with
// spherical holes (radii 8-20% of the side): a side^3 lattice with the edges of the Kuhn
// (Freudenthal) triangulation, which splits each cube into six tetrahedra
// (neighbours along the axes, the face diagonals (1,1,0), (1,0,1),
// (0,1,1) and the main diagonal (1,1,1)), lattice points inside a hole
// removed.
func meshHoles3D(side, holes int, seed uint64) (*kway.Graph, error) {
	rng := rand.New(rand.NewPCG(seed, 13))
	hs := randomHoles(rng, holes, float64(side), 3, 0.08, 0.2)
	id := func(i, j, k int) int { return (i*side+j)*side + k }
	n := side * side * side
	keep := make([]bool, n)
	for i := range side {
		for j := range side {
			for k := range side {
				keep[id(i, j, k)] = !inHole(hs, [3]float64{float64(i), float64(j), float64(k)})
			}
		}
	}
	es := newEdgeSet(n)
	offs := [][3]int{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 0}, {1, 0, 1}, {0, 1, 1}, {1, 1, 1}}
	for i := range side {
		for j := range side {
			for k := range side {
				for _, o := range offs {
					a, b, c := i+o[0], j+o[1], k+o[2]
					if a < side && b < side && c < side {
						es.add(id(i, j, k), id(a, b, c))
					}
				}
			}
		}
	}
	return es.build(keep)
}

// powerLaw is a Chung-Lu random graph whose expected degrees follow a
// power law with exponent gamma (P(deg = d) ~ d^-gamma) and mean avgDeg:
// m = n*avgDeg/2 edges, each endpoint drawn with probability proportional
// to its vertex's weight (i+1)^(-1/(gamma-1)). Self-loops and repeated
// pairs are dropped, as are isolated vertices. Unlike Barabasi-Albert
// graphs (minimum degree m), most vertices have degree 1-3 and hang off
// hubs, as in web, social and citation graphs.
func powerLaw(n int, gamma, avgDeg float64, seed uint64) (*kway.Graph, error) {
	rng := rand.New(rand.NewPCG(seed, 17))
	cum := make([]float64, n)
	s := 0.0
	for i := range n {
		s += math.Pow(float64(i+1), -1/(gamma-1))
		cum[i] = s
	}
	// a random labelling, so that hubs are not vertices 0, 1, 2...
	label := rng.Perm(n)
	pick := func() int {
		x := rng.Float64() * s
		i, _ := slices.BinarySearch(cum, x)
		return label[min(i, n-1)]
	}
	es := newEdgeSet(n)
	m := int(float64(n) * avgDeg / 2)
	for range m {
		es.add(pick(), pick())
	}
	return es.build(nil)
}

// circuit is the graph of a netlist as circuit simulators see it (the
// sparsity pattern of modified nodal analysis): vertices are circuit
// nodes, each device joins the nodes it connects, parallel devices add
// up to heavier edges. Locality follows Rent's rule through a binary
// module hierarchy: a device from node u stays inside u's module of 2^l
// nodes but leaves its module of 2^(l-1) with probability proportional
// to 2^(-l*(1-rent)), rent = 0.6. A few global nets (ground, supply,
// clock, reset) touch 0.5-5% of all nodes each and become hubs.
func circuit(n int, seed uint64) (*kway.Graph, error) {
	rng := rand.New(rand.NewPCG(seed, 19))
	const rent = 0.6
	levels := max(int(math.Ceil(math.Log2(float64(n)))), 1)
	pl := make([]float64, levels+1)
	s := 0.0
	for l := 1; l <= levels; l++ {
		s += math.Pow(2, -float64(l)*(1-rent))
		pl[l] = s
	}
	es := newEdgeSet(n)
	// devices per node: 1-6, mostly 2-3 (transistor nodes, gate outputs)
	devs := []int{1, 2, 2, 2, 3, 3, 3, 4, 5, 6}
	for u := range n {
		for range devs[rng.IntN(len(devs))] {
			x := rng.Float64() * s
			l, _ := slices.BinarySearch(pl[1:], x)
			l++
			size := 1 << l
			base := u &^ (size - 1)
			half := size / 2
			// a node of the other half of the 2^l module
			other := base + (u-base+half)%size&^(half-1) + rng.IntN(half)
			if other >= n {
				other = base + rng.IntN(half) // the module is cut short at n
			}
			if other < n {
				es.addWeighted(u, other, 1)
			}
		}
	}
	globals := []float64{0.05, 0.04, 0.01, 0.005}
	hub := make([]int, len(globals))
	for i := range hub {
		hub[i] = rng.IntN(n)
	}
	for i, f := range globals {
		for u := range n {
			if rng.Float64() < f {
				es.addWeighted(u, hub[i], 1)
			}
		}
	}
	// relabel randomly: node numbers carry no layout information
	perm := rng.Perm(n)
	for i := range es.us {
		es.us[i], es.vs[i] = int32(perm[es.us[i]]), int32(perm[es.vs[i]])
	}
	return es.build(nil)
}

// road is a road-network-like graph: n junctions in the unit square, 70%
// of them in towns (Gaussian clusters of varying spread) and 30% spread
// over the countryside; the roads are the Euclidean minimum spanning tree
// of the 5-nearest-neighbour graph plus, with probability 0.15 each, the
// remaining nearest-neighbour edges, taken shortest first, as long as both ends
// have degree below 4. Only the largest connected piece is kept. The
// result is nearly planar with mean degree about 2.5 and long chains of
// degree-2 vertices, like OpenStreetMap or DIMACS road graphs.
func road(n int, seed uint64) (*kway.Graph, error) {
	rng := rand.New(rand.NewPCG(seed, 23))
	xs, ys := make([]float64, n), make([]float64, n)
	towns := max(int(math.Sqrt(float64(n))/3), 1)
	tx, ty, ts := make([]float64, towns), make([]float64, towns), make([]float64, towns)
	for i := range towns {
		tx[i], ty[i] = rng.Float64(), rng.Float64()
		ts[i] = 0.005 + 0.04*rng.Float64()
	}
	for i := range n {
		if rng.Float64() < 0.7 {
			t := rng.IntN(towns)
			xs[i] = min(max(tx[t]+ts[t]*rng.NormFloat64(), 0), 1)
			ys[i] = min(max(ty[t]+ts[t]*rng.NormFloat64(), 0), 1)
		} else {
			xs[i], ys[i] = rng.Float64(), rng.Float64()
		}
	}
	type cand struct {
		u, v int32
		d    float64
	}
	const knn = 5
	cands := nearest(xs, ys, knn)
	seen := make(map[[2]int32]bool, len(cands))
	var es []cand
	for u, nb := range cands {
		for _, v := range nb {
			a, b := int32(u), v
			if a > b {
				a, b = b, a
			}
			if !seen[[2]int32{a, b}] {
				seen[[2]int32{a, b}] = true
				es = append(es, cand{a, b, math.Hypot(xs[a]-xs[b], ys[a]-ys[b])})
			}
		}
	}
	slices.SortFunc(es, func(a, b cand) int {
		if c := cmp.Compare(a.d, b.d); c != 0 {
			return c
		}
		if c := cmp.Compare(a.u, b.u); c != 0 {
			return c
		}
		return cmp.Compare(a.v, b.v)
	})
	uf := make([]int32, n)
	for i := range uf {
		uf[i] = int32(i)
	}
	find := func(x int32) int32 {
		for uf[x] != x {
			uf[x] = uf[uf[x]]
			x = uf[x]
		}
		return x
	}
	deg := make([]int, n)
	set := newEdgeSet(n)
	var extra []cand
	for _, e := range es {
		a, b := find(e.u), find(e.v)
		if a != b {
			uf[a] = b
			set.add(int(e.u), int(e.v))
			deg[e.u]++
			deg[e.v]++
		} else {
			extra = append(extra, e)
		}
	}
	for _, e := range extra {
		if rng.Float64() < 0.15 && deg[e.u] < 4 && deg[e.v] < 4 {
			set.add(int(e.u), int(e.v))
			deg[e.u]++
			deg[e.v]++
		}
	}
	// keep the largest tree of the spanning forest
	size := make([]int, n)
	for v := range n {
		size[find(int32(v))]++
	}
	big := int32(0)
	for v := range int32(n) {
		if size[v] > size[big] {
			big = v
		}
	}
	keep := make([]bool, n)
	for v := range n {
		keep[v] = find(int32(v)) == big
	}
	return set.build(keep)
}

// nearest returns the k nearest other points of every point (fewer when
// there are not k others), by a bucket grid searched in growing rings.
func nearest(xs, ys []float64, k int) [][]int32 {
	n := len(xs)
	cells := max(int(math.Sqrt(float64(n)/2)), 1)
	cell := func(x float64) int { return min(int(x*float64(cells)), cells-1) }
	bucket := make([][]int32, cells*cells)
	for i := range n {
		c := cell(xs[i])*cells + cell(ys[i])
		bucket[c] = append(bucket[c], int32(i))
	}
	out := make([][]int32, n)
	type cd struct {
		j int32
		d float64
	}
	var best []cd
	for i := range n {
		cx, cy := cell(xs[i]), cell(ys[i])
		best = best[:0]
		for r := 0; r <= cells; r++ {
			for x := cx - r; x <= cx+r; x++ {
				for y := cy - r; y <= cy+r; y++ {
					if x < 0 || y < 0 || x >= cells || y >= cells || (max(abs(x-cx), abs(y-cy)) != r) {
						continue
					}
					for _, j := range bucket[x*cells+y] {
						if int(j) != i {
							best = append(best, cd{j, math.Hypot(xs[i]-xs[j], ys[i]-ys[j])})
						}
					}
				}
			}
			// points in ring r+1 or beyond are at least r/cells away
			if len(best) >= k {
				slices.SortFunc(best, func(a, b cd) int {
					if c := cmp.Compare(a.d, b.d); c != 0 {
						return c
					}
					return cmp.Compare(a.j, b.j)
				})
				if best[k-1].d <= float64(r)/float64(cells) {
					break
				}
			}
		}
		m := min(k, len(best))
		out[i] = make([]int32, m)
		for t := range m {
			out[i][t] = best[t].j
		}
	}
	return out
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
