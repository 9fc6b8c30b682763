// This file holds the SJF-BCO policy (SJFBCO): its options, its queue, the GPUs' busy times it
// plans from, and how it follows its plans. The offline planner is in sjfbco_plan.go, its
// placement rules in sjfbco_place.go, its per-try state in sjfbco_state.go and its memo of step
// times in sjfbco_memo.go.

package policy

import (
	"fmt"
	"math"
	"slices"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// SJFBCOOptions configure SJF-BCO.
type SJFBCOOptions struct {
	BCOPlanOptions
	// Iterations returns the number of iterations SJF-BCO assumes a job runs (the paper assumes
	// the true count is known: pass it to reproduce the paper's setting, or a predictor).
	// Called once per job. Default: 1000 for every job.
	Iterations func(j *gpusched.Job) float64
	// Batch selects the paper's offline algorithm: all waiting jobs are planned at once and the
	// plan is followed (a job starts on its planned GPUs once every job planned before it on
	// those GPUs has started and the GPUs are free); jobs arriving meanwhile form the next batch,
	// planned when every job of the current one has started. Default false: online re-planning
	// (see SJFBCO).
	Batch bool
	// Window bounds the waiting jobs that the online mode plans at each call, smallest demand
	// first. Default 32.
	Window int
	// Replan, in the online mode, is the least time in seconds between two plans. 0 (the
	// default) plans at every call where a waiting job could start. With Replan > 0, a call
	// less than Replan after the last plan follows that plan instead of planning afresh: a job
	// of it that still waits starts on its planned GPUs once they are all free and no job
	// planned before it on any of them still waits (the batch mode's rule); jobs that arrived
	// since wait for the next plan, at most Replan later. The planner is SJF-BCO's cost per
	// call (1-2 ms for a window of 32 on 2,048 GPUs), so this bounds its cost per simulated
	// second instead of per event, at the price of starts delayed by up to Replan.
	Replan float64
	// Order, in the online mode, chooses Backfill (default: every job the plan starts now
	// starts) or Strict (only the leading jobs of the plan, in planning order, that start now).
	Order Order
	// Name, when set, replaces "sjf-bco" in reports.
	Name string
}

// sjfbcoPolicy is the SJF-BCO scheduler (Smallest Job First with Balanced Contention and Overhead;
// Yu, Ji, Rajan, Liu, MobiHoc 2022, arXiv 2207.07817). It never preempts.
//
// Batch mode is the paper's offline algorithm (PlanSJFBCO) applied to batches of jobs: it fits
// the paper's setting, where all jobs are present at time 0.
//
// The online mode (the default) adapts it to arrivals by re-planning: at every call where a
// waiting job could start (enough GPUs are free for the smallest one), SJF-BCO plans the
// Window smallest waiting jobs with PlanSJFBCO (kappa loop and theta bisection included, with
// EarliestFit so that no job is planned behind a busy server while another could run it now),
// every GPU of a running job being busy until the job's estimated end (Iterations minus
// iterations done, at least one, times its time per iteration on its current GPUs under the
// current load), and starts every job whose planned start is now. The others wait for the next
// call; the plan is made afresh then. Like the paper's algorithm, it orders by GPU demand, so
// under a steady stream of small jobs a large one can wait long (there is no aging).
//
// SJFBCO caches each job's iteration estimate and, in batch mode, the current plan: it is not
// safe for concurrent use.
type sjfbcoPolicy struct {
	gate     gate
	opt      SJFBCOOptions
	backfill bool
	iters    map[gpusched.JobID]float64
	last     *BCOPlan
	// online mode: the waiting jobs by GPU demand, kept from the host's deltas, and the step
	// costs of running jobs on their placement and link load
	sync  deltaSync
	queue bcoQueue
	steps map[gpusched.JobID]*bcoStep
	// busyUntil's buffers: the GPUs' times, the flows per link (linkSlot), the running jobs'
	// steps
	busy                 []float64
	total                []int
	running, prevRunning []*bcoStep
	later                []int
	costs                *topology.Cluster // the cluster steps were computed on
	memo                 stepMemo
	// planner is reused by every plan for its buffers
	planner bcoPlanner
	// online mode with Replan > 0: the last plan, when it was made and on which cluster
	plan   []BCOPlacement
	planAt float64
	planOn *topology.Cluster
	// batch mode
	batch []BCOPlacement
	done  []bool
	// checkBatch: batch was restored from saved state, which holds ids and GPUs only, and is
	// checked against the jobs of the next view before it is followed.
	checkBatch bool
	planned    *topology.Cluster // the cluster the batch was planned on
}

// newSJFBCO returns an SJF-BCO scheduler.
func newSJFBCO(opt SJFBCOOptions) (*sjfbcoPolicy, error) {
	if err := opt.BCOPlanOptions.defaults(); err != nil {
		return nil, err
	}
	if opt.Window == 0 {
		opt.Window = 32
	}
	if opt.Window < 1 {
		return nil, fmt.Errorf("%w: sjf-bco: Window %d", ErrInvalidOptions, opt.Window)
	}
	if opt.Order > Backfill {
		return nil, fmt.Errorf("%w: sjf-bco: unknown Order %d", ErrInvalidOptions, opt.Order)
	}
	if !finiteNonNeg(opt.Replan) {
		return nil, fmt.Errorf("%w: sjf-bco: Replan %v", ErrInvalidOptions, opt.Replan)
	}
	s := &sjfbcoPolicy{gate: gate{cost: opt.Cost}, opt: opt, backfill: opt.Order != Strict, iters: map[gpusched.JobID]float64{}}
	// A job estimated at NaN, infinite or negative iterations is rejected alone; its estimate
	// is fixed at admission (Iterations is still asked once per job).
	s.gate.admit = func(j *gpusched.Job, _ *topology.Cluster) error {
		_, err := s.estimate(j)
		return err
	}
	return s, nil
}

// String returns "sjf-bco" (or SJFBCOOptions.Name).
func (s *sjfbcoPolicy) String() string { return name(s.opt.Name, "sjf-bco") }

// LastPlan returns the plan SJF-BCO made last (nil before any).
func (s *sjfbcoPolicy) LastPlan() *BCOPlan { return s.last }

func (s *sjfbcoPolicy) estimate(j *gpusched.Job) (float64, error) {
	if n, ok := s.iters[j.ID]; ok {
		return n, nil
	}
	n := float64(defaultIterations)
	if s.opt.Iterations != nil {
		n = s.opt.Iterations(j)
	}
	if !finiteNonNeg(n) {
		return 0, fmt.Errorf("%w: %w: sjf-bco: job %q is estimated at %v iterations", gpusched.ErrInvalidJob, ErrInvalidOptions, j.ID, n)
	}
	s.iters[j.ID] = n
	return n, nil
}

// Schedule keeps every running job and starts the jobs the plan starts now.
func (s *sjfbcoPolicy) Schedule(v gpusched.View) (gpusched.Decision, error) {
	if err := s.ready(); err != nil {
		return gpusched.Decision{}, err
	}
	return s.gate.decide(v, s.schedule)
}

func (s *sjfbcoPolicy) schedule(vp *gpusched.View) (gpusched.Decision, error) {
	v := *vp
	if s.opt.Batch {
		return s.scheduleBatch(&v)
	}
	s.follow(&v)
	run := keepsFor(&v)
	if len(v.Pending) == 0 {
		return gpusched.Decision{Run: run, KeepOthers: v.AcceptsKeepOthers}, nil
	}
	free := v.Free()
	if s.opt.Replan > 0 && s.plan != nil && s.planOn == v.Cluster && v.Now < s.planAt+s.opt.Replan {
		return s.replanWake(gpusched.Decision{Run: s.followPlan(run, free), KeepOthers: v.AcceptsKeepOthers}, free, v.Now), nil
	}
	waiting := s.queue.smallest(s.opt.Window)
	if waiting[0].GPUs > free.Len() {
		return gpusched.Decision{Run: run, KeepOthers: v.AcceptsKeepOthers}, nil
	}
	jobs := make([]BCOJob, len(waiting))
	for i, j := range waiting {
		n, err := s.estimate(j)
		if err != nil {
			return gpusched.Decision{}, err
		}
		jobs[i] = BCOJob{Job: j, Iterations: n}
	}
	busy, err := s.busyUntil(&v)
	if err != nil {
		return gpusched.Decision{}, err
	}
	popt := s.opt.BCOPlanOptions
	popt.EarliestFit = true
	popt.memo = &s.memo
	plan, err := planWith(&s.planner, v.Cluster, jobs, busy, popt)
	if err != nil {
		return gpusched.Decision{}, err
	}
	s.last = plan
	if s.opt.Replan > 0 {
		s.plan, s.planAt, s.planOn = plan.Jobs, v.Now, v.Cluster
	}
	eps := 1e-9 * max(1, math.Abs(v.Now))
	for _, pl := range plan.Jobs {
		if pl.Start > v.Now+eps || checkPlacement(pl.Job, pl.GPUs, free) != nil {
			if !s.backfill {
				break
			}
			continue
		}
		for _, g := range pl.GPUs {
			free.Remove(g)
		}
		run = append(run, gpusched.Assignment{Job: pl.Job.ID, GPUs: slices.Clone(pl.GPUs)})
		s.queue.started(pl.Job.ID)
		s.memo.drop(pl.Job.ID)
	}
	return s.replanWake(gpusched.Decision{Run: run, KeepOthers: v.AcceptsKeepOthers}, free, v.Now), nil
}

// replanWake asks, with Replan > 0, to be called when the next plan is due if a waiting job
// fits in the GPUs the decision leaves free, so that a job that arrived after the last plan
// does not wait for another event when it could start (a job that does not fit waits for a
// completion, which calls the scheduler anyway).
func (s *sjfbcoPolicy) replanWake(d gpusched.Decision, free topology.GPUSet, now float64) gpusched.Decision {
	if s.opt.Replan > 0 && s.queue.live > 0 && s.queue.smallest(1)[0].GPUs <= free.Len() {
		d.WakeAt = minWake(d.WakeAt, s.planAt+s.opt.Replan, now)
	}
	return d
}

// followPlan starts the jobs of the last plan that still wait and whose planned GPUs are all
// free, in planning order, passing over a job any of whose GPUs a job planned before it and
// still waiting needs (the batch mode's rule).
func (s *sjfbcoPolicy) followPlan(run []gpusched.Assignment, free topology.GPUSet) []gpusched.Assignment {
	var blocked map[topology.GPUID]bool
	for _, pl := range s.plan {
		w, waits := s.queue.byID[pl.Job.ID]
		if !waits || w.gone {
			continue
		}
		ok := true
		for _, g := range pl.GPUs {
			if blocked[g] || !free.Contains(g) {
				ok = false
				break
			}
		}
		if ok {
			for _, g := range pl.GPUs {
				free.Remove(g)
			}
			run = append(run, gpusched.Assignment{Job: pl.Job.ID, GPUs: slices.Clone(pl.GPUs)})
			s.queue.started(pl.Job.ID)
			s.memo.drop(pl.Job.ID)
			continue
		}
		if blocked == nil {
			blocked = map[topology.GPUID]bool{}
		}
		for _, g := range pl.GPUs {
			blocked[g] = true
		}
	}
	return run
}

// follow brings the online mode's queue and caches up to date with the view: from the host's
// delta when it continues the last view, the waiting jobs are in arrival order and the queue
// then holds as many jobs as the view's (the jobs started by the last decision having
// started); otherwise by a rescan of the whole view.
func (s *sjfbcoPolicy) follow(v *gpusched.View) {
	if s.steps == nil || s.costs != v.Cluster {
		s.steps = map[gpusched.JobID]*bcoStep{}
		s.running, s.prevRunning = nil, nil
		s.costs = v.Cluster
		s.memo = newStepMemo(v.Cluster)
	}
	d, ok := s.sync.next(v)
	if ok && d.ArrivalOrder {
		for _, id := range d.Left {
			s.queue.remove(id)
			delete(s.iters, id)
			delete(s.steps, id)
			s.memo.drop(id)
		}
		for _, st := range d.Arrived {
			if st.GPUs == nil {
				s.queue.add(st.Job)
			}
		}
		if s.queue.live == len(v.Pending) {
			return
		}
	}
	forget(s.iters, v)
	forget(s.steps, v)
	forget(s.memo.jobs, v)
	s.queue.rebuild(pendingByArrival(v))
}

// bcoQueue holds SJF-BCO's waiting jobs by GPU demand, each demand's jobs in arrival order,
// so that the Window smallest are found without sorting the queue: jobs that leave or start
// are marked and skipped (and dropped once they reach the head of their list).
type bcoQueue struct {
	demands []int        // ascending
	lists   [][]*bcoWait // lists[i]: the jobs of demand demands[i]
	byID    map[gpusched.JobID]*bcoWait
	live    int // jobs waiting
	out     []*gpusched.Job
}

type bcoWait struct {
	job  *gpusched.Job
	gone bool
}

func (q *bcoQueue) rebuild(order []*gpusched.JobStatus) {
	q.demands, q.lists, q.live = q.demands[:0], q.lists[:0], 0
	q.byID = make(map[gpusched.JobID]*bcoWait, len(order))
	for _, st := range order {
		q.add(st.Job)
	}
}

func (q *bcoQueue) add(j *gpusched.Job) {
	if q.byID == nil {
		q.byID = map[gpusched.JobID]*bcoWait{}
	}
	if old, ok := q.byID[j.ID]; ok && !old.gone {
		old.gone = true
		q.live--
	}
	w := &bcoWait{job: j}
	q.byID[j.ID] = w
	q.live++
	i, found := slices.BinarySearch(q.demands, j.GPUs)
	if !found {
		q.demands = slices.Insert(q.demands, i, j.GPUs)
		q.lists = slices.Insert(q.lists, i, nil)
	}
	q.lists[i] = append(q.lists[i], w)
}

// remove marks job id as gone (it left).
func (q *bcoQueue) remove(id gpusched.JobID) {
	if w, ok := q.byID[id]; ok {
		if !w.gone {
			w.gone = true
			q.live--
		}
		delete(q.byID, id)
	}
}

// started marks job id as no longer waiting.
func (q *bcoQueue) started(id gpusched.JobID) { q.remove(id) }

// smallest returns up to n waiting jobs, smallest demand first, each demand's in arrival
// order (the order of a stable sort by demand of the queue in arrival order). The slice is
// reused by the next call.
func (q *bcoQueue) smallest(n int) []*gpusched.Job {
	q.out = q.out[:0]
	for i := 0; i < len(q.lists) && len(q.out) < n; i++ {
		l := q.lists[i]
		for len(l) > 0 && l[0].gone { // drop the gone head
			l[0] = nil
			l = l[1:]
		}
		q.lists[i] = l
		dead := 0
		for _, w := range l {
			if len(q.out) == n {
				break
			}
			if w.gone {
				dead++
				continue
			}
			q.out = append(q.out, w.job)
		}
		if dead > 64 && dead > len(l)/2 { // many marked jobs behind the head: compact
			q.lists[i] = slices.DeleteFunc(l, func(w *bcoWait) bool { return w.gone })
		}
	}
	return q.out
}

// bcoStep is the step cost SJF-BCO last computed for a running job, with the placement and
// link load it was computed for. The fields busyUntil reads at every call of a job whose end
// needs no link load come first, in 64 bytes (a first touch of one or two cache lines).
type bcoStep struct {
	// job is the job; time its time per iteration (valid: computed); iters its estimated
	// iterations (SJFBCO.estimate) once known (itersOK); pos its index in the view's running
	// jobs at the last call.
	job     *gpusched.Job
	time    float64
	iters   float64
	pos     int32
	valid   bool
	itersOK bool
	noLinks bool // no shared link: the time needs no load
	// n is len(gpus) when inline holds them (a job of up to len(inline) GPUs), -1 otherwise,
	// so that the comparison of the placement with the view's at every call reads no other
	// object.
	n      int8
	inline [8]topology.GPUID
	gpus   []topology.GPUID
	links  []topology.Link
	// load[k]: the other jobs' flows on links[k] when time was computed.
	load []int
}

// sameGPUs reports whether the step was computed for placement gpus.
func (sc *bcoStep) sameGPUs(gpus []topology.GPUID) bool {
	if sc.n >= 0 {
		return int(sc.n) == len(gpus) && slices.Equal(sc.inline[:sc.n], gpus)
	}
	return slices.Equal(sc.gpus, gpus)
}

// busyUntil estimates when each GPU frees: now for free GPUs, the estimated end of the job on it
// otherwise. The slice is reused by the next call.
func (s *sjfbcoPolicy) busyUntil(v *gpusched.View) ([]float64, error) {
	c := v.Cluster
	busy := resize(s.busy, c.NumGPUs())
	s.busy = busy
	for i := range busy {
		busy[i] = v.Now
	}
	// Unavailable GPUs are planned as busy for good (a finite horizon keeps the bisection's
	// arithmetic finite): no job is planned to start on them.
	v.Unavailable.Range(func(g topology.GPUID) bool {
		if int(g) >= 0 && int(g) < len(busy) {
			busy[g] = v.Now + unavailableHorizon
		}
		return true
	})
	// The flows on every link, counted densely (see linkSlot).
	ns := c.NumServers()
	total := resize(s.total, 2*ns+c.NumRacks())
	s.total = total
	clear(total)
	// The running jobs keep their order from one view to the next (the host appends the jobs
	// it starts): the last call's steps are matched in order, the map serving the others.
	prev := s.running
	steps := resize(s.prevRunning, len(v.Running))
	s.running, s.prevRunning = steps, prev
	// Jobs without shared links and with a known time are done in this first pass; the
	// others (later, in view order) once the flows on every link are counted.
	next, later := 0, s.later[:0]
	for i := range v.Running {
		st := &v.Running[i]
		var sc *bcoStep
		if s.steps != nil && next < len(prev) && prev[next].job == st.Job {
			sc = prev[next]
			next++
		} else if sc = s.steps[st.Job.ID]; sc != nil && int(sc.pos) < len(prev) && prev[sc.pos] == sc {
			next = int(sc.pos) + 1
		}
		if sc == nil || !sc.sameGPUs(st.GPUs) {
			sc = &bcoStep{links: c.Links(st.GPUs), job: st.Job, n: -1}
			sc.noLinks = len(sc.links) == 0
			if len(st.GPUs) <= len(sc.inline) {
				sc.gpus = append(sc.inline[:0:len(st.GPUs)], st.GPUs...)
				sc.n = int8(len(st.GPUs))
			} else {
				sc.gpus = slices.Clone(st.GPUs)
			}
		}
		sc.pos = int32(i)
		steps[i] = sc
		if sc.noLinks && sc.valid && sc.itersOK {
			// No shared link (no load to wait for) and a known time: its end now.
			s.writeEnd(busy, st, sc, v.Now)
			continue
		}
		for _, l := range sc.links {
			total[linkSlot(l, ns)]++
		}
		later = append(later, i)
	}
	s.later = later
	for _, i := range later {
		st, sc := &v.Running[i], steps[i]
		// The other jobs' flows on this job's links (a cost model reads only those): the
		// cached time holds if they are as when it was computed.
		same := sc.valid
		for k, l := range sc.links {
			n := total[linkSlot(l, ns)] - 1
			if same && sc.load[k] != max(n, 0) {
				same = false
			}
		}
		if !same {
			var load topology.LinkLoad
			sc.load = resize(sc.load, len(sc.links))
			for k, l := range sc.links {
				n := total[linkSlot(l, ns)] - 1
				sc.load[k] = max(n, 0)
				if n > 0 {
					if load == nil {
						load = topology.LinkLoad{}
					}
					load[l] = float64(n)
				}
			}
			cost, err := s.opt.Cost.StepCost(st.Job, c, st.GPUs, load)
			if err != nil {
				sc.valid = false
				return nil, fmt.Errorf("sjf-bco: %w", err)
			}
			sc.time, sc.valid = cost.Time, true
			if s.steps != nil {
				s.steps[st.Job.ID] = sc
			}
		}
		if !sc.itersOK {
			n, err := s.estimate(st.Job)
			if err != nil {
				return nil, err
			}
			sc.iters, sc.itersOK = n, true
		}
		s.writeEnd(busy, st, sc, v.Now)
	}
	return busy, nil
}

// writeEnd marks a running job's GPUs busy until its estimated end.
func (s *sjfbcoPolicy) writeEnd(busy []float64, st *gpusched.JobStatus, sc *bcoStep, now float64) {
	end := now + max(sc.iters-st.Iterations, 1)*sc.time
	for _, g := range st.GPUs {
		if int(g) >= 0 && int(g) < len(busy) {
			busy[g] = end
		}
	}
}

// linkSlot numbers a link of a cluster with ns servers densely: NICs, then fabrics, then
// uplinks.
func linkSlot(l topology.Link, ns int) int {
	switch l.Kind {
	case topology.NICLink:
		return l.Index
	case topology.IntraLink:
		return ns + l.Index
	}
	return 2*ns + l.Index
}

// unavailableHorizon is how long, in seconds, SJF-BCO's planner treats an unavailable GPU as
// busy: longer than any plan (about 31,700 years).
const unavailableHorizon = 1e12

// scheduleBatch follows the current batch plan and plans the next batch when it is all started.
func (s *sjfbcoPolicy) scheduleBatch(v *gpusched.View) (gpusched.Decision, error) {
	if s.planned != nil && s.planned != v.Cluster && !s.planned.Equal(v.Cluster) {
		// The plan's GPU ids belong to the cluster it was made for: plan afresh. (A state
		// saved without its cluster takes the first cluster seen.)
		s.batch, s.done = nil, nil
	}
	s.planned = v.Cluster
	pending := make(map[gpusched.JobID]*gpusched.JobStatus, len(v.Pending))
	for i := range v.Pending {
		pending[v.Pending[i].Job.ID] = &v.Pending[i]
	}
	if s.checkBatch {
		// A restored plan is followed only if every planned job that still waits fits its
		// planned GPUs (their number, distinct, in the cluster, of a kind it may use);
		// otherwise the policy plans afresh.
		s.checkBatch = false
		every := v.Cluster.AllGPUs()
		for _, pl := range s.batch {
			if st, waits := pending[pl.Job.ID]; waits && checkPlacement(st.Job, pl.GPUs, st.Job.EligibleIn(v.Cluster, every)) != nil {
				s.batch, s.done = nil, nil
				break
			}
		}
	}
	// A planned job is done once it no longer waits (it started, or left).
	all := true
	for i, pl := range s.batch {
		_, waits := pending[pl.Job.ID]
		s.done[i] = !waits
		all = all && s.done[i]
	}
	if all && len(pending) > 0 {
		waiting := pendingByArrival(v)
		jobs := make([]BCOJob, len(waiting))
		for i, st := range waiting {
			n, err := s.estimate(st.Job)
			if err != nil {
				return gpusched.Decision{}, err
			}
			jobs[i] = BCOJob{Job: st.Job, Iterations: n}
		}
		busy, err := s.busyUntil(v)
		if err != nil {
			return gpusched.Decision{}, err
		}
		plan, err := PlanSJFBCO(v.Cluster, jobs, busy, s.opt.BCOPlanOptions)
		if err != nil {
			return gpusched.Decision{}, err
		}
		s.last = plan
		s.batch = plan.Jobs
		s.done = make([]bool, len(plan.Jobs))
	}
	forget(s.iters, v)
	run := keepsFor(v)
	free := v.Free()
	// blocked[g]: a job planned on g has not started yet, so later jobs on g must wait.
	blocked := make(map[topology.GPUID]bool)
	for i, pl := range s.batch {
		if s.done[i] {
			continue
		}
		ok := true
		for _, g := range pl.GPUs {
			if blocked[g] || !free.Contains(g) {
				ok = false
			}
		}
		if ok {
			for _, g := range pl.GPUs {
				free.Remove(g)
			}
			run = append(run, gpusched.Assignment{Job: pl.Job.ID, GPUs: slices.Clone(pl.GPUs)})
		}
		for _, g := range pl.GPUs {
			blocked[g] = true
		}
	}
	return gpusched.Decision{Run: run, KeepOthers: v.AcceptsKeepOthers}, nil
}
