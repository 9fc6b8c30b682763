package host

import (
	"io"

	gpusched "github.com/gpusched/gpusched"
)

// Incremental is a gpusched.Stateful scheduler whose state has a large part that changes
// rarely, its base, which it saves apart from the rest, its delta: A-SRPT with its default
// Forest (asrpt.Scheduler) is one, its base the trained forest, which changes only when it is
// retrained. A Runtime whose scheduler is Incremental saves it by parts (Runtime.SaveDelta,
// Runtime.SaveBase), so that a host that saves after every decision pays for the forest only
// once per retraining.
type Incremental interface {
	gpusched.Stateful
	// BaseKey returns the key of the base: it changes exactly when the base does ("": none).
	BaseKey() string
	// SaveBase writes the base and returns its key.
	SaveBase(w io.Writer) (key string, err error)
	// SaveDelta writes the state but the base, naming the base by the key it returns.
	SaveDelta(w io.Writer) (baseKey string, err error)
	// RestoreDelta restores the state from a base and a delta that names it (errors wrap
	// gpusched.ErrBadState; on error the state is unchanged).
	RestoreDelta(base, delta io.Reader) error
}

// BaseKey returns the key of the base of the scheduler's state when the scheduler is
// Incremental ("" otherwise, or when it has none yet). A host that saves by parts writes the
// base (SaveBase) when BaseKey differs from the key of the base it holds, then the delta
// (SaveDelta) (see SaveDelta).
func (r *Runtime) BaseKey() string {
	if inc, ok := r.sched.(Incremental); ok {
		return inc.BaseKey()
	}
	return ""
}

// SaveBase writes the base of the scheduler's state (see Incremental) and returns its key; it
// writes nothing and returns "" when the scheduler is not Incremental. Call it between calls.
func (r *Runtime) SaveBase(w io.Writer) (key string, err error) {
	if inc, ok := r.sched.(Incremental); ok {
		return inc.SaveBase(w)
	}
	return "", nil
}

// SaveDelta writes the runtime as SaveState does, except that an Incremental scheduler
// contributes only its delta, which names its base by the key SaveDelta returns. For A-SRPT
// with its forest between two retrainings this leaves out the trees and the rows they were
// trained on (most of the state: see BENCHMARKS). A host that saves after every decision
// keeps the base of the key it last saved and does:
//
//	if k := rt.BaseKey(); k != heldKey {
//		rt.SaveBase(baseFile) // once per retraining
//		heldKey = k
//	}
//	rt.SaveDelta(deltaFile) // every time
//
// and restarts with RestoreDelta(opt, baseFile, deltaFile). With a scheduler that is not
// Incremental, SaveDelta writes what SaveState writes and returns "".
func (r *Runtime) SaveDelta(w io.Writer) (baseKey string, err error) {
	return r.save(w, true)
}

// RestoreDelta is Restore for what SaveDelta wrote: base is what SaveBase wrote under the key
// the delta names (it may be empty when that key is ""). A base of another key is refused with
// an error wrapping gpusched.ErrBadState. A whole state (SaveState) is also accepted, base
// unused.
func RestoreDelta(opt Options, base, delta io.Reader) (*Runtime, error) {
	if base == nil {
		base = eof{}
	}
	return restore(opt, base, delta, nil)
}

// eof is an empty reader.
type eof struct{}

func (eof) Read([]byte) (int, error) { return 0, io.EOF }
