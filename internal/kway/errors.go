package kway

import "errors"

// Sentinel errors. Every error returned by this package wraps exactly one of
// these with %w and names the offending item (vertex, edge, part, layer or
// file line), so callers can test the kind with errors.Is and show the text.
var (
	// ErrInvalidGraph reports a malformed graph: a self-loop, an endpoint out
	// of range, a negative weight, or a graph too large for 32-bit indices.
	ErrInvalidGraph = errors.New("partition: invalid graph")

	// ErrInvalidOptions reports unusable options: K < 1, a capacity list of
	// the wrong length, a negative or non-finite imbalance, a negative
	// capacity, or an unknown mode or method.
	ErrInvalidOptions = errors.New("partition: invalid options")

	// ErrCapacity reports that the total vertex weight exceeds the total
	// capacity of the parts, so no assignment can respect the capacities.
	ErrCapacity = errors.New("partition: total weight exceeds total capacity")

	// ErrInfeasible reports that no assignment respecting the per-part
	// weight limits was found (possible only with hard capacities and
	// vertex weights other than 1, where fitting is a bin-packing problem).
	ErrInfeasible = errors.New("partition: no feasible assignment found")

	// ErrTooLarge reports an input beyond the size an exact solver accepts.
	ErrTooLarge = errors.New("partition: input too large for exact solver")

	// ErrFormat reports a syntax or consistency error in a METIS graph file.
	ErrFormat = errors.New("partition: bad METIS graph file")

	// ErrInvalidStages reports an unusable pipeline-split input: a stage
	// count outside 1..number of layers, a negative or non-finite layer cost,
	// an edge naming an unknown layer, or a cycle in the layer graph.
	ErrInvalidStages = errors.New("partition: invalid pipeline split input")
)
