package graph

import "errors"

// Sentinel errors. Every error the package returns wraps one of these (test with errors.Is) and
// names the offending layer, edge, plan field, worker or file line.
var (
	// ErrInvalidModel reports a layer graph that cannot describe a network: no layers, an empty
	// or duplicate layer name, a negative, NaN or infinite size, an edge naming an unknown layer,
	// a cycle, or layers not connected to the rest.
	ErrInvalidModel = errors.New("graph: invalid model")
	// ErrInvalidPlan reports a parallel plan that does not fit its model: a degree below one, a
	// batch the degrees do not divide, more pipeline stages than layers, a tensor-parallel
	// degree that does not divide the attention heads, an unknown ZeRO stage.
	ErrInvalidPlan = errors.New("graph: invalid plan")
	// ErrOutOfMemory reports a plan whose per-GPU memory exceeds the GPU's; the message says by
	// how many bytes.
	ErrOutOfMemory = errors.New("graph: out of memory")
	// ErrInvalidPlacement reports a placement that does not match its job: the wrong number of
	// GPUs, a GPU outside the cluster, or a GPU used twice.
	ErrInvalidPlacement = errors.New("graph: invalid placement")
	// ErrInvalidOptions reports efficiency constants outside their ranges.
	ErrInvalidOptions = errors.New("graph: invalid options")
	// ErrUnknownModel reports a zoo name that is not in the zoo.
	ErrUnknownModel = errors.New("graph: unknown model")
	// ErrBadData reports a malformed measurement file or row (see ReadPlacements).
	ErrBadData = errors.New("graph: bad data")
)
