package host

import (
	"fmt"
	"slices"
	"unsafe"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// runHot is what the view reads of a running job at every call (buildView): the anchors its
// progress is extrapolated from and the other fields of its status, copied from its entry.
// The running jobs' runHot records lie in one dense array (Runtime.hot), so that the view's
// walk over the running jobs reads a small array instead of one scattered entry per job (a
// cache miss each). A record is a slot of that array: Runtime.runSlot holds, in step with
// Runtime.running (same positions), each running job's slot; the places that change an entry
// find its position by its submission number (Runtime.runSeqs, also in step).
//
// Every change of a running entry's fields below is followed by syncHot (or, when the job
// stops running, freeHotAt); TestPropertyHotInStep compares the array with a rebuild from the
// entries after random runtime operations.
type runHot struct {
	segAt, done, executed, attained, restoreEnd, step, limit float64
	firstStart, since                                        float64
	gpus                                                     []topology.GPUID
	// job is &Entry.job: the view's status points to it, and taking it from the entry
	// would read the entry (Go checks the entry pointer for nil first).
	job                   *gpusched.Job
	ngpus, plan, preempts int32
	constrained           bool
}

// set copies e's fields into h.
func (h *runHot) set(e *Entry) {
	*h = runHot{
		segAt: e.segAt, done: e.done, executed: e.executed, attained: e.attained,
		restoreEnd: e.restoreEnd, step: e.step, limit: e.limit,
		firstStart: e.firstStart, since: e.since, gpus: e.gpus, job: &e.job,
		ngpus: e.ngpus, plan: e.plan, preempts: e.preempt + e.interr, constrained: e.constrained,
	}
}

// progress is Entry.Progress of a running job (the same arithmetic, so the same numbers):
// iterations done, seconds held and GPU-seconds held at time t.
func (h *runHot) progress(t float64) (done, executed, attained float64) {
	done, executed, attained = h.done, h.executed, h.attained
	dt := t - h.segAt
	if dt <= 0 {
		return
	}
	executed += dt
	attained += dt * float64(h.ngpus)
	if ps := max(h.segAt, h.restoreEnd); t > ps {
		p := t - ps
		done = extrapolated(done, h.limit, h.step, p)
	}
	return
}

// newHot gives running entry e a slot of r.hot, filled from e, and returns it.
func (r *Runtime) newHot(e *Entry) int32 {
	var s int32
	if n := len(r.hotFree); n > 0 {
		s = r.hotFree[n-1]
		r.hotFree = r.hotFree[:n-1]
		r.hotDisorder++
	} else {
		s = int32(len(r.hot))
		r.hot = append(r.hot, runHot{})
	}
	r.hot[s].set(e)
	return s
}

// repackHot lays the slots out again in the running jobs' order, when enough jobs took free
// slots out of that order since the last time (hotDisorder): the view then reads the array
// front to back, which the processor prefetches, instead of at scattered slots.
func (r *Runtime) repackHot() {
	n := len(r.running)
	next := slices.Grow(r.hotSpare[:0], n)[:n]
	for i, s := range r.runSlot {
		next[i] = r.hot[s]
		r.runSlot[i] = int32(i)
	}
	clear(r.hot)
	r.hot, r.hotSpare = next, r.hot[:0]
	r.hotFree = r.hotFree[:0]
	r.hotDisorder = 0
}

// syncHot copies running entry e's fields into its slot (after a change of any of them).
// An entry not yet in r.running (a start being applied) has no slot yet: newHot fills it.
func (r *Runtime) syncHot(e *Entry) {
	if e.phase != phaseRunning {
		return
	}
	if p := r.runningPos(e); p < len(r.running) && r.running[p] == e {
		r.hot[r.runSlot[p]].set(e)
	}
}

// freeHotAt gives back the slot of the job at position p of r.running, which stops running;
// the position itself goes (with the job's in r.running) at the next removal or compaction.
func (r *Runtime) freeHotAt(p int) {
	s := r.runSlot[p]
	r.hot[s] = runHot{} // no stale references
	r.hotFree = append(r.hotFree, s)
}

// appendRunning appends running entry e, the latest submission, to r.running.
func (r *Runtime) appendRunning(e *Entry) {
	r.running = append(r.running, e)
	r.runSlot = append(r.runSlot, r.newHot(e))
	r.runSeqs = append(r.runSeqs, e.seq)
}

// deleteRunning removes the running jobs at the ascending positions pos.
func (r *Runtime) deleteRunning(pos []int) {
	r.running = deletePositions(r.running, pos)
	r.runSlot = deletePositions(r.runSlot, pos)
	r.runSeqs = deletePositions(r.runSeqs, pos)
}

// dropStopped removes the entries that no longer run from r.running (their slots are free).
func (r *Runtime) dropStopped() {
	w := 0
	for i, e := range r.running {
		if e.phase == phaseRunning {
			r.running[w], r.runSlot[w], r.runSeqs[w] = e, r.runSlot[i], r.runSeqs[i]
			w++
		}
	}
	clear(r.running[w:])
	r.running, r.runSlot, r.runSeqs = r.running[:w], r.runSlot[:w], r.runSeqs[:w]
}

// mergeRunning merges the ascending started entries (by submission order), which have just
// started, into r.running, giving each a slot.
func (r *Runtime) mergeRunning(started []*Entry) {
	n := len(r.running)
	r.running = append(r.running, started...)
	for range started {
		r.runSlot = append(r.runSlot, 0)
		r.runSeqs = append(r.runSeqs, 0)
	}
	a, sl, sq := r.running, r.runSlot, r.runSeqs
	i, j, w := n-1, len(started)-1, len(a)-1
	for j >= 0 {
		if i >= 0 && sq[i] > started[j].seq {
			a[w], sl[w], sq[w] = a[i], sl[i], sq[i]
			i--
		} else {
			a[w], sl[w], sq[w] = started[j], r.newHot(started[j]), started[j].seq
			j--
		}
		w--
	}
}

// checkHot tells whether the dense array agrees with the running entries (a rebuild from
// scratch): one slot per running job, in step with r.running, each equal to its entry's
// fields, and every other slot free. It returns a description of the first difference, or "".
func (r *Runtime) checkHot() string {
	if len(r.runSlot) != len(r.running) || len(r.runSeqs) != len(r.running) {
		return "runSlot, runSeqs and running differ in length"
	}
	used := make([]bool, len(r.hot))
	for i, e := range r.running {
		if r.runSeqs[i] != e.seq {
			return "runSeqs differs from running for job " + string(e.id)
		}
		if e.phase != phaseRunning {
			if r.runningStale {
				continue
			}
			return "a job that is not running in running: " + string(e.id)
		}
		s := r.runSlot[i]
		if s < 0 || int(s) >= len(r.hot) || used[s] {
			return "bad or shared slot for job " + string(e.id)
		}
		used[s] = true
		var want runHot
		want.set(e)
		h := r.hot[s]
		if !sameHot(&h, &want) {
			return "stale hot fields for job " + string(e.id)
		}
	}
	for _, s := range r.hotFree {
		if s < 0 || int(s) >= len(r.hot) || used[s] {
			return "free slot in use, or out of range"
		}
		used[s] = true
	}
	for s, u := range used {
		if !u && !r.runningStale {
			return fmt.Sprintf("slot %d neither used nor free", s)
		}
	}
	return ""
}

// sameHot compares two records field by field (the GPU lists by identity: the view shares
// the entry's slice).
func sameHot(a, b *runHot) bool {
	return a.segAt == b.segAt && a.done == b.done && a.executed == b.executed && a.attained == b.attained &&
		a.restoreEnd == b.restoreEnd && a.step == b.step && a.limit == b.limit &&
		a.firstStart == b.firstStart && a.since == b.since &&
		len(a.gpus) == len(b.gpus) && cap(a.gpus) == cap(b.gpus) && unsafe.SliceData(a.gpus) == unsafe.SliceData(b.gpus) &&
		a.job == b.job && a.ngpus == b.ngpus && a.plan == b.plan && a.preempts == b.preempts && a.constrained == b.constrained
}
