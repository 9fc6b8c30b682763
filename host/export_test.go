package host

import (
	"io"

	"github.com/gpusched/gpusched/internal/statejson"
)

// Break makes r a deliberately wrong variant, for tests that show their properties catch it:
// "order" emits each migration's stop right before its start; "norollback" keeps the progress
// an interruption should throw away; "delta" forgets jobs that left while waiting in the
// view's delta; "transitions" forgets jobs that stopped running in it; "held" keeps a stopped
// job's GPUs in the record of held GPUs; "owner" lets a start take the GPU of a job the
// decision keeps; "bypos" only that of a job kept by position (the runtime's fast path);
// "relisted" keeps a job by position though the decision listed it before;
// "restorecheckpoint" makes RestoreState take each running job's progress as its last
// checkpoint (what Resume does), so that an interruption after a restart loses less work;
// "hot" skips the copy of a migrated job's fields into the dense array of the running jobs'
// hot fields (one missed write of syncHot); "stoporder" carries out a delta decision's stops in the delta's order instead of the running
// jobs'; "waitmoved" leaves the next delta's Transitions set after Report moved a waiting
// job's progress; "implicitowner" lets a start take the GPU of a job a delta keeps without listing it.
func Break(r *Runtime, kind string) {
	switch kind {
	case "order":
		r.broken = brokenOrder
	case "norollback":
		r.broken = brokenNoRollback
	case "delta":
		r.broken = brokenDelta
	case "transitions":
		r.broken = brokenTransitions
	case "waitmoved":
		r.broken = brokenWaitMoved
	case "held":
		r.broken = brokenHeld
	case "owner":
		r.broken = brokenOwner
	case "bypos":
		r.broken = brokenByPos
	case "relisted":
		r.broken = brokenRelisted
	case "restorecheckpoint":
		r.broken = brokenRestoreCheckpoint
	case "stoporder":
		r.broken = brokenStopOrder
	case "implicitowner":
		r.broken = brokenImplicitOwner
	case "hot":
		r.broken = brokenHot
	default:
		panic("host: unknown broken variant " + kind)
	}
}

// EntryBlock is the number of entries allocated at once.
const EntryBlock = entryBlock

// RestoreBroken is Restore of a deliberately wrong variant (see Break).
func RestoreBroken(opt Options, rd io.Reader, kind string) (*Runtime, error) {
	return restore(opt, nil, rd, func(r *Runtime) { Break(r, kind) })
}

// JobRestFields are the fields of gpusched.Job that the saved job columns keep whole.
var JobRestFields = jobRestFields

// ForgetBooks makes the mark of r's last base remember none of its jobs, as a wrong save by
// changes would: every later delta writes every held job again.
func ForgetBooks(r *Runtime) {
	if r.mark != nil {
		m := *r.mark
		m.seqs, m.keys = nil, nil
		r.mark = &m
	}
}

// CheckFastDecode checks statejson.FastUnmarshal on data, a saved runtime, and n variants of it
// (see statejson.CheckFast).
func CheckFastDecode(data []byte, n int) error {
	return statejson.CheckFast(data, func() any { return new(savedRuntime) }, n, 3)
}

// CheckHot compares the dense array of the running jobs' hot fields with a rebuild from their
// entries; it returns the first difference, or "".
func CheckHot(r *Runtime) string { return r.checkHot() }
