package srpt

import (
	"errors"

	"github.com/gpusched/gpusched/internal/srptq"
)

// Sentinel errors. Every error returned by this package wraps exactly one of
// them with %w and names the offending job ID and value, so callers can test
// with errors.Is and still show a useful message.
var (
	// ErrInvalidJob reports a job with a bad field: a NaN, infinite or
	// negative size, processing time or release time; a non-positive or
	// non-finite weight; a GPU demand below 1 or above the cluster size; or a
	// non-integer time given to the exact solver.
	ErrInvalidJob = srptq.ErrInvalidJob

	// ErrDuplicateJob reports two jobs with the same ID in one instance or
	// queue.
	ErrDuplicateJob = srptq.ErrDuplicateJob

	// ErrUnknownJob reports a Queue operation on an ID the queue does not
	// hold (never added, already completed or removed).
	//
	// Deprecated: only the deprecated Queue returns it; removed in v0.4.0.
	ErrUnknownJob = srptq.ErrUnknownJob

	// ErrInvalidParameter reports a bad machine speed, GPU count, time
	// resolution or time argument (non-positive, NaN or infinite).
	ErrInvalidParameter = srptq.ErrInvalidParameter

	// ErrTimeOrder reports an attempt to move a Queue's clock backwards.
	// Time in a Queue only moves forward; a job released before the current
	// clock cannot be added because that would rewrite the virtual past.
	//
	// Deprecated: only the deprecated Queue returns it; removed in v0.4.0.
	ErrTimeOrder = srptq.ErrTimeOrder

	// ErrTooLarge reports an instance whose exact optimum would need more
	// states than ExactOptimum allows (see MaxExactStates).
	ErrTooLarge = errors.New("srpt: instance too large for the exact solver")
)

// finiteNonNeg reports whether x is a finite number >= 0.
func finiteNonNeg(x float64) bool { return srptq.FiniteNonNeg(x) }

func checkSpeed(speed float64) error { return srptq.CheckSpeed(speed) }

func checkJob(id int, release, size float64) error { return srptq.CheckJob(id, release, size) }

func checkWeight(id int, w float64) error { return srptq.CheckWeight(id, w) }
