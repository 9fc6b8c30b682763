package srptq

import "errors"

// Sentinel errors. Package srpt exports the same values under the same names, so that
// errors.Is(err, srpt.ErrX) holds for an error of this package.
var (
	// ErrInvalidJob reports a job with a bad field: a NaN, infinite or negative size; a
	// non-positive or non-finite weight.
	ErrInvalidJob = errors.New("srpt: invalid job")
	// ErrDuplicateJob reports a job ID the queue already holds.
	ErrDuplicateJob = errors.New("srpt: duplicate job ID")
	// ErrUnknownJob reports an operation on an ID the queue does not hold (never added,
	// already completed or removed).
	ErrUnknownJob = errors.New("srpt: unknown job ID")
	// ErrInvalidParameter reports a bad machine speed or time argument (negative, NaN or
	// infinite).
	ErrInvalidParameter = errors.New("srpt: invalid parameter")
	// ErrTimeOrder reports an attempt to move the queue's clock backwards.
	ErrTimeOrder = errors.New("srpt: time out of order")
)
