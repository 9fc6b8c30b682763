package host

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"unsafe"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// View returns the view the runtime shows its scheduler at time at (not before its clock):
// every job it holds except parked ones, waiting or running, with progress extrapolated to
// at, and the unavailable GPUs. The view belongs to the runtime and is valid until its next
// call. Schedule builds the same view itself; View is for hosts that inspect or log it.
func (r *Runtime) View(at float64) (*gpusched.View, error) {
	if err := r.clock(at, "View"); err != nil {
		return nil, err
	}
	r.buildView()
	return &r.view, nil
}

// buildView fills r.view for the current time: pending statuses are kept up to date
// incrementally; running statuses change with time and are refreshed here, in place: a status
// whose job and placement are those of the previous view keeps its pointers (no write
// barrier while the garbage collector runs), and only its numbers are written.
func (r *Runtime) buildView() {
	r.compactRunning()
	v := &r.view
	v.Now = r.now
	v.Unavailable = r.unavailable
	v.Delta = nil
	v.AcceptsKeepOthers = true // check and apply take delta decisions
	v.Pending = r.pbuf[r.plo:r.phi]
	old, n := len(v.Running), len(r.running)
	if cap(v.Running) < n {
		v.Running = slices.Grow(v.Running[:old], n-old)
	}
	v.Running = v.Running[:n]
	// The keys of the full form's keep-by-position check are recorded only while the
	// scheduler answers in the full form (its last decision was not a delta): a scheduler that
	// answers with deltas does not pay for them, and one that switches to the full form has
	// its first full decision checked job by job.
	keys := !r.lastDelta
	if keys {
		r.runKeys = slices.Grow(r.runKeys[:0], n)[:n]
	} else {
		r.runKeys = r.runKeys[:0]
	}
	r.runConstrained = false
	// The running jobs' fields come from the dense array r.hot (runHot), not from their
	// entries, which are not read (but for the job's id while the scheduler answers in the
	// full form).
	if r.hotDisorder > n/16 && !r.runningStale {
		r.repackHot()
	}
	hot := r.hot
	for i, s := range r.runSlot[:n] {
		h := &hot[s]
		done, ex, att := h.progress(r.now)
		if keys {
			r.runKeys[i] = runKey{id: h.job.ID, gpus: unsafe.SliceData(h.gpus), n: int32(len(h.gpus)), plan: h.plan}
		}
		r.runConstrained = r.runConstrained || h.constrained
		st := &v.Running[i]
		if st.Job != h.job {
			st.Job = h.job
		}
		if len(st.GPUs) != len(h.gpus) || cap(st.GPUs) != cap(h.gpus) || unsafe.SliceData(st.GPUs) != unsafe.SliceData(h.gpus) {
			st.GPUs = h.gpus
		}
		st.Iterations, st.Executed, st.Attained = done, ex, att
		st.Started, st.FirstStart, st.Since = true, h.firstStart, h.since
		st.Preemptions, st.PlanChoice = int(h.preempts), int(h.plan)
	}
	if n < old {
		clear(v.Running[n:old]) // no stale references past the current running jobs
	}
	v.SetHeld(r.held)
}

// Schedule asks the scheduler what should run from time at on and carries it out in the
// runtime's books. In order, it: delivers the completions queued since the last call to a
// CompletionObserver scheduler (unless Options.DeferCompletions), builds the view, calls the
// scheduler, validates the decision exactly as Decision.Validate does (refusing an invalid
// one with a *ScheduleError and changing nothing), and applies it: running jobs left out
// are preempted and wait again, listed waiting jobs start, running jobs listed on other GPUs
// (or in another worker order) migrate, and rejected jobs are removed or parked
// (Options.Rejected). A restarted or migrated job restores for Options.RestoreTime before it
// progresses.
//
// It returns the actions for the host to carry out, every stop before every start. The
// result belongs to the runtime and is valid until its next call.
func (r *Runtime) Schedule(at float64) (*Actions, error) {
	if err := r.clock(at, "Schedule"); err != nil {
		return nil, err
	}
	if !r.opt.DeferCompletions {
		r.Deliver()
	}
	r.buildView()
	r.view.Delta = r.takeDelta()
	if r.opt.Validate {
		if err := r.view.Validate(); err != nil {
			return nil, fmt.Errorf("host: internal error: view at t=%g s: %w", r.now, err)
		}
		if msg := r.checkHot(); msg != "" {
			return nil, fmt.Errorf("host: internal error: running jobs' hot fields at t=%g s: %s", r.now, msg)
		}
	}
	d, err := r.sched.Schedule(r.view)
	if err != nil {
		return nil, &ScheduleError{Scheduler: r.name, Time: r.now, Err: err}
	}
	bad, ok := r.check(d)
	if r.opt.Validate {
		if verr := d.Validate(r.view); (verr == nil) != ok {
			r.resetListed()
			return nil, fmt.Errorf("host: internal error: validators disagree at t=%g s (fast: %v, Decision.Validate: %v)", r.now, ok, verr)
		}
	}
	if !ok {
		r.resetListed()
		verr := d.Validate(r.view)
		if verr == nil {
			verr = errors.New("rejected by the runtime") // unreachable while the validators agree
		}
		return nil, &ScheduleError{Scheduler: r.name, Time: r.now, Invalid: true, Job: bad, Err: verr}
	}
	if r.opt.Decided != nil {
		r.opt.Decided(&r.view, d.Expand(r.view))
	}
	r.apply(d)
	return &r.acts, nil
}

// resetListed clears the acts that check set.
func (r *Runtime) resetListed() {
	for _, e := range r.listed {
		e.act = actNone
	}
	r.listed = r.listed[:0]
}

// check validates d against the current state, stamping each listed job with the epoch, its
// action and the offset of its copied placement in r.scratch. It returns false and the
// offending job's id when d is invalid.
//
// A running job kept where it runs costs O(1) unless GPUs are unavailable or the job is
// constrained: its GPUs are distinct, in the cluster and held by no other job, and a new
// placement that takes one of them is caught by the owner test of the second pass. Starts and
// migrations are checked GPU by GPU in that second pass. The job named for an invalid decision
// is that of the plain order (every listed GPU checked in list order), which a second run with
// full set finds.
func (r *Runtime) check(d gpusched.Decision) (gpusched.JobID, bool) {
	bad, ok := r.checkPass(d, false)
	if !ok {
		r.resetListed()
		bad, _ = r.checkPass(d, true)
	}
	return bad, ok
}

// checkPass is check's work: with full, every listed GPU is checked in list order (O(GPUs in
// d)); without, as check describes.
func (r *Runtime) checkPass(d gpusched.Decision, full bool) (gpusched.JobID, bool) {
	r.epoch++
	if r.epoch == 0 { // wrapped: forget old stamps
		clear(r.gpuStamp)
		clear(r.keptAt)
		for _, e := range r.ids {
			e.listed = 0
		}
		r.epoch = 1
	}
	r.scratch = r.scratch[:0]
	r.listed = r.listed[:0]
	if math.IsNaN(d.WakeAt) {
		return "", false
	}
	r.hint = 0
	deferred := false
	// A decision usually keeps most of the view's running jobs in the view's order, sharing
	// their GPU slices: those are checked against the host's own record of the running jobs
	// by position (runKeys) and stamped in keptAt, without touching their entries. Such keeps
	// are matched in order, each within a few positions of the last one matched; the other
	// assignments go through find.
	// A delta decision (KeepOthers) lists no kept job but those it chooses to: the others are
	// checked below only where GPUs are unavailable, jobs are constrained or servers have
	// limited host resources.
	delta := d.KeepOthers
	r.deltaDec = delta
	r.lastDelta = delta
	byPos := !delta && !full && r.nUnavail == 0 && r.hostCPU == nil && !r.runConstrained && len(r.runKeys) == len(r.running)
	if len(r.keptAt) < len(r.running) {
		r.keptAt = make([]uint32, max(len(r.running), 2*len(r.keptAt)))
	}
	kept, next, found := 0, 0, false
	for _, a := range d.Run {
		if byPos {
			if p, ok := r.keptPos(a, next); ok {
				if found && r.running[p].listed == r.epoch && r.broken != brokenRelisted {
					return a.Job, false // listed before, through find
				}
				r.keptAt[p] = r.epoch
				kept++
				next = p + 1
				continue
			}
		}
		found = true
		e, ok := r.find(a.Job)
		if !ok {
			return a.Job, false
		}
		if (e.phase != phasePending && e.phase != phaseRunning) || e.listed == r.epoch || (kept > 0 && r.keptByPos(e)) {
			return a.Job, false
		}
		ngpus := int(e.ngpus)
		if a.PlanChoice != 0 || e.plan != 0 {
			ngpus = e.job.GPUsFor(a.PlanChoice) // 0 for a choice out of range
		}
		if ngpus == 0 || len(a.GPUs) != ngpus {
			return a.Job, false
		}
		e.newPlan = int32(a.PlanChoice)
		e.listed = r.epoch
		switch {
		case e.phase == phasePending:
			e.act = actStart
		case sameGPUs(e.gpus, a.GPUs) && e.plan == e.newPlan:
			e.act = actKeep
		default:
			e.act = actMigrate
		}
		switch {
		case e.act != actKeep:
			// place copies the new placement from scratch
			e.asgOff = int32(len(r.scratch))
			r.scratch = append(r.scratch, a.GPUs...)
			if full {
				if !r.checkGPUs(e, a.GPUs, delta) {
					return a.Job, false
				}
			} else {
				deferred = true
			}
		case full || r.nUnavail > 0 || e.constrained:
			if !r.checkGPUs(e, a.GPUs, delta) {
				return a.Job, false
			}
		}
		if r.hostCPU != nil && !r.hostFits(e, a) {
			return a.Job, false
		}
		r.listed = append(r.listed, e)
	}
	for _, je := range d.Rejected {
		if je == nil || je.Err == nil {
			return "", false
		}
		e, ok := r.ids[je.Job]
		if !ok || (e.phase != phasePending && e.phase != phaseRunning) || e.listed == r.epoch || (kept > 0 && r.keptByPos(e)) {
			return je.Job, false
		}
		e.listed = r.epoch
		e.act = actReject
		r.listed = append(r.listed, e)
	}
	for _, id := range d.Stop {
		e, ok := r.ids[id]
		if !ok || e.phase != phaseRunning || e.listed == r.epoch || (kept > 0 && r.keptByPos(e)) {
			return id, false
		}
		e.listed = r.epoch
		e.act = actStop
		r.listed = append(r.listed, e)
	}
	if delta && (r.nUnavail > 0 || r.runConstrained || r.hostCPU != nil) {
		// The running jobs the decision keeps without listing them: on available GPUs they
		// may use, within their servers' host resources.
		for _, e := range r.running {
			if e.listed == r.epoch {
				continue
			}
			if (r.nUnavail > 0 || e.constrained) && !r.checkGPUs(e, e.gpus, false) {
				return e.id, false
			}
			if r.hostCPU != nil && !r.hostFits(e, gpusched.Assignment{Job: e.id, GPUs: e.gpus, PlanChoice: int(e.plan)}) {
				return e.id, false
			}
		}
	}
	if deferred {
		for _, e := range r.listed {
			if e.act != actStart && e.act != actMigrate {
				continue
			}
			n := int(e.ngpus)
			if e.newPlan != 0 || e.plan != 0 {
				n = e.job.GPUsFor(int(e.newPlan))
			}
			if !r.checkGPUs(e, r.scratch[e.asgOff:int(e.asgOff)+n], true) {
				return e.id, false
			}
		}
	}
	return "", true
}

// keepWindow is how many positions of the running jobs keptPos looks at: a decision that
// leaves out (or lists elsewhere) up to keepWindow-1 running jobs between two keeps still has
// the second kept by position.
const keepWindow = 8

// keptPos returns the position, from next on and within keepWindow of it, of the running job
// that a keeps where it runs (the same job on the view's own GPU slice, same plan).
func (r *Runtime) keptPos(a gpusched.Assignment, next int) (int, bool) {
	n := int32(len(a.GPUs))
	if n == 0 {
		return 0, false
	}
	gpus := unsafe.SliceData(a.GPUs)
	for p := next; p < min(next+keepWindow, len(r.runKeys)); p++ {
		k := &r.runKeys[p]
		if n == k.n && gpus == k.gpus && int32(a.PlanChoice) == k.plan && a.Job == k.id {
			return p, true
		}
	}
	return 0, false
}

// keptByPos reports whether e is a running job that the decision being checked has already
// kept by position.
func (r *Runtime) keptByPos(e *Entry) bool {
	if e.phase != phaseRunning {
		return false
	}
	p := r.runningPos(e)
	return p < len(r.running) && r.running[p] == e && r.keptAt[p] == r.epoch
}

// checkGPUs checks the GPUs listed for e: in the cluster, not listed before in this decision,
// available, and ones e may use; with owner, also held by no job the decision keeps where it
// runs. It stamps them with the epoch.
func (r *Runtime) checkGPUs(e *Entry, gpus []topology.GPUID, owner bool) bool {
	n := topology.GPUID(len(r.gpuStamp))
	for _, g := range gpus {
		if g < 0 || g >= n || r.gpuStamp[g] == r.epoch {
			return false
		}
		if r.nUnavail > 0 && r.unavailable.Contains(g) {
			return false
		}
		if e.constrained && !e.job.Eligible(r.c.GPU(g)) {
			return false
		}
		if o := r.owner[g]; owner && r.broken != brokenOwner && o != nil && o != e && r.keeps(o) {
			return false
		}
		r.gpuStamp[g] = r.epoch
	}
	return true
}

// keeps reports whether the decision being checked keeps the running job o where it runs:
// listed as kept, kept by position, or (a delta decision) not listed at all.
func (r *Runtime) keeps(o *Entry) bool {
	if r.deltaDec {
		return o.listed != r.epoch && r.broken != brokenImplicitOwner || o.listed == r.epoch && o.act == actKeep
	}
	return o.listed == r.epoch && o.act == actKeep || r.broken != brokenByPos && r.keptByPos(o)
}

// runKey is what the runtime checks a kept running job against, by position: its id, its
// placement's storage and length, and its plan choice, as of the last view.
type runKey struct {
	id   gpusched.JobID
	gpus *topology.GPUID
	n    int32
	plan int32
}

// sameGPUs reports whether a and b list the same GPUs in the same order; an assignment that
// keeps a job usually shares the view's slice, which settles it without a comparison.
func sameGPUs(a, b []topology.GPUID) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || unsafe.SliceData(a) == unsafe.SliceData(b) || slices.Equal(a, b)
}

// hostFits charges the CPU cores and host memory of e's assignment a to the servers of its GPUs
// and reports whether every server still has them (see gpusched.Decision.Validate).
func (r *Runtime) hostFits(e *Entry, a gpusched.Assignment) bool {
	return e.job.ServerNeeds(r.c, a.PlanChoice, a.GPUs, func(s, cpus int, mem float64) bool {
		if r.hostStamp[s] != r.epoch {
			r.hostStamp[s], r.hostCPU[s], r.hostMem[s] = r.epoch, 0, 0
		}
		r.hostCPU[s] += cpus
		r.hostMem[s] += mem
		sp := r.c.Server(s)
		return !((sp.CPUs > 0 && r.hostCPU[s] > sp.CPUs) || (sp.HostMemory > 0 && r.hostMem[s] > sp.HostMemory*(1+1e-12)))
	})
}

// find returns the entry of the job with the given id. Schedulers usually list jobs in the
// view's order (running, then pending), so find first tries the job after the one it found
// last (r.hint is a position in running ++ pending) and only then the id map.
func (r *Runtime) find(id gpusched.JobID) (*Entry, bool) {
	nr, np := len(r.running), r.phi-r.plo
	if h := r.hint; h < nr+np {
		var e *Entry
		if h < nr {
			e = r.running[h]
		} else {
			e = r.pent[r.plo+h-nr]
		}
		if e.id == id {
			r.hint = h + 1
			return e, true
		}
	}
	e, ok := r.ids[id]
	if !ok {
		return nil, false
	}
	switch e.phase {
	case phaseRunning:
		r.hint = r.runningPos(e) + 1
	case phasePending:
		r.hint = nr + r.pendingPos(e) - r.plo + 1
	}
	return e, true
}

// apply carries out a decision that passed check, recording the actions.
func (r *Runtime) apply(d gpusched.Decision) {
	t := r.now
	acts := &r.acts
	acts.Time = t
	acts.Steps = acts.Steps[:0]
	acts.Rejected = acts.Rejected[:0]
	acts.WakeAt = 0
	if d.WakeAt > t {
		acts.WakeAt = d.WakeAt
	}
	r.stopBuf = r.stopBuf[:0]
	// Preempt running jobs the decision leaves out, stops or rejects; unplace migrating ones.
	r.preempted = r.preempted[:0]
	stopped := false
	if r.deltaDec {
		// Only the listed running jobs change; taken in running (submission) order, as the
		// walk of the full form takes them, so that the actions are the same.
		r.stopList = r.stopList[:0]
		for _, e := range r.listed {
			if e.phase == phaseRunning && e.act != actKeep {
				r.stopList = append(r.stopList, e)
			}
		}
		if r.broken != brokenStopOrder {
			slices.SortFunc(r.stopList, cmpSeq)
		}
		r.posBuf = r.posBuf[:0]
		for _, e := range r.stopList {
			if e.act == actMigrate {
				r.unplace(e, t)
				continue
			}
			r.posBuf = append(r.posBuf, r.runningPos(e))
			r.stop(e, t)
		}
		if len(r.posBuf) > 0 {
			r.deleteRunning(r.posBuf)
		}
		clear(r.stopList)
	} else {
		for i, e := range r.running {
			if r.keptAt[i] == r.epoch {
				continue // kept by position (check): its entry is not even read
			}
			if e.listed == r.epoch && e.act != actReject && e.act != actStop {
				if e.act == actMigrate {
					r.unplace(e, t)
				}
				continue
			}
			r.stop(e, t)
			stopped = true
		}
		if stopped {
			r.dropStopped()
		}
	}
	// Start and migrate; find the queue positions of the jobs that leave the queue.
	r.started = r.started[:0]
	r.posBuf = r.posBuf[:0]
	for _, e := range r.listed {
		switch e.act {
		case actStart:
			r.posBuf = append(r.posBuf, r.pendingPos(e))
			e.settle(t, r.ck)
			reconf := e.plan != e.newPlan
			e.setPlan(int(e.newPlan))
			// Running before place marks it dirty: markDirty's trim drops entries that are
			// not running, and a job being started must keep its mark (it needs a rate).
			e.phase = phaseRunning
			r.touch(e)
			r.place(e)
			r.busy += int(e.ngpus)
			if e.started {
				e.restoreEnd = t + r.restore
				if reconf {
					e.restoreEnd = t + r.reconf
				}
			} else {
				e.started = true
				e.firstStart = t
			}
			e.since = t
			e.checkpoint()
			r.started = append(r.started, e)
			acts.Steps = append(acts.Steps, Action{Kind: Start, Job: e.id, GPUs: e.gpus})
		case actMigrate:
			e.restoreEnd = t + r.restore
			if e.plan != e.newPlan {
				r.busy -= int(e.ngpus)
				e.setPlan(int(e.newPlan))
				r.busy += int(e.ngpus)
				e.restoreEnd = t + r.reconf
			}
			r.place(e)
			e.migrate++
			e.checkpoint()
			if r.broken != brokenHot {
				r.syncHot(e)
			}
			acts.Steps = append(acts.Steps, Action{Kind: Start, Job: e.id, GPUs: e.gpus, Migration: true})
		case actReject:
			if e.phase == phasePending {
				r.posBuf = append(r.posBuf, r.pendingPos(e))
			}
		}
	}
	if len(r.posBuf) > 0 {
		slices.Sort(r.posBuf)
		r.removeLeaving(r.posBuf)
	}
	if len(r.started) > 0 {
		slices.SortFunc(r.started, func(a, b *Entry) int { return cmpSeq(a, b) })
		r.mergeRunning(r.started)
	}
	if len(r.preempted) > 0 {
		r.insertPending(r.preempted)
	}
	for _, je := range d.Rejected {
		e := r.ids[je.Job]
		e.act = actNone
		e.rejected = je
		acts.Rejected = append(acts.Rejected, je)
		if r.opt.Rejected == RejectPark && errors.Is(je.Err, gpusched.ErrTooLarge) {
			e.phase = phaseParked
			r.touch(e)
			r.parked = append(r.parked, e)
			if r.forget != nil {
				r.forget.Forget(&e.job)
			}
			continue
		}
		e.killed = true
		r.depart(e)
	}
	for _, e := range r.listed {
		e.act = actNone
	}
	// Keep no stale references to entries (their jobs may leave before the next call).
	clear(r.listed)
	clear(r.started)
	clear(r.preempted)
	r.listed, r.started, r.preempted = r.listed[:0], r.started[:0], r.preempted[:0]
	if r.broken == brokenOrder {
		acts.Steps = perJobOrder(acts.Steps)
	}
}

// unplace takes the migrating running job e off its GPUs at t (the stop half of its move).
func (r *Runtime) unplace(e *Entry, t float64) {
	e.settle(t, r.ck)
	r.closeSegment(e, false)
	r.unlink(e)
	r.acts.Steps = append(r.acts.Steps, Action{Kind: Stop, Job: e.id, GPUs: r.keepGPUs(e.gpus), Migration: true})
}

// stop takes the running job e off its GPUs at t: preempted (it waits again, in r.preempted)
// or, rejected, dropped. The caller removes it from r.running.
func (r *Runtime) stop(e *Entry, t float64) {
	e.settle(t, r.ck)
	r.closeSegment(e, false)
	r.unlink(e)
	r.busy -= int(e.ngpus)
	r.acts.Steps = append(r.acts.Steps, Action{Kind: Stop, Job: e.id, GPUs: r.keepGPUs(e.gpus), Rejected: e.act == actReject})
	e.phase = phasePending
	r.touch(e)
	r.freeHotAt(r.runningPos(e))
	e.gpus = e.gpus[:0]
	e.step = 0
	e.since = t
	if e.act == actReject {
		e.act = actDropped // stopped, and never in the queue
	} else {
		e.preempt++
		r.preempted = append(r.preempted, e)
	}
}

// deletePositions removes the elements at the ascending positions pos from s, moving the
// others in blocks, and clears the tail it frees.
func deletePositions[T any](s []T, pos []int) []T {
	w := pos[0]
	for j, p := range pos {
		hi := len(s)
		if j+1 < len(pos) {
			hi = pos[j+1]
		}
		w += copy(s[w:], s[p+1:hi])
	}
	clear(s[w:])
	return s[:w]
}

// perJobOrder moves the stop half of every migration to just before its start half: the
// unsafe order of a host that carries out a decision job by job (a deliberately wrong
// variant, for tests).
func perJobOrder(steps []Action) []Action {
	var out []Action
	half := map[gpusched.JobID]Action{}
	for _, a := range steps {
		if a.Kind == Stop && a.Migration {
			half[a.Job] = a
			continue
		}
		if a.Kind == Start && a.Migration {
			out = append(out, half[a.Job])
		}
		out = append(out, a)
	}
	return out
}

func cmpSeq(a, b *Entry) int {
	switch {
	case a.seq < b.seq:
		return -1
	case a.seq > b.seq:
		return 1
	}
	return 0
}

// place gives e the placement check copied for it and links it.
func (r *Runtime) place(e *Entry) {
	e.gpus = append(e.gpus[:0], r.scratch[e.asgOff:int(e.asgOff)+int(e.ngpus)]...)
	e.placedAt = r.now
	e.segStart = r.now
	e.maxSpan = max(e.maxSpan, r.c.ServersSpanned(e.gpus))
	r.link(e)
}

// SetCluster replaces the cluster at time at: servers joined or left, or changed. Running
// jobs keep their GPUs on the servers that remain (matched by server id and GPU index, with
// the same GPU model) under the new cluster's GPU ids; a job that held a GPU of a server that
// left, or changed, is interrupted (see Interrupt). Unavailable GPUs of the servers that
// remain stay unavailable. Parked jobs wait again, in submission order, for the scheduler to
// try them on the new cluster. It returns the stops the host must carry out, as Fail does.
func (r *Runtime) SetCluster(c *topology.Cluster, at float64) ([]Action, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: no cluster", ErrInvalidOptions)
	}
	if err := r.clock(at, "SetCluster"); err != nil {
		return nil, err
	}
	old := r.c
	r.compactRunning()
	r.acts.Steps = r.acts.Steps[:0]
	r.stopBuf = r.stopBuf[:0]
	remap := func(g topology.GPUID) (topology.GPUID, bool) {
		s := old.ServerOf(g)
		first, _ := old.GPUsOf(s)
		sv := old.Server(s)
		ns, ok := c.ServerIndex(sv.ID)
		if !ok || c.Server(ns).GPU != sv.GPU {
			return 0, false
		}
		nfirst, nn := c.GPUsOf(ns)
		local := g - first
		if int(local) >= nn {
			return 0, false
		}
		return nfirst + local, true
	}
	var lost []*Entry
	buf := make([]topology.GPUID, 0, 64)
	for _, e := range r.running {
		e.settle(r.now, r.ck)
		buf = buf[:0]
		for _, g := range e.gpus {
			ng, ok := remap(g)
			if !ok {
				break
			}
			buf = append(buf, ng)
		}
		if len(buf) < len(e.gpus) {
			lost = append(lost, e)
			continue
		}
		r.unlink(e)
		r.closeSegment(e, false)
		copy(e.gpus, buf)
		e.segStart = r.now
	}
	for _, e := range lost {
		r.acts.Steps = append(r.acts.Steps, Action{Kind: Stop, Job: e.id, GPUs: r.keepGPUs(e.gpus), Interrupted: true})
		r.interrupt(e)
	}
	r.compactRunning()
	var unavail topology.GPUSet
	n := 0
	r.unavailable.Range(func(g topology.GPUID) bool {
		if old.Check(g) == nil {
			if ng, ok := remap(g); ok {
				unavail.Add(ng)
				n++
			}
		}
		return true
	})
	r.unavailable, r.nUnavail = unavail, n
	r.adopt(c)
	r.dirty = r.dirty[:0]
	for _, e := range r.ids {
		e.dirty = false
	}
	for _, e := range r.running {
		r.link(e)
		e.maxSpan = max(e.maxSpan, c.ServersSpanned(e.gpus))
		r.syncHot(e) // settled above
	}
	if len(r.parked) > 0 {
		back := slices.Clone(r.parked)
		slices.SortFunc(back, cmpSeq)
		for _, e := range back {
			e.phase = phasePending
			e.since = r.now
			r.touch(e)
		}
		r.parked = r.parked[:0]
		r.insertPending(back)
	}
	return r.acts.Steps, nil
}

// viewStatus returns the status of e, waiting or running, in the view just built.
func (r *Runtime) viewStatus(e *Entry) *gpusched.JobStatus {
	if e.phase == phasePending {
		return &r.view.Pending[r.pendingPos(e)-r.plo]
	}
	return &r.view.Running[r.runningPos(e)]
}

// takeDelta returns the delta of the view just built (gpusched.ViewDelta) and starts the next:
// the jobs logged since the last call whose membership of the view changed, or that changed
// between waiting and running (Transitions). Their statuses point into the view, found by
// binary search (pending, by submission order) or in the running jobs.
func (r *Runtime) takeDelta() *gpusched.ViewDelta {
	r.viewSeq++
	d := &r.delta
	d.Source = r
	d.Seq = r.viewSeq
	clear(d.Arrived)
	d.Arrived = d.Arrived[:0]
	d.Left = d.Left[:0]
	clear(d.Started)
	clear(d.Stopped)
	d.Started, d.Stopped = d.Started[:0], d.Stopped[:0]
	d.ArrivalOrder = !r.unordered
	// A waiting job whose progress Report changed is in no list: the view says Transitions
	// false, so that a scheduler that keeps waiting jobs' progress between views rescans.
	d.Transitions = !r.waitMoved
	r.waitMoved = false
	for _, e := range r.touched {
		e.logged = false
		member := e.phase == phasePending || e.phase == phaseRunning
		running := e.phase == phaseRunning
		switch {
		case member && !e.inView:
			d.Arrived = append(d.Arrived, r.viewStatus(e))
		case !member && e.inView:
			if r.broken == brokenDelta && e.gpus == nil && !e.started {
				break
			}
			d.Left = append(d.Left, e.id)
		case member && running && !e.viewRun:
			d.Started = append(d.Started, r.viewStatus(e))
		case member && !running && e.viewRun:
			if r.broken == brokenTransitions {
				break
			}
			d.Stopped = append(d.Stopped, r.viewStatus(e))
		}
		e.inView = member
		e.viewRun = member && running
	}
	clear(r.touched)
	r.touched = r.touched[:0]
	if !d.Transitions {
		clear(d.Started)
		clear(d.Stopped)
		d.Started, d.Stopped = d.Started[:0], d.Stopped[:0]
	}
	return d
}
