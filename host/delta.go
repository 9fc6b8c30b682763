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

// SaveDelta writes what changed since the last base (SaveBase) and returns the base's key
// (see BaseKey): the runtime's books but the jobs unchanged since the base, and the
// scheduler's delta when it is Incremental (its whole state when it is only gpusched.Stateful).
// For A-SRPT with its forest between two retrainings this leaves out the trees, the rows they
// were trained on and every job, row and remembered job that did not change (see BENCHMARKS).
// A host that saves after every decision keeps the base of the key it last saved and does:
//
//	if k := rt.BaseKey(); k != heldKey {
//		rt.SaveBase(baseFile) // at a retraining, or when the deltas have grown
//		heldKey = k
//	}
//	rt.SaveDelta(deltaFile) // every time, replacing the last delta
//
// and restarts with RestoreDelta(opt, baseFile, deltaFile). Without a base (none written since
// New or Restore) it writes the books whole. Call it between calls.
func (r *Runtime) SaveDelta(w io.Writer) (baseKey string, err error) {
	return r.saveDelta(w)
}

// RestoreDelta is Restore for what SaveDelta wrote: base is what SaveBase wrote under the key
// the delta names. The restored runtime marks that base, so that its deltas go on being
// written against it. A base of another key is refused with an error wrapping
// gpusched.ErrBadState. A whole state (SaveState) is also accepted, base unused. What version
// 1 wrote (a scheduler's base, from Runtime.SaveBase, and a delta holding the books whole)
// restores too; a delta of version 2 with a base of version 1 is refused with an error that
// names both versions.
func RestoreDelta(opt Options, base, delta io.Reader) (*Runtime, error) {
	if base == nil {
		base = eof{}
	}
	return restore(opt, base, delta, nil)
}

// eof is an empty reader.
type eof struct{}

func (eof) Read([]byte) (int, error) { return 0, io.EOF }
