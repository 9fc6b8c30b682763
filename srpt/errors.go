package srpt

import (
	"errors"
	"fmt"
	"math"
)

// Sentinel errors. Every error returned by this package wraps exactly one of
// them with %w and names the offending job ID and value, so callers can test
// with errors.Is and still show a useful message.
var (
	// ErrInvalidJob reports a job with a bad field: a NaN, infinite or
	// negative size, processing time or release time; a non-positive or
	// non-finite weight; a GPU demand below 1 or above the cluster size; or a
	// non-integer time given to the exact solver.
	ErrInvalidJob = errors.New("srpt: invalid job")

	// ErrDuplicateJob reports two jobs with the same ID in one instance or
	// queue.
	ErrDuplicateJob = errors.New("srpt: duplicate job ID")

	// ErrUnknownJob reports a Queue operation on an ID the queue does not
	// hold (never added, already completed or removed).
	ErrUnknownJob = errors.New("srpt: unknown job ID")

	// ErrInvalidParameter reports a bad machine speed, GPU count, time
	// resolution or time argument (non-positive, NaN or infinite).
	ErrInvalidParameter = errors.New("srpt: invalid parameter")

	// ErrTimeOrder reports an attempt to move a Queue's clock backwards.
	// Time in a Queue only moves forward; a job released before the current
	// clock cannot be added because that would rewrite the virtual past.
	ErrTimeOrder = errors.New("srpt: time out of order")

	// ErrTooLarge reports an instance whose exact optimum would need more
	// states than ExactOptimum allows (see MaxExactStates).
	ErrTooLarge = errors.New("srpt: instance too large for the exact solver")
)

// finiteNonNeg reports whether x is a finite number >= 0.
func finiteNonNeg(x float64) bool {
	return x >= 0 && !math.IsInf(x, 1) // NaN fails x >= 0
}

// finitePos reports whether x is a finite number > 0.
func finitePos(x float64) bool {
	return x > 0 && !math.IsInf(x, 1)
}

func checkSpeed(speed float64) error {
	if !finitePos(speed) {
		return fmt.Errorf("%w: speed %v must be a finite number > 0", ErrInvalidParameter, speed)
	}
	return nil
}

func checkJob(id int, release, size float64) error {
	if !finiteNonNeg(release) {
		return fmt.Errorf("%w: job %d: release time %v s must be finite and >= 0", ErrInvalidJob, id, release)
	}
	if !finiteNonNeg(size) {
		return fmt.Errorf("%w: job %d: size %v must be finite and >= 0", ErrInvalidJob, id, size)
	}
	return nil
}

func checkWeight(id int, w float64) error {
	if !finitePos(w) {
		return fmt.Errorf("%w: job %d: weight %v must be finite and > 0", ErrInvalidJob, id, w)
	}
	return nil
}
