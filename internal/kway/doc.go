// Package kway splits weighted graphs into balanced parts with few cut
// edges, and splits layer graphs into balanced pipeline stages: the
// partitioner behind partition.Place, moved here from package partition
// (house2, issue #34) because no embedder needs it directly.
// bench/partitiongen compares it with METIS and KaHIP.
//
// It is a pure package: no goroutines, no global state, and every random
// choice comes from an explicit seed, so equal inputs give equal outputs.
// It uses the standard library only.
//
// # Graphs
//
// A Graph has int64 vertex weights and int64 edge weights (integers, so cuts
// and gains compare exactly). Build one with a Builder, which accepts edges
// in any order and direction, merges duplicates by adding their weights and
// rejects self-loops, endpoints out of range and negative weights with
// errors that name the edge:
//
//	b := kway.NewBuilder(4)           // 4 vertices of weight 1
//	b.AddEdge(0, 1, 10)                    // weight: e.g. bytes per iteration
//	b.AddEdge(2, 3, 10)
//	b.AddEdge(1, 2, 1)
//	g, err := b.Build()
//
// ReadMETIS and WriteMETIS read and write the METIS graph file format.
//
// # Partitioning
//
// Partition(g, Options{K: k, Imbalance: 0.03, Seed: 1}) returns the part of
// every vertex, the cut and the part weights. Two balance models:
//
//   - Balanced (default): part i aims at W*c_i/sum(c) of the total weight W
//     (equal shares unless Capacities gives relative shares) and may exceed
//     it by the fraction Imbalance (0.03 is METIS's default ufactor=30).
//   - Hard: Capacities are absolute maxima and are never exceeded; parts
//     may stay empty. This is the placement model: parts are servers,
//     capacities are their free GPUs, vertices are workers of weight 1,
//     edge weights are the bytes the workers exchange; the cut is the
//     traffic that crosses servers.
//
// The algorithm is multilevel k-way partitioning in the style of METIS:
// coarsen by heavy-edge matching, split the coarsest graph by recursive
// multilevel bisection (the best of several independently coarsened
// bisections at every split, each refined by 2-way Fiduccia-Mattheyses),
// then project back level by level with greedy sweeps and k-way FM
// refinement that can swap vertices between full parts and never
// increases the cut. With K = 2 the refinement uses the Imbalance
// tolerance wherever an unbalanced split cuts less, and the partitioner
// also refines the balanced split (the one Imbalance 0 gives, same seed)
// and keeps the better of the two, so a tolerance never gives a larger
// cut than none. Options.Quick trades some cut for speed, and
// Options.VCycles and Options.FlowRefinement time for cut (V-cycles:
// coarsen again within the parts and refine back; flow refinement:
// minimum cuts between adjacent parts; both as KaHIP does, neither ever
// makes the cut larger); Method RecursiveBisection selects pure recursive
// bisection instead.
// BENCHMARKS.md compares both with METIS 5.1 (gpmetis).
//
// Exact finds a minimum-cut assignment under the same limits by branch and
// bound for graphs of at most MaxExactVertices vertices.
//
// # Pipeline stages
//
// SplitChain splits a chain of layer costs into p contiguous stages with
// the smallest possible largest stage (exact). SplitDAG does the same for a
// layer DAG, keeping every edge pointing from an earlier or equal stage to
// a later one (a heuristic: the best exact chain split over several
// topological orders, then single-layer moves between adjacent stages).
package kway
