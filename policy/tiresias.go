package policy

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/gpusched/gpusched"
)

// DefaultTiresiasThresholds returns the queue thresholds of the Tiresias simulator
// (github.com/SymbioticLab/Tiresias, simulator/jobs.py: num_queue = 3, queue_limit = [3250,
// 7200, 18000], of which a 3-queue run uses the first two; the dlas-gpu schedule compares them
// with executed time x GPUs): a job leaves the first queue after 3250 GPU-seconds of attained
// service and the second after 7200. Each call returns a new slice.
//
// Deprecated: not needed by embedders (TiresiasOptions without thresholds uses them); removed in v0.3.0.
func DefaultTiresiasThresholds() []float64 { return []float64{3250, 7200} }

// Service is what Tiresias counts as a job's attained service.
type Service uint8

const (
	// GPUTime counts GPUs x executed time (JobStatus.Attained): the two-dimensional LAS of
	// the simulator's dlas-gpu schedule. The default.
	GPUTime Service = iota
	// PlainTime counts executed time alone (JobStatus.Executed), whatever the job's GPU
	// count: LAS on time, the simulator's dlas schedule. Thresholds are then in seconds.
	PlainTime
)

// TiresiasOptions configure Tiresias.
type TiresiasOptions struct {
	Options
	// Service selects the attained service the queues are defined on: GPUTime (default) or
	// PlainTime.
	Service Service
	// Thresholds are the queue limits in GPU-seconds of attained service, strictly increasing:
	// K thresholds make K+1 queues. Default: DefaultTiresiasThresholds().
	Thresholds []float64
	// PromoteKnob enables starvation promotion: a job in a lower queue that has waited at least
	// PromoteKnob times its executed time (both counted since it last entered the first queue,
	// waiting from its first run after that) returns to the first queue with its attained
	// service counted afresh. Default 0: off, as in the simulator's dlas-gpu schedule (its
	// dlas-gpu-N variants set the knob to N).
	PromoteKnob float64
	// MinRunTime, when positive, is the least time in seconds a job runs after it starts or
	// resumes before it may be preempted. Default 0: none (see Tiresias on thrashing).
	MinRunTime float64
	// Gittins orders the jobs of each queue by their Gittins index instead of first come,
	// first served: 2D-Gittins, the simulator's dlas-gpu-gittins schedule (see Tiresias).
	Gittins bool
	// GittinsDelta is the quantum Δ of the Gittins index, in service units. Default: the
	// first threshold (the simulator's gittins_delta, 3250, equals its first queue limit).
	GittinsDelta float64
	// GittinsSample, optional, is a prior sample of jobs' total service (service units) that
	// the distribution starts from; finished jobs are added to it as they leave.
	GittinsSample []float64
}

// tiresiasPolicy is the Discretized Two-Dimensional Least-Attained-Service scheduler (2D-LAS) of
// Gu et al., "Tiresias: A GPU Cluster Manager for Distributed Deep Learning", NSDI 2019, in the
// form of its public simulator's dlas-gpu schedule.
//
// A job's attained service is GPUs x executed time (JobStatus.Attained). Jobs sit in K+1
// priority queues: a job enters queue 0 on arrival and moves to queue k once its attained
// service (since it last entered queue 0) reaches Thresholds[k-1]. Queues are served in order;
// within a queue jobs are served first-come-first-served by the time they entered it, except
// that running jobs go before waiting ones (the simulator moves waiting jobs behind running ones
// after every round), so a job is preempted only for a job of a higher-priority queue. At every
// call the jobs are taken in this order while their GPU demands fit the cluster, passing over
// those that do not (backfilling, as the simulator does; Options.Order = Strict stops starting
// waiting jobs at the first that does not fit); chosen running jobs keep their GPUs, chosen
// waiting jobs are placed by the Placer, other running jobs are preempted.
//
// 2D-Gittins (Options.Gittins, the simulator's dlas-gpu-gittins schedule): the queues are the
// same, but within a queue jobs are served by their Gittins index over the service they
// received since they last entered queue 0, highest first, ties by arrival (running jobs do
// not go first). The index is computed from the distribution of the service that finished
// jobs received (Tiresias implements gpusched.CompletionObserver to learn it; a prior sample
// may be given), for a fixed quantum Δ (GittinsDelta). It is the textbook index, P(S - a <= Δ
// | S > a) / E[min(S - a, Δ) | S > a], evaluated at the job's service; the simulator
// (run_sim.py, cal_r_gittins_index) tabulates it at the sample points, rounds it, and counts
// the finished jobs' whole size S instead of S - a in the expectation. Before any job has
// finished, every index is 0 and each queue is served in arrival order.
//
// Starvation: with PromoteKnob > 0, a job in a lower queue whose waiting time reaches
// PromoteKnob x its executed time goes back to queue 0 with its queue service reset.
//
// Thrashing: the discretisation is the rule (a job falls one queue only after a threshold's
// worth of service and rises only by waiting PromoteKnob times its executed time), and running
// jobs go first within a queue, so two jobs of one queue never preempt each other.
// MinRunTime > 0 adds a lease: a job that started or resumed less than MinRunTime ago is not
// preempted.
//
// Adaptations: the simulator counts GPUs and ignores placement; here chosen waiting jobs are
// placed by the Placer (gpusched.Pack by default), and a running job whose preemption would free GPUs
// that no starting job takes keeps running. The scheduler asks to be woken (Decision.WakeAt) at
// the next demotion of a running job, the next promotion of a waiting job and the end of a
// MinRunTime lease, whenever a job is waiting.
//
// Tiresias keeps each job's queue between calls: it must see every event of one host in time
// order and is not safe for concurrent use.
type tiresiasPolicy struct {
	gate     gate
	opt      TiresiasOptions
	place    gpusched.Placer
	backfill bool
	jobs     map[gpusched.JobID]*tirJob
	byPos    posDense[tirRun] // running jobs' states by their place among the running jobs
	leftJobs []*gpusched.Job  // the jobs that left since the last call (their last Job)
	sc       scratch
	lazy     lazyRun[tirKeyed]
	// the waiting jobs in priority order, kept from the host's deltas (PromoteKnob 0)
	follow waitFollow
	wait   *sortedList[tirWait]
	pool   statusPool
	// per-call buffers of the incremental engine
	keyBuf  []tirKeyed
	waitBuf []*tirJob
	ssBuf   []*tirJob // the states in the merged order, for wake (reused)
	// with Options.Gittins: the job-size distribution
	gittins *gittins
}

// tirWait is a waiting job's place in Tiresias' order: its queue, then when it entered it,
// then arrival and id.
type tirWait struct {
	job     *gpusched.Job
	queue   int
	entered float64
	// s is the job's state (Tiresias.jobs[job.ID]: an entry is put in the order with its
	// job's state and taken out before the state leaves jobs, or the order is rebuilt), which
	// spares the merge a map lookup per waiting job; not part of the order.
	s *tirJob
}

func cmpTirWait(a, b tirWait) int {
	if c := cmp.Compare(a.queue, b.queue); c != 0 {
		return c
	}
	if c := cmp.Compare(a.entered, b.entered); c != 0 {
		return c
	}
	if c := cmp.Compare(a.job.Arrival, b.job.Arrival); c != 0 {
		return c
	}
	return cmp.Compare(a.job.ID, b.job.ID)
}

// tirJob is Tiresias' memory of one job.
type tirJob struct {
	queue     int
	entered   float64 // when the job entered its queue
	baseAtt   float64 // attained service when the job last entered queue 0
	baseExec  float64 // executed time when the job last entered queue 0
	firstRun  float64 // first start after entering queue 0 (NaN: not yet)
	promotion int
	waiting   bool    // in Tiresias.wait, under key
	key       tirWait // the job's key in Tiresias.wait
	att, exec float64 // the job's Attained and Executed as last seen
	gone      bool    // no longer in Tiresias.jobs
	hint      int     // the job's place in the last sort of running jobs that ranked it
	// job is the description the job was last updated with; while it runs, att and exec are
	// those of the last view that stopped it or saw it new (not of every view: see tirRun)
	job *gpusched.Job
}

// tirRun is what Tiresias reads of a running job at every call, kept by the job's place among
// the running jobs (posDense) from view to view: its state, its queue and the service it had
// when it last entered queue 0 (as in the state), and the service at which it leaves its
// queue (+Inf in the last). While a running job's service stays below that, its state does
// not change: only the calls where it crosses a threshold, or where it is seen new, update
// the state (refresh); its service is copied into the state when a decision preempts it.
type tirRun struct {
	s       *tirJob
	baseAtt float64
	next    float64
	q       int
	gpus    int // Job.GPUs, which does not change
}

// run returns the tirRun of running job s, up to date.
func (t *tiresiasPolicy) run(s *tirJob, j *gpusched.Job) tirRun {
	next := math.Inf(1)
	if s.queue < len(t.opt.Thresholds) {
		next = t.opt.Thresholds[s.queue]
	}
	return tirRun{s: s, baseAtt: s.baseAtt, next: next, q: s.queue, gpus: j.GPUs}
}

// newTiresias returns a Tiresias scheduler. Default placement: gpusched.Pack; default order: Backfill.
func newTiresias(opt TiresiasOptions) (*tiresiasPolicy, error) {
	if err := opt.check("tiresias"); err != nil {
		return nil, err
	}
	if opt.Thresholds == nil {
		opt.Thresholds = DefaultTiresiasThresholds()
	}
	opt.Thresholds = slices.Clone(opt.Thresholds)
	for i, t := range opt.Thresholds {
		if !(t > 0) || math.IsInf(t, 1) || (i > 0 && !(t > opt.Thresholds[i-1])) {
			return nil, fmt.Errorf("%w: tiresias: Thresholds must be finite, positive and increasing: %v",
				ErrInvalidOptions, opt.Thresholds)
		}
	}
	if opt.Service > PlainTime {
		return nil, fmt.Errorf("%w: tiresias: unknown Service %d", ErrInvalidOptions, opt.Service)
	}
	if !finiteNonNeg(opt.PromoteKnob) {
		return nil, fmt.Errorf("%w: tiresias: PromoteKnob %v", ErrInvalidOptions, opt.PromoteKnob)
	}
	if math.IsNaN(opt.MinRunTime) || math.IsInf(opt.MinRunTime, 0) {
		return nil, fmt.Errorf("%w: tiresias: MinRunTime %v is not finite", ErrInvalidOptions, opt.MinRunTime)
	}
	t := &tiresiasPolicy{opt: opt, place: opt.placer(), backfill: opt.backfill(true), jobs: map[gpusched.JobID]*tirJob{},
		wait: newSortedList(cmpTirWait),
		lazy: lazyRun[tirKeyed]{cmp: tirCompare(false), hint: func(e *tirKeyed) *int { return &e.s.hint }, rank: func(e *tirKeyed) *ranked { return &e.ranked }}}
	if opt.Gittins {
		d := opt.GittinsDelta
		if d == 0 && len(opt.Thresholds) > 0 {
			d = opt.Thresholds[0]
		}
		if !(d > 0) || math.IsInf(d, 1) {
			return nil, fmt.Errorf("%w: tiresias: GittinsDelta %v must be finite and positive", ErrInvalidOptions, opt.GittinsDelta)
		}
		t.gittins = &gittins{delta: d}
		for _, s := range opt.GittinsSample {
			if !(s > 0) || math.IsInf(s, 1) {
				return nil, fmt.Errorf("%w: tiresias: GittinsSample value %v must be finite and positive", ErrInvalidOptions, s)
			}
			t.gittins.add(s)
		}
	} else if opt.GittinsDelta != 0 || opt.GittinsSample != nil {
		return nil, fmt.Errorf("%w: tiresias: GittinsDelta and GittinsSample apply to Gittins", ErrInvalidOptions)
	}
	return t, nil
}

// String returns "tiresias" (or Options.Name).
func (t *tiresiasPolicy) String() string { return name(t.opt.Name, "tiresias") }

// Queue returns the queue (0 = highest priority) Tiresias last put job id in, and whether it
// knows the job.
func (t *tiresiasPolicy) Queue(id gpusched.JobID) (int, bool) {
	s, ok := t.jobs[id]
	if !ok {
		return 0, false
	}
	return s.queue, true
}

// Promotions returns how often job id was promoted back to the first queue.
//
// Deprecated: not needed by embedders (a diagnostic); removed in v0.3.0.
func (t *tiresiasPolicy) Promotions(id gpusched.JobID) int {
	if s, ok := t.jobs[id]; ok {
		return s.promotion
	}
	return 0
}

// attained returns a job's attained service as the options count it.
func (t *tiresiasPolicy) attained(st *gpusched.JobStatus) float64 {
	if t.opt.Service == PlainTime {
		return st.Executed
	}
	return st.Attained
}

// rate is how fast a running job attains service: GPUs per second, or 1 on plain time.
func (t *tiresiasPolicy) rate(j *gpusched.Job) float64 {
	if t.opt.Service == PlainTime {
		return 1
	}
	return float64(j.GPUs)
}

// queueOf returns the queue for a given attained service since the last entry into queue 0.
func (t *tiresiasPolicy) queueOf(att float64) int {
	q := 0
	for q < len(t.opt.Thresholds) && att >= t.opt.Thresholds[q] {
		q++
	}
	return q
}

// update brings a job's queue up to date with the view.
func (t *tiresiasPolicy) update(now float64, st *gpusched.JobStatus, running bool) *tirJob {
	s, ok := t.jobs[st.Job.ID]
	if !ok {
		s = &tirJob{entered: st.Job.Arrival, firstRun: math.NaN(), hint: -1}
		if st.Started {
			s.firstRun = st.FirstStart
		}
		t.jobs[st.Job.ID] = s
		s.queue = t.queueOf(t.attained(st))
		if s.queue > 0 {
			s.entered = now
		}
	}
	return t.refresh(now, st, running, s)
}

// refresh is update of a job whose state s is known.
func (t *tiresiasPolicy) refresh(now float64, st *gpusched.JobStatus, running bool, s *tirJob) *tirJob {
	s.att, s.exec, s.job = st.Attained, st.Executed, st.Job
	if running && math.IsNaN(s.firstRun) {
		s.firstRun = st.Since
	}
	if !running && math.IsNaN(s.firstRun) && st.Executed > s.baseExec {
		s.firstRun = now // it ran without being seen running: count waiting from now
	}
	att := t.attained(st) - s.baseAtt
	if q := t.queueOf(att); q > s.queue {
		entered := now
		if running {
			// The job crossed the threshold while running: at now - (att - limit)/rate.
			entered = now - (att-t.opt.Thresholds[q-1])/t.rate(st.Job)
			entered = max(entered, st.Since, s.entered)
		}
		s.queue, s.entered = q, entered
	}
	if !running && t.opt.PromoteKnob > 0 && s.queue > 0 {
		exec := st.Executed - s.baseExec
		if exec > 0 && !math.IsNaN(s.firstRun) {
			wait := (now - s.firstRun) - exec
			if wait >= t.opt.PromoteKnob*exec {
				s.queue, s.entered = 0, now
				s.baseAtt, s.baseExec = t.attained(st), st.Executed
				s.firstRun = math.NaN()
				s.promotion++
			}
		}
	}
	return s
}

// Schedule updates every job's queue and returns the 2D-LAS choice described in the type's
// documentation.
//
// Cost per call: with PromoteKnob 0 and a host's View.Delta that continues the last view,
// Tiresias keeps its waiting jobs ordered between calls (a waiting job's queue changes only
// while it runs) and looks only at the jobs that arrived and left, the running jobs, and the
// head of its order while a waiting job could still start: O(r log r + k log n) for r running
// jobs, k jobs looked at and n waiting, instead of sorting every job of the view. Without a
// usable delta, or with PromoteKnob > 0, it ranks every job.
func (t *tiresiasPolicy) Schedule(v gpusched.View) (gpusched.Decision, error) {
	if err := t.ready(); err != nil {
		return gpusched.Decision{}, err
	}
	if t.opt.PromoteKnob > 0 || t.gittins != nil {
		return t.gate.decide(v, t.scheduleAll)
	}
	return t.gate.decide(v, t.schedule)
}

// enqueue puts a waiting job in the order under its current queue.
func (t *tiresiasPolicy) enqueue(j *gpusched.Job, s *tirJob) {
	if s.waiting {
		t.wait.remove(s.key)
	}
	s.key = tirWait{job: j, queue: s.queue, entered: s.entered, s: s}
	s.waiting = true
	t.wait.insert(s.key)
}

// dequeue takes a job out of the order.
func (t *tiresiasPolicy) dequeue(s *tirJob) {
	if s != nil && s.waiting {
		t.wait.remove(s.key)
		s.waiting = false
	}
}

// schedule is the engine with PromoteKnob 0: the waiting jobs' order is kept from the host's
// deltas (a rescan rebuilds it), the running jobs are ranked afresh, and preemptMerged takes
// the merged order only as far as it can matter.
func (t *tiresiasPolicy) schedule(vp *gpusched.View) (gpusched.Decision, error) {
	v := *vp
	clear(t.leftJobs)
	t.leftJobs = t.leftJobs[:0]
	ok, err := t.follow.follow(&v, waitEvents{
		left: func(id gpusched.JobID) {
			if s := t.jobs[id]; s != nil {
				t.leftJobs = append(t.leftJobs, s.job)
				t.dequeue(s)
				s.gone = true
				delete(t.jobs, id)
			}
		},
		arrived: func(st *gpusched.JobStatus) error {
			if st.GPUs == nil {
				t.enqueue(st.Job, t.update(v.Now, st, false))
			}
			return nil
		},
		started: func(st *gpusched.JobStatus) error { t.dequeue(t.jobs[st.Job.ID]); return nil },
		// A job the last decision preempted waits with the service it had then, which its
		// update as a running job counted: its queue is unchanged.
		stopped: func(j *gpusched.Job) {
			if s := t.jobs[j.ID]; s != nil {
				t.enqueue(j, s)
			}
		},
	})
	if err != nil {
		t.follow.reset()
		return gpusched.Decision{}, err
	}
	if !ok || t.wait.Len() != len(v.Pending) {
		forget(t.jobs, &v)
		t.byPos.reset()
		for _, s := range t.jobs {
			s.waiting = false
		}
		t.wait.reset()
		for i := range v.Pending {
			st := &v.Pending[i]
			t.enqueue(st.Job, t.update(v.Now, st, false))
		}
		t.follow.rescanned(&v)
	}
	// The running jobs in a queue no later than the first waiting job's come before every
	// waiting job and, when the running jobs fit in the available GPUs, are all chosen whatever
	// their order among themselves: they are put in front as they are ranked, not sorted. The
	// others are sorted only if the merge with the waiting jobs reaches them (with MinRunTime,
	// protection reorders them: all are sorted then).
	hq := math.MaxInt
	hc := t.wait.cursor()
	if head, ok := hc.next(); ok {
		hq = head.queue
	}
	part := t.opt.MinRunTime <= 0
	// The first n fill all from the front, the others from the back (in reverse: they are
	// sorted before the merge reads them, see below).
	all := slices.Grow(t.keyBuf[:0], len(v.Running))[:len(v.Running)]
	held, prot, n, first := 0, 0, 0, 0 // GPUs of all, of the protected, of the first n
	m := len(all)
	wfirst := 0.0 // the first n's next demotion (they all run when the merge skips them)
	t.byPos.begin()
	for i := range v.Running {
		st := &v.Running[i]
		p := t.opt.MinRunTime > 0 && v.Now-st.Since < t.opt.MinRunTime
		var e tirKeyed
		var base float64 // the job's service when it last entered queue 0
		var g int        // its GPUs
		if r, hit := t.byPos.get(st.Job); hit && !t.left(st.Job) && t.attained(st)-r.baseAtt < r.next {
			// Running at the last call and still in its queue: its state is unchanged.
			e = tirKeyed{ranked: ranked{st: st, running: true, protected: p, pos: i}, s: r.s, q: r.q}
			base, g = r.baseAtt, r.gpus
			t.byPos.put(st.Job, *r)
		} else {
			var s *tirJob
			if hit && !r.s.gone {
				s = t.refresh(v.Now, st, true, r.s)
			} else {
				s = t.update(v.Now, st, true)
			}
			t.dequeue(s)
			e = tirKey(ranked{st: st, running: true, protected: p, pos: i}, s)
			base, g = s.baseAtt, st.Job.GPUs
			t.byPos.put(st.Job, t.run(s, st.Job))
		}
		held += g
		if p {
			prot += g
		}
		if part && e.q <= hq {
			all[n] = e
			n++
			first += g
			wfirst = t.wakeAt(&v, wfirst, st, false, e.q, base, g) // while its state is at hand
		} else {
			m--
			all[m] = e
		}
	}
	t.byPos.end()
	t.keyBuf = all
	defer clear(all)
	// With n > 0 (and the running jobs fitting) the merge sorts the others before it reads
	// them: it reads past the first n, as GPUs are left and a job waits. Otherwise it may hand
	// them to preempt as they lie, which must be the view's order.
	switch {
	case n == 0:
		slices.Reverse(all)
	case held > v.Available():
		slices.SortFunc(all, func(a, b tirKeyed) int { return cmp.Compare(a.pos, b.pos) })
		n, first = 0, 0
	}
	lr := &t.lazy
	lr.reset(all, n)
	defer lr.clear()
	cur := t.wait.cursor()
	defer t.pool.reset()
	wstates := t.waitBuf[:0] // the states of the waiting jobs next returned, in order
	defer func() { clear(wstates); t.waitBuf = wstates[:0] }()
	var ws *tirJob // the state of the waiting job next returned last
	next := func() (ranked, bool) {
		w, ok := cur.next()
		if !ok {
			return ranked{}, false
		}
		// A waiting job's service is what it was when it was last seen (it has not run since).
		ws = w.s
		wstates = append(wstates, ws)
		st := t.pool.get(w.job)
		st.Attained, st.Executed = ws.att, ws.exec
		return ranked{st: st}, true
	}
	before := func(i int, _ *ranked) bool {
		return all[i].protected || all[i].q <= ws.queue
	}
	sel, order, err := preemptMerged(&v, lr.seqCounted(prot, held-prot, first), next, before, t.backfill, false, placeOn(t.place, v.Cluster), &t.sc)
	if err != nil {
		t.follow.reset()
		return gpusched.Decision{}, err
	}
	t.follow.decided(sel.preempted)
	// A preempted job waits with the service of this view.
	for _, st := range sel.stopped {
		if s := t.jobs[st.Job.ID]; s != nil {
			s.att, s.exec = st.Attained, st.Executed
		}
	}
	if sel.waiting {
		// order merges the running jobs and the waiting jobs next returned, each in its own
		// order: their states follow the same merge.
		ss := slices.Grow(t.ssBuf[:0], len(order))[:len(order)]
		ri, wi := sel.skipped, 0 // the first running jobs, left out of order, all run
		for i := range order {
			if order[i].running {
				ss[i] = all[ri].s
				ri++
			} else {
				ss[i] = wstates[wi]
				wi++
			}
		}
		sel.decision.WakeAt = t.wake(&v, order, ss, sel.runs)
		if sel.skipped > 0 {
			sel.decision.WakeAt = minWake(sel.decision.WakeAt, wfirst, v.Now)
		}
		clear(ss) // no references to the jobs' states past the call
		t.ssBuf = ss[:0]
	}
	return sel.decision, nil
}

// scheduleAll ranks every job of the view at every call (O(n log n) in the queue's length): the
// engine with PromoteKnob > 0, whose promotions change waiting jobs' queues as time passes,
// and with Gittins, whose indices change as the distribution learns.
func (t *tiresiasPolicy) scheduleAll(vp *gpusched.View) (gpusched.Decision, error) {
	v := *vp
	forget(t.jobs, &v)
	if t.gittins != nil {
		t.gittins.merge()
	}
	all := make([]tirKeyed, 0, len(v.Pending)+len(v.Running))
	for i := range v.Running {
		st := &v.Running[i]
		prot := t.opt.MinRunTime > 0 && v.Now-st.Since < t.opt.MinRunTime
		all = append(all, tirKey(ranked{st: st, running: true, protected: prot, pos: i}, t.update(v.Now, st, true)))
	}
	for i := range v.Pending {
		st := &v.Pending[i]
		all = append(all, tirKey(ranked{st: st}, t.update(v.Now, st, false)))
	}
	if t.gittins != nil {
		for i := range all {
			all[i].g = t.gittins.index(t.attained(all[i].st) - all[i].s.baseAtt)
		}
	}
	slices.SortStableFunc(all, tirCompare(t.gittins != nil))
	order := make([]ranked, len(all))
	states := make([]*tirJob, len(all))
	for i := range all {
		order[i], states[i] = all[i].ranked, all[i].s
	}
	sel, err := preempt(&v, order, t.backfill, placeOn(t.place, v.Cluster), &t.sc)
	if err != nil {
		return gpusched.Decision{}, err
	}
	if sel.waiting {
		sel.decision.WakeAt = t.wake(&v, order, states, sel.runs)
	}
	return sel.decision, nil
}

// wake returns the next time the decision may change without an event: a running job's next
// demotion, a waiting job's promotion, the end of a lease. runs tells which jobs of rs the
// decision runs.
func (t *tiresiasPolicy) wake(v *gpusched.View, rs []ranked, ss []*tirJob, runs []bool) float64 {
	w := 0.0
	for i, r := range rs {
		s, st := ss[i], r.st
		switch {
		case runs[i]:
			w = t.wakeRun(v, w, &r, s)
		case t.opt.PromoteKnob > 0 && s.queue > 0 && !math.IsNaN(s.firstRun):
			exec := st.Executed - s.baseExec
			if exec > 0 {
				wait := (v.Now - s.firstRun) - exec
				w = minWake(w, v.Now+t.opt.PromoteKnob*exec-wait, v.Now)
			}
		}
	}
	return w
}

// wakeRun is wake's w lowered to the next demotion of running job r (state s) that the
// decision runs, and to the end of its lease.
func (t *tiresiasPolicy) wakeRun(v *gpusched.View, w float64, r *ranked, s *tirJob) float64 {
	return t.wakeAt(v, w, r.st, r.protected, s.queue, s.baseAtt, r.st.Job.GPUs)
}

// wakeAt is wakeRun for a job on gpus GPUs in queue q that last entered queue 0 with service
// baseAtt.
func (t *tiresiasPolicy) wakeAt(v *gpusched.View, w float64, st *gpusched.JobStatus, protected bool, q int, baseAtt float64, gpus int) float64 {
	if q < len(t.opt.Thresholds) {
		att := t.attained(st) - baseAtt
		rate := 1.0 // as rate
		if t.opt.Service != PlainTime {
			rate = float64(gpus)
		}
		w = minWake(w, v.Now+(t.opt.Thresholds[q]-att)/rate, v.Now)
	}
	if protected {
		w = minWake(w, st.Since+t.opt.MinRunTime, v.Now)
	}
	return w
}

// left tells whether job j's description is that of a job that left since the last call (a
// host may reuse it for another).
func (t *tiresiasPolicy) left(j *gpusched.Job) bool {
	for _, l := range t.leftJobs {
		if l == j {
			return true
		}
	}
	return false
}

// tirKeyed is a job in Tiresias' priority order with its state and, with Gittins, its index.
type tirKeyed struct {
	ranked
	s *tirJob
	g float64 // Gittins index (Gittins only)
	q int     // s.queue, kept beside the job (the merge and the sort read it for every job)
}

// tirKey is the entry of a job whose state s is up to date with the view.
func tirKey(r ranked, s *tirJob) tirKeyed { return tirKeyed{ranked: r, s: s, q: s.queue} }

// tirCompare orders jobs as Tiresias ranks them: protected running jobs first, then by queue,
// then (with Gittins) by index, highest first, or running before waiting and by entry into the
// queue; ties by arrival.
func tirCompare(gittins bool) func(a, b tirKeyed) int {
	return func(a, b tirKeyed) int {
		if a.protected != b.protected {
			if a.protected {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(a.q, b.q); c != 0 {
			return c
		}
		if gittins {
			if c := cmp.Compare(b.g, a.g); c != 0 {
				return c
			}
			return byArrival(a.st, b.st)
		}
		if a.running != b.running {
			if a.running {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(a.s.entered, b.s.entered); c != 0 {
			return c
		}
		return byArrival(a.st, b.st)
	}
}
