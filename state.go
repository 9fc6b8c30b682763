package gpusched

import (
	"errors"
	"io"
)

// Stateful is implemented by schedulers, and by the parts they are built from (estimators,
// predictors), whose decisions depend on what they saw in earlier calls: A-SRPT's virtual queue
// and predictions, a learned forest, Tiresias' queues. A host saves the state (to a file, a
// ConfigMap) and, after a restart or a leader change, builds the scheduler again with the same
// options and restores it, so that every later decision equals the uninterrupted run's.
//
// SaveState writes the state as self-describing, versioned JSON: an object whose "kind" names
// what wrote it and whose "version" is the encoding's version. RestoreState replaces the state
// of a value built with the same options by what SaveState wrote. Decoding bad, foreign or
// unknown-version data is an error wrapping ErrBadState, never a panic, and leaves the receiver
// as it was.
type Stateful interface {
	SaveState(w io.Writer) error
	RestoreState(r io.Reader) error
}

// ErrBadState reports saved state that RestoreState cannot use: malformed, written by another
// kind of scheduler, of an unknown version, or inconsistent.
var ErrBadState = errors.New("gpusched: bad saved state")
