package partition

import "github.com/gpusched/gpusched/internal/kway"

// Errors of Place, for errors.Is.
var (
	// ErrInvalidGraph reports a malformed worker graph: no workers, or an edge out of range
	// or with negative or non-finite bytes.
	ErrInvalidGraph = kway.ErrInvalidGraph
	// ErrInfeasible reports that the free GPUs cannot hold the job's workers.
	ErrInfeasible = kway.ErrInfeasible
)
