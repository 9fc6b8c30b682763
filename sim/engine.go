package sim

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

type phase uint8

const (
	phaseFuture  phase = iota // not arrived yet
	phasePending              // waiting for GPUs
	phaseRunning              // holding GPUs
	phaseDone                 // left the system
)

// action is what a decision asks of one job.
type action uint8

const (
	actNone action = iota
	actStart
	actKeep
	actMigrate
)

// jobState is the simulator's record of one job. Progress is folded in up to segAt; between
// segAt and now it is derived from the current rate (see progressAt), so that a job's
// progress is touched only when its rate or placement changes.
type jobState struct {
	// Hot fields, read at every event by check, find and buildView, come first.
	phase   phase
	act     action // what the current decision does to it
	dirty   bool   // step cost must be recomputed
	started bool
	listed  uint32 // decision epoch in which the job was listed
	asgOff  int32  // offset of its new placement in the engine's scratch buffer
	ngpus   int32  // job.GPUs
	ver     uint32 // completion-event version: heap entries with another version are stale
	preempt int
	id      gpusched.JobID   // job.ID
	gpus    []topology.GPUID // current placement (nil while waiting)

	segAt      float64 // progress below is accounted up to this time
	done       float64 // iterations done
	executed   float64 // seconds holding GPUs
	attained   float64 // GPU-seconds holding GPUs
	restoreEnd float64 // no progress before this time (restore after preemption/migration)
	step       float64 // seconds per iteration in the current placement and load
	iters      float64 // true length, known only to the simulator
	firstStart float64
	since      float64

	productive float64 // seconds holding GPUs and making progress (restore excluded)
	bytes      float64 // cross-server bytes moved
	xbytes     float64 // cross-server bytes per iteration in the current placement
	links      []int32 // dense ids of the shared links the placement uses
	finish     float64
	migrate    int
	maxSpan    int
	placedAt   float64 // start of the current placement (segments)
	killed     bool
	job        gpusched.Job
}

// progressAt returns the job's iterations done, seconds held, GPU-seconds held and
// productive seconds at time t >= segAt, without changing the job.
func (j *jobState) progressAt(t float64) (done, executed, attained, productive float64) {
	done, executed, attained, productive = j.done, j.executed, j.attained, j.productive
	if j.phase != phaseRunning {
		return
	}
	dt := t - j.segAt
	if dt <= 0 {
		return
	}
	executed += dt
	attained += dt * float64(j.ngpus)
	if ps := max(j.segAt, j.restoreEnd); t > ps && j.step > 0 {
		p := t - ps
		productive += p
		done = min(j.iters, done+p/j.step)
	}
	return
}

// settle folds the job's progress up to time t into its record.
func (j *jobState) settle(t float64) {
	if j.phase != phaseRunning {
		j.segAt = t
		return
	}
	dt := t - j.segAt
	if dt <= 0 {
		return
	}
	j.executed += dt
	j.attained += dt * float64(j.job.GPUs)
	if ps := max(j.segAt, j.restoreEnd); t > ps && j.step > 0 {
		p := t - ps
		j.productive += p
		di := min(p/j.step, j.iters-j.done)
		j.done += di
		j.bytes += di * j.xbytes
	}
	j.segAt = t
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

func (h *eventHeap) push(e heapEntry) {
	*h = append(*h, e)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !s[i].less(s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *eventHeap) pop() heapEntry {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && s[r].less(s[l]) {
			m = r
		}
		if !s[m].less(s[i]) {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

// forgetter is implemented by cost models that cache per-job state (gpusched.ModelCost):
// the simulator tells them when a job has left.
type forgetter interface{ Forget(j *gpusched.Job) }

// engine is the state of one Run.
type engine struct {
	cfg      *Config
	c        *topology.Cluster
	cost     gpusched.CostModel
	restore  float64
	name     string
	observer gpusched.CompletionObserver
	forget   forgetter

	jobs    []jobState
	ids     map[gpusched.JobID]int32
	nextArr int
	heap    eventHeap
	wake    float64
	now     float64

	// Pending jobs in arrival order: their statuses live in pbuf[plo:phi], their indices in
	// pidx[plo:phi]. Both ends can move, so that removing jobs near the head of a long queue
	// costs little.
	pbuf     []gpusched.JobStatus
	pidx     []int32
	plo, phi int

	running []int32 // indices of running jobs, ascending (arrival order)
	busy    int     // GPUs held
	view    gpusched.View

	linkJobs   [][]int32 // dense link id -> running jobs on the link
	linkOf     []topology.Link
	linkStride int
	load       topology.LinkLoad

	epoch     uint32
	hint      int // see find
	gpuStamp  []uint32
	scratch   []topology.GPUID
	listedIdx []int32
	dirty     []int32
	completed []int32
	preempted []int32
	startIdx  []int32

	finished  int
	timeline  []Sample
	segments  []Segment
	events    int
	firstArr  float64
	lastEvent float64
	records   []JobRecord // records of the jobs completed at the current event
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
		name:    SchedulerName(cfg.Scheduler),
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
	if o, ok := cfg.Scheduler.(gpusched.CompletionObserver); ok {
		e.observer = o
	}
	if f, ok := e.cost.(forgetter); ok {
		e.forget = f
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
		e.jobs[k] = jobState{job: r.Job, id: r.Job.ID, ngpus: int32(r.Job.GPUs), iters: r.Iterations, killed: r.Killed}
	}
	if n > 0 {
		e.firstArr = e.jobs[0].job.Arrival
	}
	e.linkStride = max(e.c.NumServers(), e.c.NumRacks()) + 1
	e.linkJobs = make([][]int32, 3*e.linkStride)
	e.linkOf = make([]topology.Link, 3*e.linkStride)
	for k := range 3 {
		for i := range e.linkStride {
			e.linkOf[k*e.linkStride+i] = topology.Link{Kind: topology.LinkKind(k), Index: i}
		}
	}
	e.load = make(topology.LinkLoad)
	e.gpuStamp = make([]uint32, e.c.NumGPUs())
	e.view.Cluster = e.c
	return e, nil
}

func (e *engine) run() error {
	total := len(e.jobs)
	for e.finished < total {
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
		if t > Horizon && len(e.heap) > 0 && e.heap[0].t == t {
			return e.pastHorizon(t, e.heap[0].idx)
		}
		if t > Horizon && e.wake == t {
			return e.pastHorizon(t, -1)
		}
		if math.IsInf(t, 1) {
			if e.phi == e.plo {
				return fmt.Errorf("%w: scheduler %s at t=%g s: %d of %d jobs unfinished but none running, waiting or to arrive",
					ErrStalled, e.name, e.now, total-e.finished, total)
			}
			st := &e.pbuf[e.plo]
			return fmt.Errorf("%w: scheduler %s at t=%g s left %d jobs waiting (first: %q) with no job running, no arrival and no wake-up to come",
				ErrStalled, e.name, e.now, e.phi-e.plo, st.Job.ID)
		}
		if e.cfg.MaxTime > 0 && t > e.cfg.MaxTime {
			return fmt.Errorf("%w: next event at t=%g s is past MaxTime %g s with %d of %d jobs unfinished (scheduler %s)",
				ErrLimit, t, e.cfg.MaxTime, total-e.finished, total, e.name)
		}
		if e.cfg.MaxEvents > 0 && e.events >= e.cfg.MaxEvents {
			return fmt.Errorf("%w: %d events at t=%g s with %d of %d jobs unfinished (scheduler %s)",
				ErrLimit, e.events, e.now, total-e.finished, total, e.name)
		}
		e.now = t
		e.lastEvent = t

		// Completions at t.
		e.completed = e.completed[:0]
		e.records = e.records[:0]
		for len(e.heap) > 0 && e.heap[0].t <= t {
			h := e.heap.pop()
			if e.valid(h) {
				e.complete(h.idx)
			}
		}
		if len(e.completed) > 0 {
			e.running = slices.DeleteFunc(e.running, func(i int32) bool { return e.jobs[i].phase == phaseDone })
		}
		// Arrivals at t.
		for e.nextArr < total && e.jobs[e.nextArr].job.Arrival <= t {
			e.arrive(int32(e.nextArr))
			e.nextArr++
		}
		if e.wake <= t {
			e.wake = 0
		}
		// Tell the scheduler and the observer who left, in order of completion.
		batch := e.records[len(e.records)-len(e.completed):]
		for k, idx := range e.completed {
			j := &e.jobs[idx]
			if e.observer != nil {
				c := gpusched.Completion{Job: &j.job, Time: j.finish, Iterations: j.done, Killed: j.killed}
				if j.productive > 0 {
					c.StepTime = j.productive / j.done
				}
				e.observer.JobCompleted(c)
			}
			if e.cfg.Observer.Finished != nil {
				e.cfg.Observer.Finished(batch[k])
			}
		}
		if e.finished == total {
			e.sample()
			if e.cfg.Observer.Progress != nil {
				e.cfg.Observer.Progress(t, e.finished, total)
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
		if e.cfg.Observer.Progress != nil {
			e.cfg.Observer.Progress(t, e.finished, total)
		}
	}
	return nil
}

func (e *engine) valid(h heapEntry) bool {
	j := &e.jobs[h.idx]
	return j.phase == phaseRunning && j.ver == h.ver
}

// arrive puts job idx at the tail of the queue (arrivals come in index order).
func (e *engine) arrive(idx int32) {
	j := &e.jobs[idx]
	j.phase = phasePending
	j.since = j.job.Arrival
	j.segAt = j.job.Arrival
	e.pushPendingTail(idx)
}

func (e *engine) pendingStatus(idx int32) gpusched.JobStatus {
	j := &e.jobs[idx]
	return gpusched.JobStatus{
		Job: &j.job, Iterations: j.done, Executed: j.executed, Attained: j.attained,
		Started: j.started, FirstStart: j.firstStart, Since: j.since, Preemptions: j.preempt,
	}
}

// pushPendingTail appends job idx, which must come after every pending job in arrival order.
func (e *engine) pushPendingTail(idx int32) {
	if e.phi == len(e.pbuf) {
		e.growPending(1)
	}
	e.pbuf[e.phi] = e.pendingStatus(idx)
	e.pidx[e.phi] = idx
	e.phi++
}

// growPending makes room for k more entries after phi.
func (e *engine) growPending(k int) {
	n := e.phi - e.plo
	if e.phi+k <= len(e.pbuf) {
		return
	}
	if e.plo > 0 && n+k <= len(e.pbuf)/2 {
		copy(e.pbuf, e.pbuf[e.plo:e.phi])
		copy(e.pidx, e.pidx[e.plo:e.phi])
		clear(e.pbuf[n:e.phi])
		e.plo, e.phi = 0, n
		return
	}
	size := max(64, 2*(n+k))
	nb := make([]gpusched.JobStatus, size)
	ni := make([]int32, size)
	copy(nb, e.pbuf[e.plo:e.phi])
	copy(ni, e.pidx[e.plo:e.phi])
	e.pbuf, e.pidx = nb, ni
	e.plo, e.phi = 0, n
}

// removeStarted removes from the queue every pending job whose act is actStart, moving as
// few entries as possible.
func (e *engine) removeStarted(first, last int) {
	// first and last are the lowest and highest queue positions removed.
	if last-e.plo <= e.phi-first {
		// Compact towards the tail: entries before last move right.
		w := last
		for r := last; r >= e.plo; r-- {
			if e.jobs[e.pidx[r]].act == actStart {
				continue
			}
			e.pbuf[w], e.pidx[w] = e.pbuf[r], e.pidx[r]
			w--
		}
		clear(e.pbuf[e.plo : w+1])
		e.plo = w + 1
		return
	}
	w := first
	for r := first; r < e.phi; r++ {
		if e.jobs[e.pidx[r]].act == actStart {
			continue
		}
		e.pbuf[w], e.pidx[w] = e.pbuf[r], e.pidx[r]
		w++
	}
	clear(e.pbuf[w:e.phi])
	e.phi = w
}

// insertPending merges the jobs of ins (ascending indices) into the queue in arrival order.
func (e *engine) insertPending(ins []int32) {
	k := len(ins)
	e.growPending(k)
	i, w := e.phi-1, e.phi+k-1
	for j := k - 1; j >= 0; w-- {
		if i >= e.plo && e.pidx[i] > ins[j] {
			e.pbuf[w], e.pidx[w] = e.pbuf[i], e.pidx[i]
			i--
		} else {
			e.pbuf[w], e.pidx[w] = e.pendingStatus(ins[j]), ins[j]
			j--
		}
	}
	e.phi += k
}

// pendingPos returns the queue position of pending job idx.
func (e *engine) pendingPos(idx int32) int {
	p, ok := slices.BinarySearch(e.pidx[e.plo:e.phi], idx)
	if !ok {
		panic(fmt.Sprintf("sim: pending job %d not in queue", idx))
	}
	return e.plo + p
}

// complete ends job idx at the current time.
func (e *engine) complete(idx int32) {
	j := &e.jobs[idx]
	t := e.now
	j.settle(t)
	if rest := j.iters - j.done; rest > 0 {
		j.bytes += rest * j.xbytes
	}
	j.done = j.iters
	e.closeSegment(idx)
	e.unlink(idx)
	e.busy -= j.job.GPUs
	j.phase = phaseDone
	j.finish = t
	j.gpus = nil
	e.finished++
	if e.forget != nil {
		e.forget.Forget(&j.job)
	}
	e.completed = append(e.completed, idx)
	e.records = append(e.records, e.record(idx))
}

// link adds job idx to the links of its placement and marks the other jobs there dirty.
func (e *engine) link(idx int32) {
	j := &e.jobs[idx]
	j.links = j.links[:0]
	for _, l := range e.c.Links(j.gpus) {
		id := int32(int(l.Kind)*e.linkStride + l.Index)
		j.links = append(j.links, id)
		for _, o := range e.linkJobs[id] {
			e.markDirty(o)
		}
		e.linkJobs[id] = append(e.linkJobs[id], idx)
	}
	e.markDirty(idx)
}

// unlink removes job idx from its links and marks the other jobs there dirty.
func (e *engine) unlink(idx int32) {
	j := &e.jobs[idx]
	for _, id := range j.links {
		list := e.linkJobs[id]
		for k, o := range list {
			if o == idx {
				list = slices.Delete(list, k, k+1)
				break
			}
		}
		e.linkJobs[id] = list
		for _, o := range list {
			e.markDirty(o)
		}
	}
	j.links = j.links[:0]
}

func (e *engine) markDirty(idx int32) {
	if j := &e.jobs[idx]; !j.dirty {
		j.dirty = true
		e.dirty = append(e.dirty, idx)
	}
}

// recompute gives every dirty running job its step cost under the current link loads and a
// fresh completion event.
func (e *engine) recompute() error {
	for _, idx := range e.dirty {
		j := &e.jobs[idx]
		j.dirty = false
		if j.phase != phaseRunning {
			continue
		}
		j.settle(e.now)
		var load topology.LinkLoad
		if len(j.links) > 0 {
			clear(e.load)
			for _, id := range j.links {
				if k := len(e.linkJobs[id]) - 1; k > 0 {
					e.load[e.linkOf[id]] = float64(k)
				}
			}
			if len(e.load) > 0 {
				load = e.load
			}
		}
		sc, err := e.cost.StepCost(&j.job, e.c, j.gpus, load)
		if err != nil {
			return fmt.Errorf("%w: job %q on GPUs %v at t=%g s (scheduler %s): %w",
				ErrCost, j.job.ID, topology.SetOf(j.gpus...), e.now, e.name, err)
		}
		if !(sc.Time > 0) || math.IsInf(sc.Time, 0) || !(sc.CrossServerBytes >= 0) || math.IsInf(sc.CrossServerBytes, 0) {
			return fmt.Errorf("%w: job %q on GPUs %v at t=%g s: step time %v s and %v cross-server bytes (need a finite time > 0 and finite bytes >= 0)",
				ErrCost, j.job.ID, topology.SetOf(j.gpus...), e.now, sc.Time, sc.CrossServerBytes)
		}
		j.step, j.xbytes = sc.Time, sc.CrossServerBytes
		j.ver++
		fin := max(e.now, j.restoreEnd) + (j.iters-j.done)*j.step
		e.heap.push(heapEntry{t: fin, idx: idx, ver: j.ver})
	}
	e.dirty = e.dirty[:0]
	return nil
}

// buildView fills e.view for the current time: pending statuses are kept up to date
// incrementally; running statuses change with time and are refreshed here.
func (e *engine) buildView() {
	v := &e.view
	v.Now = e.now
	v.Pending = e.pbuf[e.plo:e.phi]
	v.Running = v.Running[:0]
	for _, idx := range e.running {
		j := &e.jobs[idx]
		done, ex, att, _ := j.progressAt(e.now)
		v.Running = append(v.Running, gpusched.JobStatus{
			Job: &j.job, GPUs: j.gpus, Iterations: done, Executed: ex, Attained: att,
			Started: true, FirstStart: j.firstStart, Since: j.since, Preemptions: j.preempt,
		})
	}
}

// schedule asks the scheduler for a decision at the current time, validates it and carries
// it out.
func (e *engine) schedule() error {
	e.buildView()
	if e.cfg.ValidateViews {
		if err := e.view.Validate(); err != nil {
			return fmt.Errorf("sim: internal error: view at t=%g s: %w", e.now, err)
		}
	}
	e.events++
	d, err := e.cfg.Scheduler.Schedule(e.view)
	if err != nil {
		return fmt.Errorf("%w: scheduler %s at t=%g s: %w", ErrScheduler, e.name, e.now, err)
	}
	bad, ok := e.check(d)
	if e.cfg.ValidateViews {
		if verr := d.Validate(e.view); (verr == nil) != ok {
			return fmt.Errorf("sim: internal error: validators disagree at t=%g s (fast: %v, Decision.Validate: %v)", e.now, ok, verr)
		}
	}
	if !ok {
		verr := d.Validate(e.view)
		if verr == nil {
			verr = errors.New("rejected by the simulator") // unreachable while the validators agree
		}
		e.resetListed(d)
		return fmt.Errorf("%w: scheduler %s at t=%g s: job %q: %w", ErrInvalidDecision, e.name, e.now, bad, verr)
	}
	if e.cfg.Observer.Scheduled != nil {
		e.cfg.Observer.Scheduled(&e.view, d)
	}
	e.apply(d)
	if d.WakeAt > e.now {
		e.wake = d.WakeAt
	} else {
		e.wake = 0
	}
	return nil
}

// resetListed clears the acts that check set for a rejected decision.
func (e *engine) resetListed(d gpusched.Decision) {
	for _, a := range d.Run {
		if idx, ok := e.ids[a.Job]; ok {
			e.jobs[idx].act = actNone
		}
	}
}

// check validates d against the current state in O(GPUs in d), stamping each listed job
// with the epoch, its action and the offset of its copied placement in e.scratch. It
// returns false and the offending job's id when d is invalid.
func (e *engine) check(d gpusched.Decision) (gpusched.JobID, bool) {
	e.epoch++
	if e.epoch == 0 { // wrapped: forget old stamps
		clear(e.gpuStamp)
		for i := range e.jobs {
			e.jobs[i].listed = 0
		}
		e.epoch = 1
	}
	e.scratch = e.scratch[:0]
	e.listedIdx = e.listedIdx[:0]
	n := topology.GPUID(len(e.gpuStamp))
	if math.IsNaN(d.WakeAt) {
		return "", false
	}
	e.hint = 0
	for _, a := range d.Run {
		idx, ok := e.find(a.Job)
		if !ok {
			return a.Job, false
		}
		j := &e.jobs[idx]
		if (j.phase != phasePending && j.phase != phaseRunning) || j.listed == e.epoch || len(a.GPUs) != int(j.ngpus) {
			return a.Job, false
		}
		j.listed = e.epoch
		off := len(e.scratch)
		constrained := j.job.Constrained()
		for _, g := range a.GPUs {
			if g < 0 || g >= n || e.gpuStamp[g] == e.epoch {
				return a.Job, false
			}
			if constrained && !j.job.Eligible(e.c.GPU(g)) {
				return a.Job, false
			}
			e.gpuStamp[g] = e.epoch
		}
		e.scratch = append(e.scratch, a.GPUs...)
		j.asgOff = int32(off)
		switch {
		case j.phase == phasePending:
			j.act = actStart
		case slices.Equal(j.gpus, a.GPUs):
			j.act = actKeep
		default:
			j.act = actMigrate
		}
		e.listedIdx = append(e.listedIdx, idx)
	}
	return "", true
}

// find returns the index of the job with the given id. Schedulers usually list jobs in the
// view's order (running, then pending), so find first tries the job after the one it found
// last (e.hint is a position in running ++ pending) and only then the id map.
func (e *engine) find(id gpusched.JobID) (int32, bool) {
	nr, np := len(e.running), e.phi-e.plo
	if h := e.hint; h < nr+np {
		var idx int32
		if h < nr {
			idx = e.running[h]
		} else {
			idx = e.pidx[e.plo+h-nr]
		}
		if e.jobs[idx].id == id {
			e.hint = h + 1
			return idx, true
		}
	}
	idx, ok := e.ids[id]
	if !ok {
		return 0, false
	}
	switch e.jobs[idx].phase {
	case phaseRunning:
		p, _ := slices.BinarySearch(e.running, idx)
		e.hint = p + 1
	case phasePending:
		p, _ := slices.BinarySearch(e.pidx[e.plo:e.phi], idx)
		e.hint = nr + p + 1
	}
	return idx, true
}

// apply carries out a decision that passed check.
func (e *engine) apply(d gpusched.Decision) {
	t := e.now
	// Preempt running jobs the decision leaves out; unplace migrating ones.
	e.preempted = e.preempted[:0]
	for _, idx := range e.running {
		j := &e.jobs[idx]
		if j.listed == e.epoch {
			if j.act == actMigrate {
				j.settle(t)
				e.closeSegment(idx)
				e.unlink(idx)
			}
			continue
		}
		j.settle(t)
		e.closeSegment(idx)
		e.unlink(idx)
		e.busy -= j.job.GPUs
		j.phase = phasePending
		j.gpus = j.gpus[:0]
		j.step = 0
		j.since = t
		j.preempt++
		j.ver++
		e.preempted = append(e.preempted, idx)
	}
	if len(e.preempted) > 0 {
		e.running = slices.DeleteFunc(e.running, func(i int32) bool { return e.jobs[i].phase != phaseRunning })
	}
	// Start and migrate.
	e.startIdx = e.startIdx[:0]
	first, last := -1, -1
	for _, idx := range e.listedIdx {
		j := &e.jobs[idx]
		switch j.act {
		case actStart:
			p := e.pendingPos(idx)
			if first < 0 || p < first {
				first = p
			}
			last = max(last, p)
			j.settle(t)
			e.place(idx)
			j.phase = phaseRunning
			e.busy += j.job.GPUs
			if j.started {
				j.restoreEnd = t + e.restore
			} else {
				j.started = true
				j.firstStart = t
			}
			j.since = t
			e.startIdx = append(e.startIdx, idx)
		case actMigrate:
			e.place(idx)
			j.restoreEnd = t + e.restore
			j.migrate++
		}
	}
	if len(e.startIdx) > 0 {
		e.removeStarted(first, last)
		slices.Sort(e.startIdx)
		e.running = mergeSorted(e.running, e.startIdx)
	}
	for _, idx := range e.listedIdx {
		e.jobs[idx].act = actNone
	}
	if len(e.preempted) > 0 {
		e.insertPending(e.preempted)
	}
}

// place gives job idx the placement check copied for it and links it.
func (e *engine) place(idx int32) {
	j := &e.jobs[idx]
	j.gpus = append(j.gpus[:0], e.scratch[j.asgOff:int(j.asgOff)+j.job.GPUs]...)
	j.placedAt = e.now
	j.maxSpan = max(j.maxSpan, e.c.ServersSpanned(j.gpus))
	e.link(idx)
}

func (e *engine) closeSegment(idx int32) {
	if !e.cfg.RecordSegments {
		return
	}
	j := &e.jobs[idx]
	e.segments = append(e.segments, Segment{
		Job: j.job.ID, Start: j.placedAt, End: e.now,
		RestoreEnd: min(max(j.restoreEnd, j.placedAt), e.now),
		GPUs:       slices.Clone(j.gpus),
	})
}

// mergeSorted merges the ascending b into the ascending a.
func mergeSorted(a, b []int32) []int32 {
	n := len(a)
	a = append(a, b...)
	i, j, w := n-1, len(b)-1, len(a)-1
	for j >= 0 {
		if i >= 0 && a[i] > b[j] {
			a[w] = a[i]
			i--
		} else {
			a[w] = b[j]
			j--
		}
		w--
	}
	return a
}

// sample records the state after the current event in the timeline.
func (e *engine) sample() {
	s := Sample{Time: e.now, BusyGPUs: e.busy, Queued: e.phi - e.plo, Running: len(e.running)}
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
