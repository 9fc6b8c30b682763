package sim

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/host"
	"github.com/gpusched/gpusched/topology"
)

// jobState is the simulator's own record of one job: what only the simulator knows (its true
// length) and the version of its completion event. The bookkeeping every host needs (status,
// placement, progress, queue) is the runtime's (package host).
type jobState struct {
	en     *host.Entry // the runtime's entry, from arrival until the job's completion is delivered
	ver    uint32      // completion-event version: heap entries with another version are stale
	left   bool        // finished or rejected: rec is final
	killed bool
	// lost counts the failures in a row that stopped the job while its progress as of its
	// last checkpoint stayed kept (ErrNoProgress); kept is that progress, in iterations.
	lost  int
	kept  float64
	iters float64 // true length, known only to the simulator
	job   *gpusched.Job
	rec   JobRecord
	// cost is the job's last step cost and what it was asked for (nil before its first start
	// and after it left).
	cost *costMemo
}

// costMemo is the last step cost of a job and the job, placement and link loads it came
// from: a job marked dirty whose loads came back to what they were (a job joined and
// another left its links within one event) keeps it without asking the cost model again.
type costMemo struct {
	job  *gpusched.Job // the entry's Current when asked: a new plan choice is a new pointer
	gpus []topology.GPUID
	load []linkShare
	sc   gpusched.StepCost
}

// linkShare is one entry of a topology.LinkLoad.
type linkShare struct {
	l topology.Link
	v float64
}

// same reports whether the cost model was last asked for exactly job j on gpus under load.
func (m *costMemo) same(j *gpusched.Job, gpus []topology.GPUID, load topology.LinkLoad) bool {
	if m.job != j || len(m.load) != len(load) || !slices.Equal(m.gpus, gpus) {
		return false
	}
	for _, p := range m.load {
		if v, ok := load[p.l]; !ok || v != p.v {
			return false
		}
	}
	return true
}

// set records sc as the step cost of job j on gpus under load.
func (m *costMemo) set(j *gpusched.Job, gpus []topology.GPUID, load topology.LinkLoad, sc gpusched.StepCost) {
	m.job = j
	m.gpus = append(m.gpus[:0], gpus...)
	m.load = m.load[:0]
	for l, v := range load {
		m.load = append(m.load, linkShare{l, v})
	}
	m.sc = sc
}

// heapEntry is a completion event: job idx finishes at time t if its version is still ver.
type heapEntry struct {
	t   float64
	idx int32
	ver uint32
}

func (a heapEntry) less(b heapEntry) bool {
	if a.t != b.t {
		return a.t < b.t
	}
	return a.idx < b.idx
}

// eventHeap is a binary min-heap of completion events ordered by (time, job index), with lazy
// invalidation through the job versions.
type eventHeap []heapEntry

func (h *eventHeap) push(e heapEntry) { heapPush((*[]heapEntry)(h), e) }

func (h *eventHeap) pop() heapEntry { return heapPop((*[]heapEntry)(h)) }

// engine is the state of one Run: the event loop over the runtime's bookkeeping.
type engine struct {
	cfg     *Config
	c       *topology.Cluster
	cost    gpusched.CostModel
	restore float64
	name    string
	rt      *host.Runtime

	jobs []jobState // in arrival order
	ids  map[gpusched.JobID]int32
	// segments are the placement intervals the runtime reported (Config.RecordSegments).
	segments []host.Segment
	nextArr  int
	heap     eventHeap
	wake     float64
	now      float64
	fail     *failures // nil without failures

	left      int  // jobs finished or rejected
	again     bool // the last decision rejected jobs: call the scheduler again at the same time
	timeline  []Sample
	events    int
	firstArr  float64
	lastEvent float64
	completed []int32 // jobs that left at the current event, in order

	// idleFit is the number of GPUs left idle after the last event while a waiting job would
	// fit on that many (see Summary.IdleWhileWaiting); idleWait integrates it over time.
	idleFit  int
	idleWait float64
}

func newEngine(cfg *Config) (*engine, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	e := &engine{
		cfg:     cfg,
		c:       cfg.Cluster,
		cost:    cfg.Cost,
		restore: cfg.RestoreTime,
		name:    host.SchedulerName(cfg.Scheduler),
	}
	if e.cost == nil {
		e.cost = defaultCost()
	}
	switch {
	case e.restore == 0:
		e.restore = DefaultRestoreTime
	case e.restore < 0:
		e.restore = 0
	}
	n := len(cfg.Jobs)
	order := make([]int32, n)
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int {
		return cmp.Compare(cfg.Jobs[a].Job.Arrival, cfg.Jobs[b].Job.Arrival)
	})
	e.jobs = make([]jobState, n)
	e.ids = make(map[gpusched.JobID]int32, n)
	for k, i := range order {
		r := &cfg.Jobs[i]
		if _, dup := e.ids[r.Job.ID]; dup {
			return nil, fmt.Errorf("%w: job id %q appears twice", ErrInvalidConfig, r.Job.ID)
		}
		e.ids[r.Job.ID] = int32(k)
		e.jobs[k] = jobState{job: &r.Job, iters: r.Iterations, killed: r.Killed}
	}
	if n > 0 {
		e.firstArr = e.jobs[0].job.Arrival
	}
	opt := host.Options{
		Cluster: cfg.Cluster, Scheduler: cfg.Scheduler, Cost: e.cost,
		RestoreTime: e.restore, ReconfigureTime: reconfigureTime(cfg.ReconfigureTime, e.restore), CheckpointEvery: cfg.Checkpoint,
		Validate: cfg.ValidateViews,
		Decided:  cfg.Observer.Scheduled,
	}
	if cfg.RecordSegments {
		opt.OnSegment = func(s host.Segment) { e.segments = append(e.segments, s) }
	}
	rt, err := host.New(opt)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	e.rt = rt
	if e.fail, err = newFailures(cfg.Failures, cfg.Cluster, e.firstArr, cfg.broken); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *engine) run() error {
	total := len(e.jobs)
	for e.left < total {
		t := math.Inf(1)
		if e.nextArr < total {
			t = e.jobs[e.nextArr].job.Arrival
		}
		for len(e.heap) > 0 && !e.valid(e.heap[0]) {
			e.heap.pop()
		}
		if len(e.heap) > 0 && e.heap[0].t < t {
			t = e.heap[0].t
		}
		if e.wake > 0 && e.wake < t {
			t = e.wake
		}
		if e.again && e.now < t {
			t = e.now // jobs were rejected: the scheduler sees the view without them at once
		}
		if math.IsInf(t, 1) && e.fail != nil && e.fail.down > 0 {
			t = e.fail.next() // only a repair can unblock the queue
		} else if e.fail != nil {
			t = min(t, e.fail.next())
		}
		if t > Horizon && len(e.heap) > 0 && e.heap[0].t == t {
			return e.pastHorizon(t, e.heap[0].idx)
		}
		if t > Horizon && e.wake == t {
			return e.pastHorizon(t, -1)
		}
		if t > Horizon && e.fail != nil && e.fail.next() == t && !math.IsInf(t, 1) {
			return fmt.Errorf("%w: server %s would fail or be repaired at t=%v s, past the simulator's horizon of %v s (2^32 s, about 136 years; see Horizon), with %d of %d jobs unfinished (scheduler %s)",
				ErrLimit, e.c.Server(e.fail.heap[0].server).ID, t, float64(Horizon), total-e.left, total, e.name)
		}
		if math.IsInf(t, 1) {
			if e.rt.NumPending() == 0 {
				return fmt.Errorf("%w: scheduler %s at t=%g s: %d of %d jobs unfinished but none running, waiting or to arrive",
					ErrStalled, e.name, e.now, total-e.left, total)
			}
			return fmt.Errorf("%w: scheduler %s at t=%g s left %d jobs waiting (first: %q) with no job running, no arrival and no wake-up to come",
				ErrStalled, e.name, e.now, e.rt.NumPending(), e.rt.Pending()[0].ID())
		}
		if e.cfg.MaxTime > 0 && t > e.cfg.MaxTime {
			return fmt.Errorf("%w: next event at t=%g s is past MaxTime %g s with %d of %d jobs unfinished (scheduler %s)",
				ErrLimit, t, e.cfg.MaxTime, total-e.left, total, e.name)
		}
		if e.cfg.MaxEvents > 0 && e.events >= e.cfg.MaxEvents {
			return fmt.Errorf("%w: %d events at t=%g s with %d of %d jobs unfinished (scheduler %s)",
				ErrLimit, e.events, e.now, total-e.left, total, e.name)
		}
		e.idleWait += float64(e.idleFit) * (t - e.now)
		e.now = t
		e.lastEvent = t

		// Completions at t.
		e.completed = e.completed[:0]
		for len(e.heap) > 0 && e.heap[0].t <= t {
			h := e.heap.pop()
			if e.valid(h) {
				if err := e.complete(h.idx); err != nil {
					return err
				}
			}
		}
		// Failures and repairs at t.
		if e.fail != nil {
			if err := e.fail.apply(t, e.rt, e.interrupted); err != nil {
				return err
			}
		}
		// Arrivals at t.
		for e.nextArr < total && e.jobs[e.nextArr].job.Arrival <= t {
			if err := e.arrive(int32(e.nextArr)); err != nil {
				return err
			}
			e.nextArr++
		}
		if e.wake <= t {
			e.wake = 0
		}
		// Tell the scheduler and the observer who left, in order of completion.
		e.deliver()
		if e.left == total {
			e.sample()
			if e.cfg.Observer.Progress != nil {
				e.cfg.Observer.Progress(t, e.left, total)
			}
			break
		}
		if err := e.schedule(); err != nil {
			return err
		}
		if err := e.recompute(); err != nil {
			return err
		}
		e.sample()
		e.idleFit = e.idleWhileWaiting()
		if e.cfg.Observer.Progress != nil {
			e.cfg.Observer.Progress(t, e.left, total)
		}
	}
	return nil
}

func (e *engine) valid(h heapEntry) bool {
	j := &e.jobs[h.idx]
	return !j.left && j.en != nil && j.en.Running() && j.ver == h.ver
}

// arrive submits job idx to the runtime, at the tail of the queue (arrivals come in index
// order).
func (e *engine) arrive(idx int32) error {
	j := &e.jobs[idx]
	en, err := e.rt.Submit(*j.job, j.iters)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err) // unreachable: check validated every job
	}
	j.en = en
	return nil
}

// interrupted counts, for each job a server failure has just stopped, the failures in a row
// that left it no more progress than the one before, and gives up with ErrNoProgress when one
// job has lost MaxLostAttempts starts in a row to random failures.
func (e *engine) interrupted(stops []host.Action) error {
	for _, a := range stops {
		en, ok := e.rt.Job(a.Job)
		if !ok {
			continue
		}
		j := &e.jobs[e.ids[en.ID()]]
		if done := en.Iterations(); done > j.kept {
			j.kept, j.lost = done, 0
		}
		j.lost++
		if j.lost >= MaxLostAttempts && e.cfg.Failures.MTBF > 0 {
			return fmt.Errorf("%w: job %q lost its progress to %d server failures in a row (the last at t=%.0f s): it kept %.6g of %.6g iterations; "+
				"with servers failing every %g s on average (MTBF) it cannot be expected to reach its next checkpoint or its end: checkpoint more often (Config.Checkpoint) or raise the MTBF (scheduler %s)",
				ErrNoProgress, j.job.ID, j.lost, e.now, j.kept, j.iters, e.cfg.Failures.MTBF, e.name)
		}
	}
	return nil
}

// complete ends job idx at the current time.
func (e *engine) complete(idx int32) error {
	j := &e.jobs[idx]
	if err := e.rt.Finish(j.job.ID, e.now, j.iters, j.killed); err != nil {
		return fmt.Errorf("sim: internal error: %w", err)
	}
	e.leave(idx)
	return nil
}

// leave records job idx, which has just left the runtime (its entry is valid until the next
// delivery).
func (e *engine) leave(idx int32) {
	j := &e.jobs[idx]
	j.rec = e.record(idx)
	j.left = true
	j.cost = nil
	e.left++
	e.completed = append(e.completed, idx)
}

// deliver tells the scheduler (through the runtime) and the observer of the jobs that left.
func (e *engine) deliver() {
	e.rt.Deliver()
	for _, idx := range e.completed {
		e.jobs[idx].en = nil
		if e.cfg.Observer.Finished != nil {
			e.cfg.Observer.Finished(e.jobs[idx].rec)
		}
	}
	e.completed = e.completed[:0]
}

// recompute gives every dirty running job its step cost under the current link loads and a
// fresh completion event.
func (e *engine) recompute() error {
	for _, en := range e.rt.TakeDirty() {
		idx := e.ids[en.ID()]
		j := &e.jobs[idx]
		gpus, cur, load := en.GPUs(), en.Current(), e.rt.LinkLoad(en)
		if j.cost == nil {
			j.cost = new(costMemo)
		}
		var sc gpusched.StepCost
		if j.cost.same(cur, gpus, load) {
			sc = j.cost.sc
		} else {
			var err error
			if sc, err = e.cost.StepCost(cur, e.c, gpus, load); err != nil {
				return fmt.Errorf("%w: job %q on GPUs %v at t=%g s (scheduler %s): %w",
					ErrCost, j.job.ID, topology.SetOf(gpus...), e.now, e.name, err)
			}
			if !(sc.Time > 0) || math.IsInf(sc.Time, 0) || !(sc.CrossServerBytes >= 0) || math.IsInf(sc.CrossServerBytes, 0) {
				return fmt.Errorf("%w: job %q on GPUs %v at t=%g s: step time %v s and %v cross-server bytes (need a finite time > 0 and finite bytes >= 0)",
					ErrCost, j.job.ID, topology.SetOf(gpus...), e.now, sc.Time, sc.CrossServerBytes)
			}
			j.cost.set(cur, gpus, load, sc)
		}
		if err := e.rt.SetRate(en, e.now, sc); err != nil {
			return fmt.Errorf("sim: internal error: %w", err)
		}
		j.ver++
		fin := max(e.now, en.RestoreEnd()) + (j.iters-en.Iterations())*sc.Time
		e.heap.push(heapEntry{t: fin, idx: idx, ver: j.ver})
	}
	return nil
}

// schedule asks the runtime for a decision at the current time and records its rejections.
func (e *engine) schedule() error {
	e.events++
	acts, err := e.rt.Schedule(e.now)
	if err != nil {
		var se *host.ScheduleError
		if errors.As(err, &se) {
			if se.Invalid {
				return fmt.Errorf("%w: scheduler %s at t=%g s: job %q: %w", ErrInvalidDecision, e.name, e.now, se.Job, se.Err)
			}
			return fmt.Errorf("%w: scheduler %s at t=%g s: %w", ErrScheduler, e.name, e.now, se.Err)
		}
		return fmt.Errorf("sim: %w", err)
	}
	for _, je := range acts.Rejected {
		e.leave(e.ids[je.Job])
	}
	e.again = len(acts.Rejected) > 0
	e.wake = acts.WakeAt
	return nil
}

// idleWhileWaiting returns the GPUs that are neither held nor unavailable if some waiting job
// asks for no more GPUs than that, and 0 otherwise. The scan of the waiting jobs stops at the
// first that fits, and runs only when GPUs are idle.
func (e *engine) idleWhileWaiting() int {
	if e.rt.NumPending() == 0 {
		return 0
	}
	idle := e.c.NumGPUs() - e.rt.Busy() - e.rt.Unavailable().Len()
	if idle <= 0 {
		return 0
	}
	for _, en := range e.rt.Pending() {
		if max(en.Job().GPUs, 1) <= idle {
			return idle
		}
	}
	return 0
}

// sample records the state after the current event in the timeline.
func (e *engine) sample() {
	s := Sample{Time: e.now, BusyGPUs: e.rt.Busy(), Queued: e.rt.NumPending(), Running: e.rt.NumRunning()}
	if k := len(e.timeline); k > 0 && e.timeline[k-1].Time == s.Time {
		e.timeline[k-1] = s
		return
	}
	if k := len(e.timeline); k > 0 {
		p := e.timeline[k-1]
		if p.BusyGPUs == s.BusyGPUs && p.Queued == s.Queued && p.Running == s.Running {
			return
		}
	}
	e.timeline = append(e.timeline, s)
}

// reconfigureTime maps Config.ReconfigureTime to host.Options.ReconfigureTime: zero is the
// restore time actually charged (so DefaultRestoreTime when that is selected), negative none.
func reconfigureTime(t, restore float64) float64 {
	switch {
	case t == 0:
		return restore
	case t < 0:
		return -1
	}
	return t
}
