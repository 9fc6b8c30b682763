package kway

import (
	"fmt"
	"iter"
	"math"
)

// Graph is an undirected graph with non-negative int64 vertex and edge
// weights, stored in compressed sparse row (CSR) form. Vertices are numbered
// 0..NumVertices()-1. Each row lists its neighbours in increasing order, so a
// Graph built from the same edge set is identical whatever order the edges
// were added in.
//
// Weights are integers on purpose: gains and cuts are compared exactly, and
// the METIS file format is integral. For a worker graph, use vertex weight 1
// per worker (or GPUs per worker) and edge weight = bytes exchanged per
// iteration.
//
// A Graph is immutable once built and safe for concurrent use by readers.
type Graph struct {
	xadj []int32 // row offsets, len n+1
	adj  []int32 // neighbours, both directions stored
	ew   []int64 // weight of adj[i]
	vw   []int64 // vertex weights

	totalVW int64
	maxVW   int64
	totalEW int64 // each undirected edge counted once
}

// Edge is an undirected weighted edge between vertices U and V. The weight W
// is in the caller's unit (for a worker graph: bytes per iteration).
type Edge struct {
	U, V int   // endpoints, 0..n-1, distinct
	W    int64 // weight, >= 0
}

// maxVertices bounds graphs so that indices fit in int32.
const maxVertices = math.MaxInt32 - 1

// NumVertices returns the number of vertices.
func (g *Graph) NumVertices() int { return len(g.vw) }

// NumEdges returns the number of undirected edges (each counted once).
func (g *Graph) NumEdges() int { return len(g.adj) / 2 }

// VertexWeight returns the weight of vertex v. It panics if v is out of
// range, like a slice index.
func (g *Graph) VertexWeight(v int) int64 { return g.vw[v] }

// TotalVertexWeight returns the sum of all vertex weights.
func (g *Graph) TotalVertexWeight() int64 { return g.totalVW }

// TotalEdgeWeight returns the sum of all edge weights, each undirected edge
// counted once. It is an upper bound on any cut.
func (g *Graph) TotalEdgeWeight() int64 { return g.totalEW }

// Degree returns the number of neighbours of vertex v.
func (g *Graph) Degree(v int) int { return int(g.xadj[v+1] - g.xadj[v]) }

// Neighbors yields each neighbour u of vertex v, in increasing order, with
// the weight of the edge {v, u}.
func (g *Graph) Neighbors(v int) iter.Seq2[int, int64] {
	return func(yield func(int, int64) bool) {
		for i := g.xadj[v]; i < g.xadj[v+1]; i++ {
			if !yield(int(g.adj[i]), g.ew[i]) {
				return
			}
		}
	}
}

// Edges yields every undirected edge once, with U < V, ordered by U then V.
func (g *Graph) Edges() iter.Seq[Edge] {
	return func(yield func(Edge) bool) {
		for v := range g.vw {
			for i := g.xadj[v]; i < g.xadj[v+1]; i++ {
				if u := int(g.adj[i]); u > v {
					if !yield(Edge{U: v, V: u, W: g.ew[i]}) {
						return
					}
				}
			}
		}
	}
}

// Builder accumulates vertex weights and edges and produces a Graph. Edges
// may be added in any order and in either direction; repeated edges between
// the same pair are merged by adding their weights; edges of weight 0 are
// dropped (they never contribute to a cut). Every vertex starts with weight 1.
//
// The first invalid call is remembered: it is returned by that call and again
// by Build, so a caller may check errors only at Build.
type Builder struct {
	n    int
	vw   []int64
	us   []int32
	vs   []int32
	ws   []int64
	err  error
	done bool
}

// NewBuilder returns a Builder for a graph with n vertices, each of weight 1.
// A negative or too large n is reported by Build.
func NewBuilder(n int) *Builder {
	b := &Builder{n: n}
	switch {
	case n < 0:
		b.err = fmt.Errorf("%w: negative vertex count %d", ErrInvalidGraph, n)
	case n > maxVertices:
		b.err = fmt.Errorf("%w: %d vertices exceed the limit of %d", ErrInvalidGraph, n, maxVertices)
	default:
		b.vw = make([]int64, n)
		for i := range b.vw {
			b.vw[i] = 1
		}
	}
	return b
}

func (b *Builder) fail(err error) error {
	if b.err == nil {
		b.err = err
	}
	return err
}

// SetVertexWeight sets the weight of vertex v (for a worker graph: 1, or the
// number of GPUs the worker occupies). It rejects an out-of-range vertex or a
// negative weight.
func (b *Builder) SetVertexWeight(v int, w int64) error {
	if b.done {
		return fmt.Errorf("%w: Builder used after Build", ErrInvalidGraph)
	}
	if b.err != nil && b.vw == nil {
		return b.err
	}
	if v < 0 || v >= b.n {
		return b.fail(fmt.Errorf("%w: vertex %d out of range [0,%d)", ErrInvalidGraph, v, b.n))
	}
	if w < 0 {
		return b.fail(fmt.Errorf("%w: vertex %d has negative weight %d", ErrInvalidGraph, v, w))
	}
	b.vw[v] = w
	return nil
}

// AddEdge adds the undirected edge {u, v} with weight w. It rejects
// self-loops, endpoints out of range and negative weights, naming the edge.
func (b *Builder) AddEdge(u, v int, w int64) error {
	if b.done {
		return fmt.Errorf("%w: Builder used after Build", ErrInvalidGraph)
	}
	if b.err != nil && b.vw == nil {
		return b.err
	}
	switch {
	case u < 0 || u >= b.n || v < 0 || v >= b.n:
		return b.fail(fmt.Errorf("%w: edge (%d,%d): endpoint out of range [0,%d)", ErrInvalidGraph, u, v, b.n))
	case u == v:
		return b.fail(fmt.Errorf("%w: edge (%d,%d): self-loop", ErrInvalidGraph, u, v))
	case w < 0:
		return b.fail(fmt.Errorf("%w: edge (%d,%d): negative weight %d", ErrInvalidGraph, u, v, w))
	case w == 0:
		return nil
	}
	if len(b.us) >= math.MaxInt32/2 {
		return b.fail(fmt.Errorf("%w: edge (%d,%d): too many edges", ErrInvalidGraph, u, v))
	}
	b.us = append(b.us, int32(u))
	b.vs = append(b.vs, int32(v))
	b.ws = append(b.ws, w)
	return nil
}

// Build returns the graph, or the first error recorded by the Builder. It
// also rejects weight totals that overflow int64. The Builder must not be
// used after Build.
func (b *Builder) Build() (*Graph, error) {
	if b.err != nil {
		return nil, b.err
	}
	if b.done {
		return nil, fmt.Errorf("%w: Builder.Build called twice", ErrInvalidGraph)
	}
	b.done = true
	n := b.n
	m2 := 2 * len(b.us)
	// Counting sort of the arcs: first by target, then stably by source, so
	// each row comes out sorted by neighbour.
	cnt := make([]int32, n+1)
	for i := range b.us {
		cnt[b.us[i]+1]++
		cnt[b.vs[i]+1]++
	}
	for i := 1; i <= n; i++ {
		cnt[i] += cnt[i-1]
	}
	// pass 1: by target
	tsrc := make([]int32, m2)
	tdst := make([]int32, m2)
	tw := make([]int64, m2)
	pos := make([]int32, n+1)
	copy(pos, cnt)
	put := func(s, d int32, w int64) {
		p := pos[d]
		pos[d]++
		tsrc[p], tdst[p], tw[p] = s, d, w
	}
	for i := range b.us {
		put(b.us[i], b.vs[i], b.ws[i])
		put(b.vs[i], b.us[i], b.ws[i])
	}
	// pass 2: stable by source
	adj := make([]int32, m2)
	ew := make([]int64, m2)
	copy(pos, cnt)
	for i := 0; i < m2; i++ {
		s := tsrc[i]
		p := pos[s]
		pos[s]++
		adj[p] = tdst[i]
		ew[p] = tw[i]
	}
	tsrc, tdst, tw = nil, nil, nil
	// merge duplicates within each (sorted) row
	xadj := make([]int32, n+1)
	k := int32(0)
	for v := 0; v < n; v++ {
		xadj[v] = k
		start := k
		for i := cnt[v]; i < cnt[v+1]; i++ {
			if k > start && adj[k-1] == adj[i] {
				s := ew[k-1] + ew[i]
				if s < ew[k-1] {
					return nil, fmt.Errorf("%w: edge (%d,%d): merged weight overflows int64", ErrInvalidGraph, v, adj[i])
				}
				ew[k-1] = s
				continue
			}
			adj[k] = adj[i]
			ew[k] = ew[i]
			k++
		}
	}
	xadj[n] = k
	g := &Graph{xadj: xadj, adj: adj[:k:k], ew: ew[:k:k], vw: b.vw}
	if err := g.computeTotals(); err != nil {
		return nil, err
	}
	b.us, b.vs, b.ws, b.vw = nil, nil, nil, nil
	return g, nil
}

// computeTotals fills the cached totals, reporting int64 overflow.
func (g *Graph) computeTotals() error {
	var tv, mv int64
	for v, w := range g.vw {
		if tv+w < tv {
			return fmt.Errorf("%w: total vertex weight overflows int64 at vertex %d", ErrInvalidGraph, v)
		}
		tv += w
		mv = max(mv, w)
	}
	var te int64
	for v := range g.vw {
		for i := g.xadj[v]; i < g.xadj[v+1]; i++ {
			if int(g.adj[i]) > v {
				if te+g.ew[i] < te {
					return fmt.Errorf("%w: total edge weight overflows int64 at edge (%d,%d)", ErrInvalidGraph, v, g.adj[i])
				}
				te += g.ew[i]
			}
		}
	}
	g.totalVW, g.maxVW, g.totalEW = tv, mv, te
	return nil
}

// FromEdges builds a graph with n vertices from a list of edges. vw gives the
// vertex weights; nil means every vertex weighs 1. It is a shorthand for a
// Builder and reports the same errors.
func FromEdges(n int, vw []int64, edges []Edge) (*Graph, error) {
	b := NewBuilder(n)
	if vw != nil {
		if len(vw) != n {
			return nil, fmt.Errorf("%w: %d vertex weights for %d vertices", ErrInvalidGraph, len(vw), n)
		}
		for v, w := range vw {
			if err := b.SetVertexWeight(v, w); err != nil {
				return nil, err
			}
		}
	}
	for _, e := range edges {
		if err := b.AddEdge(e.U, e.V, e.W); err != nil {
			return nil, err
		}
	}
	return b.Build()
}

// EdgeCut returns the total weight of the edges of g whose endpoints lie in
// different parts of part (part[v] is the part of vertex v). It reports a
// part slice of the wrong length.
func EdgeCut(g *Graph, part []int) (int64, error) {
	if len(part) != g.NumVertices() {
		return 0, fmt.Errorf("%w: %d part labels for %d vertices", ErrInvalidOptions, len(part), g.NumVertices())
	}
	var cut int64
	for v := range g.vw {
		for i := g.xadj[v]; i < g.xadj[v+1]; i++ {
			if u := g.adj[i]; int(u) > v && part[u] != part[v] {
				cut += g.ew[i]
			}
		}
	}
	return cut, nil
}
