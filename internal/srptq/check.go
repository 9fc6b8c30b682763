package srptq

import (
	"fmt"
	"math"
)

// The checks and the step that package srpt shares with the queue, so that both reject the
// same input with the same errors and agree to the last bit.

// FiniteNonNeg reports whether x is a finite number >= 0.
func FiniteNonNeg(x float64) bool {
	return x >= 0 && !math.IsInf(x, 1) // NaN fails x >= 0
}

// FinitePos reports whether x is a finite number > 0.
func FinitePos(x float64) bool {
	return x > 0 && !math.IsInf(x, 1)
}

// CheckSpeed returns an error wrapping ErrInvalidParameter unless speed is finite and > 0.
func CheckSpeed(speed float64) error {
	if !FinitePos(speed) {
		return fmt.Errorf("%w: speed %v must be a finite number > 0", ErrInvalidParameter, speed)
	}
	return nil
}

// CheckJob returns an error wrapping ErrInvalidJob unless release and size are finite and >= 0.
func CheckJob(id int, release, size float64) error {
	if !FiniteNonNeg(release) {
		return fmt.Errorf("%w: job %d: release time %v s must be finite and >= 0", ErrInvalidJob, id, release)
	}
	if !FiniteNonNeg(size) {
		return fmt.Errorf("%w: job %d: size %v must be finite and >= 0", ErrInvalidJob, id, size)
	}
	return nil
}

// CheckWeight returns an error wrapping ErrInvalidJob unless w is finite and > 0.
func CheckWeight(id int, w float64) error {
	if !FinitePos(w) {
		return fmt.Errorf("%w: job %d: weight %v must be finite and > 0", ErrInvalidJob, id, w)
	}
	return nil
}

// AdvanceHead processes a job with remaining work rem, running from time now,
// until at most time limit on a machine of the given speed. It returns the
// new remaining work and, when the job completes by limit, its completion
// time. srpt.Offline and Queue share it so that they agree to the last bit.
func AdvanceHead(rem, now, limit, speed float64) (newRem, finish float64, done bool) {
	finish = now + rem/speed
	if finish <= limit {
		return 0, finish, true
	}
	newRem = rem - (limit-now)*speed
	if newRem < 0 { // rounding: the job finishes a hair after limit
		newRem = 0
	}
	return newRem, 0, false
}
