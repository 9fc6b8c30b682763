package partition

import (
	"io"

	"github.com/gpusched/gpusched/internal/kway"
)

// This file holds exported API kept for one release as deprecated wrappers (CONTRIBUTING.md,
// "API compatibility"): each is removed in v0.3.0 by deleting it here. The balanced k-way
// graph partitioner moved to an internal package (the placer here uses it; no embedder needs
// it: bench/partitiongen, the comparison against METIS and KaHIP, was its only other user).

// Graph is an undirected graph with integer vertex and edge weights, in compressed adjacency
// form.
//
// Deprecated: not needed by embedders (Place partitions worker graphs itself); removed in
// v0.3.0.
type Graph = kway.Graph

// Edge is an undirected weighted edge between vertices U and V.
//
// Deprecated: not needed by embedders; removed in v0.3.0.
type Edge = kway.Edge

// Builder accumulates vertices and edges and builds a Graph.
//
// Deprecated: not needed by embedders; removed in v0.3.0.
type Builder = kway.Builder

// NewBuilder returns a Builder for a graph of n vertices of weight 1.
//
// Deprecated: not needed by embedders; removed in v0.3.0.
func NewBuilder(n int) *Builder { return kway.NewBuilder(n) }

// FromEdges builds a graph of n vertices from vertex weights (nil: all 1) and edges.
//
// Deprecated: not needed by embedders; removed in v0.3.0.
func FromEdges(n int, vw []int64, edges []Edge) (*Graph, error) { return kway.FromEdges(n, vw, edges) }

// ReadMETIS reads a graph in the METIS graph file format.
//
// Deprecated: not needed by embedders; removed in v0.3.0.
func ReadMETIS(r io.Reader) (*Graph, error) { return kway.ReadMETIS(r) }

// WriteMETIS writes g in the METIS graph file format.
//
// Deprecated: not needed by embedders; removed in v0.3.0.
func WriteMETIS(w io.Writer, g *Graph) error { return kway.WriteMETIS(w, g) }

// EdgeCut returns the total weight of the edges of g whose endpoints part puts in different
// parts.
//
// Deprecated: not needed by embedders; removed in v0.3.0.
func EdgeCut(g *Graph, part []int) (int64, error) { return kway.EdgeCut(g, part) }

// Mode selects how part capacities are enforced.
//
// Deprecated: not needed by embedders; removed in v0.3.0.
type Mode = kway.Mode

// Method selects the multilevel scheme.
//
// Deprecated: not needed by embedders; removed in v0.3.0.
type Method = kway.Method

// The modes and methods of Options.
//
// Deprecated: not needed by embedders; removed in v0.3.0.
const (
	Balanced           = kway.Balanced
	Hard               = kway.Hard
	KWay               = kway.KWay
	RecursiveBisection = kway.RecursiveBisection
)

// MaxExactVertices is the largest graph Exact accepts.
//
// Deprecated: not needed by embedders; removed in v0.3.0.
const MaxExactVertices = kway.MaxExactVertices

// Options configure Partition and Exact.
//
// Deprecated: not needed by embedders; removed in v0.3.0.
type Options = kway.Options

// Result is a partition: each vertex's part, the cut and the parts' weights.
//
// Deprecated: not needed by embedders; removed in v0.3.0.
type Result = kway.Result

// Partition splits g into opts.K parts of bounded weight with a small edge cut (multilevel).
//
// Deprecated: not needed by embedders; removed in v0.3.0.
func Partition(g *Graph, opts Options) (Result, error) { return kway.Partition(g, opts) }

// Exact returns a minimum-cut partition of a small graph by exhaustive search.
//
// Deprecated: not needed by embedders; removed in v0.3.0.
func Exact(g *Graph, opts Options) (Result, error) { return kway.Exact(g, opts) }

// Stages is a split of a layer sequence or DAG into pipeline stages.
//
// Deprecated: not needed by embedders; removed in v0.3.0.
type Stages = kway.Stages

// SplitChain splits a chain of layer costs into p contiguous stages with the smallest
// bottleneck.
//
// Deprecated: not needed by embedders; removed in v0.3.0.
func SplitChain(costs []float64, p int) (Stages, error) { return kway.SplitChain(costs, p) }

// SplitDAG splits a layer DAG into p balanced pipeline stages.
//
// Deprecated: not needed by embedders; removed in v0.3.0.
func SplitDAG(costs []float64, edges [][2]int, p int, seed uint64) (Stages, error) {
	return kway.SplitDAG(costs, edges, p, seed)
}

// Errors of the partitioner, for errors.Is.
//
// Deprecated: not needed by embedders; removed in v0.3.0.
var (
	ErrInvalidOptions = kway.ErrInvalidOptions
	ErrCapacity       = kway.ErrCapacity
	ErrTooLarge       = kway.ErrTooLarge
	ErrFormat         = kway.ErrFormat
	ErrInvalidStages  = kway.ErrInvalidStages
)
