// Package partition places a job's workers on free GPUs so that little
// traffic crosses servers.
//
// It is a pure package: no goroutines, no global state, and every random
// choice comes from an explicit seed, so equal inputs give equal outputs.
// Place reads worker graphs (package graph) and clusters (package topology).
//
// # Placing a job on free GPUs
//
// Place maps a job's worker graph (graph.Compiled.WorkerGraph: one vertex per
// worker, bytes per iteration on each edge) onto a cluster's free GPUs. It
// chooses as few servers as the free GPUs allow (one, best fit, when a server
// can hold the job; within one rack when a rack can), counting in whole
// tensor-parallel groups so that no TP group is split when the free GPUs
// allow, then contracts each group to one vertex and partitions the result with
// a balanced k-way graph partitioner in the style of METIS, in hard-capacity
// mode, onto those servers (first among racks, then within each rack),
// keeping the rank-order assignment instead when that crosses fewer bytes.
// Placing a 1,024-worker GPT-3 13B job on a 4,096-GPU cluster takes about a
// millisecond on an empty cluster, a few on a fragmented one (BENCHMARKS.md).
//
// PlaceMemo places one worker graph as Place does, remembering which
// workers go to which servers for the server shapes it has met, so that
// placing the graph again costs no partitioning.
//
// # The partitioner
//
// The multilevel k-way partitioner, exact partitions of tiny graphs and the
// pipeline-stage splitters that this package exported until v0.2.0 (Graph,
// Builder, Partition, Exact, ReadMETIS, SplitChain, SplitDAG, ...) are
// deprecated: no embedder needs them, and v0.3.0 removes them. The code
// lives on in an internal package.
package partition
