package policy

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// OracleOptions configure the SRPT oracle.
type OracleOptions struct {
	Options
	// Iterations returns a job's true total number of iterations, as the host or experiment
	// knows it (trace.Record.Iterations). Required. A NaN or negative answer is an error. It is
	// asked once per job while the job is in the system (a job that leaves and comes back, or a
	// view the oracle cannot follow from the last, asks again).
	Iterations func(id gpusched.JobID) float64
	// Cost gives a job's time per iteration; the oracle sizes a job at its best placement (all
	// GPUs free, consolidated by topology's Pack, idle links), once per job, so that a job's
	// remaining work only decreases while it runs. Default: gpusched.DefaultCost() (the
	// model-aware cost; Job.StepTime for jobs without a model).
	Cost gpusched.CostModel
	// Margin is the hysteresis against thrashing: a running job keeps its GPUs against a waiting
	// job unless the waiting job's remaining GPU-time is below (1 - Margin) times its own.
	// Default (0): 0.1. A negative value means no margin.
	Margin float64
	// MinRunTime, when positive, is the least time in seconds a job runs after it starts or
	// resumes before it may be preempted. Default 0: no such rule (Margin alone applies).
	MinRunTime float64
}

// DefaultOracleMargin is the SRPT oracle's default hysteresis margin.
//
// Deprecated: not needed by embedders (leave the option zero for it); removed in v0.3.0.
const DefaultOracleMargin = 0.1

// oraclePolicy is preemptive shortest-remaining-processing-time first with the true job lengths:
// the upper reference that any predictor-based policy (A-SRPT, SJF with predictions) is measured
// against. A job's remaining work is its remaining GPU-time, GPUs x (true iterations - iterations
// done) x time per iteration at its best placement.
//
// At every call the jobs are ranked by remaining GPU-time over weight (Job.Weight; weighted
// SRPT, plain SRPT when weights are unset), smallest first, and taken greedily
// while their GPU demands fit in the cluster (backfilling by default: a job that does not fit
// is passed over); chosen running jobs keep their GPUs, chosen waiting jobs are placed by the
// Placer, and running jobs that were not chosen are preempted.
//
// Thrashing. Remaining work only decreases while a job runs, so a waiting job can never
// overtake a running one except on arrival; the oracle preempts only for newly arrived (or
// placement-blocked) jobs. To avoid preemptions that gain little, a running job ranks with
// (1 - Margin) times its remaining work (hysteresis), and with MinRunTime > 0 a job that
// started or resumed less than MinRunTime ago is not preempted at all; the oracle then asks to
// be woken (Decision.WakeAt) when that protection ends if a job is waiting.
//
// The oracle caches each job's per-iteration time while the job is in the system: it is not
// safe for concurrent use.
type oraclePolicy struct {
	gate     gate
	opt      OracleOptions
	place    gpusched.Placer
	backfill bool
	margin   float64
	tau      map[gpusched.JobID]float64 // time per iteration at the best placement (the state)
	jobs     map[gpusched.JobID]*oracleJob
	byPos    posCache[oracleJob] // jobs' records by their place among the running jobs
	// the waiting jobs by remaining GPU-time over weight, kept from the host's deltas
	follow  waitFollow
	wait    *sortedList[oracleWait]
	pool    statusPool
	waiting map[gpusched.JobID]oracleWait // the keys of the jobs in wait
	stopKey map[gpusched.JobID]oracleWait // running jobs' keys should they wait (last call)
	// runBound bounds from above every running job's rank (remaining GPU-time over weight,
	// with the margin) while boundOK: ranks only fall while a job runs, so the bound is the
	// largest rank computed at the last ranking of every running job, raised by the jobs that
	// started since, ranked when they start.
	runBound float64
	boundOK  bool
	runBuf   []ranked
	keyBuf   []oracleKeyed
	lazy     lazyRun[oracleKeyed]
	sc       scratch
}

// oracleWait is a waiting job's place in the oracle's order: remaining GPU-time over weight,
// then arrival and id.
type oracleWait struct {
	job *gpusched.Job
	key float64
}

func cmpOracleWait(a, b oracleWait) int {
	if c := cmp.Compare(a.key, b.key); c != 0 {
		return c
	}
	if c := cmp.Compare(a.job.Arrival, b.job.Arrival); c != 0 {
		return c
	}
	return cmp.Compare(a.job.ID, b.job.ID)
}

// oracleKeyed is a running job ranked by the oracle: its rank (remaining GPU-time over weight,
// with the margin).
type oracleKeyed struct {
	ranked
	key float64
	o   *oracleJob // the oracle's record of the job
}

// cmpOracleKeyed orders running jobs: protected first, then by rank, then by arrival.
func cmpOracleKeyed(a, b oracleKeyed) int {
	if a.protected != b.protected {
		if a.protected {
			return -1
		}
		return 1
	}
	if c := cmp.Compare(a.key, b.key); c != 0 {
		return c
	}
	return byArrival(a.st, b.st)
}

// newSRPTOracle returns an SRPT oracle. Default placement: gpusched.Pack; default order: Backfill.
func newSRPTOracle(opt OracleOptions) (*oraclePolicy, error) {
	if err := opt.check("srpt-oracle"); err != nil {
		return nil, err
	}
	if opt.Iterations == nil {
		return nil, fmt.Errorf("%w: srpt-oracle: Iterations is required", ErrInvalidOptions)
	}
	if math.IsNaN(opt.Margin) || opt.Margin >= 1 {
		return nil, fmt.Errorf("%w: srpt-oracle: Margin %v must be below 1", ErrInvalidOptions, opt.Margin)
	}
	if math.IsNaN(opt.MinRunTime) || math.IsInf(opt.MinRunTime, 0) {
		return nil, fmt.Errorf("%w: srpt-oracle: MinRunTime %v is not finite", ErrInvalidOptions, opt.MinRunTime)
	}
	margin := opt.Margin
	switch {
	case margin == 0:
		margin = DefaultOracleMargin
	case margin < 0:
		margin = 0
	}
	if opt.Cost == nil {
		opt.Cost = gpusched.DefaultCost()
	}
	s := &oraclePolicy{gate: gate{cost: opt.Cost}, opt: opt, place: opt.placer(), backfill: opt.backfill(true), margin: margin,
		tau: map[gpusched.JobID]float64{}, jobs: map[gpusched.JobID]*oracleJob{}, wait: newSortedList(cmpOracleWait), waiting: map[gpusched.JobID]oracleWait{},
		stopKey: map[gpusched.JobID]oracleWait{},
		lazy: lazyRun[oracleKeyed]{cmp: cmpOracleKeyed, hint: func(e *oracleKeyed) *int { return &e.o.hint }, rank: func(e *oracleKeyed) *ranked { return &e.ranked },
			key: func(e *oracleKeyed) (float64, bool) { return e.key, !e.protected }}}
	// A job whose true iterations are NaN or negative is rejected alone; sizing it at
	// admission fixes what the oracle keeps of it (Iterations is asked once, as before).
	s.gate.admit = func(j *gpusched.Job, c *topology.Cluster) error {
		_, err := s.job(&gpusched.View{Cluster: c}, j)
		return err
	}
	return s, nil
}

// String returns "srpt-oracle" (or Options.Name).
func (s *oraclePolicy) String() string { return name(s.opt.Name, "srpt-oracle") }

// remaining returns the remaining GPU-time in GPU-seconds of a job in the view's state, as the
// oracle ranks it.
func (s *oraclePolicy) remaining(v *gpusched.View, st *gpusched.JobStatus) (float64, error) {
	o, err := s.job(v, st.Job)
	if err != nil {
		return 0, err
	}
	return o.remaining(st), nil
}

// oracleJob is what the oracle keeps of a job while the job is in the system.
type oracleJob struct {
	gt   float64 // GPUs x time per iteration at the best placement
	n    float64 // true iterations
	hint int     // the job's place in the last sorting of running jobs that ranked it (a hint)
	gone bool    // no longer in jobs
}

// forgetJobs drops the oracle's records of the jobs.
func (s *oraclePolicy) forgetJobs() {
	for _, o := range s.jobs {
		o.gone = true
	}
	clear(s.jobs)
	s.byPos.reset()
}

func (o *oracleJob) remaining(st *gpusched.JobStatus) float64 {
	return o.gt * max(0, o.n-st.Iterations)
}

// job returns what the oracle keeps of job j, sizing it on first sight.
func (s *oraclePolicy) job(v *gpusched.View, j *gpusched.Job) (*oracleJob, error) {
	if o, ok := s.jobs[j.ID]; ok {
		return o, nil
	}
	tau, ok := s.tau[j.ID]
	if !ok {
		tau, ok = s.gate.bestTime(j) // found by admission under the same cost
	}
	if !ok {
		var err error
		if tau, err = bestStepTime(s.opt.Cost, v, j); err != nil {
			return nil, fmt.Errorf("srpt-oracle: %w", err)
		}
	}
	s.tau[j.ID] = tau
	n := s.opt.Iterations(j.ID)
	if math.IsNaN(n) || n < 0 {
		return nil, fmt.Errorf("%w: %w: srpt-oracle: job %q has %v true iterations", gpusched.ErrInvalidJob, ErrInvalidOptions, j.ID, n)
	}
	o := &oracleJob{gt: float64(j.GPUs) * tau, n: n, hint: -1}
	s.jobs[j.ID] = o
	return o, nil
}

// Schedule ranks the jobs by remaining GPU-time and returns the greedy choice described in the
// type's documentation.
//
// Cost per call: a waiting job's remaining work does not change, so with a host's View.Delta
// that continues the last view the oracle keeps its waiting jobs ordered between calls and
// looks only at the jobs that arrived and left, the running jobs (ranked afresh), and the head
// of its order while a waiting job could still start; without one it ranks every job.
func (s *oraclePolicy) Schedule(v gpusched.View) (gpusched.Decision, error) {
	if err := s.ready(); err != nil {
		return gpusched.Decision{}, err
	}
	return s.gate.decide(v, s.schedule)
}

func (s *oraclePolicy) enqueue(k oracleWait) {
	s.dequeue(k.job.ID)
	s.wait.insert(k)
	s.waiting[k.job.ID] = k
}

func (s *oraclePolicy) dequeue(id gpusched.JobID) {
	if k, ok := s.waiting[id]; ok {
		s.wait.remove(k)
		delete(s.waiting, id)
	}
}

// waitKey returns a job's place in the order should it wait in the view's state.
func (s *oraclePolicy) waitKey(v *gpusched.View, st *gpusched.JobStatus) (oracleWait, error) {
	r, err := s.remaining(v, st)
	if err != nil {
		return oracleWait{}, err
	}
	return oracleWait{job: st.Job, key: r / st.Job.EffectiveWeight()}, nil
}

// raise makes runBound cover running job st.
func (s *oraclePolicy) raise(v *gpusched.View, st *gpusched.JobStatus) error {
	r, err := s.remaining(v, st)
	if err != nil {
		return err
	}
	s.runBound = max(s.runBound, r*(1-s.margin)/st.Job.EffectiveWeight())
	return nil
}

func (s *oraclePolicy) schedule(vp *gpusched.View) (gpusched.Decision, error) {
	v := *vp
	ok, err := s.follow.follow(&v, waitEvents{
		left: func(id gpusched.JobID) {
			s.dequeue(id)
			delete(s.tau, id)
			if o := s.jobs[id]; o != nil {
				o.gone = true
				delete(s.jobs, id)
			}
			delete(s.stopKey, id)
		},
		arrived: func(st *gpusched.JobStatus) error {
			if st.GPUs != nil {
				return s.raise(&v, st)
			}
			k, err := s.waitKey(&v, st)
			if err == nil {
				s.enqueue(k)
			}
			return err
		},
		started: func(st *gpusched.JobStatus) error {
			s.dequeue(st.Job.ID)
			return s.raise(&v, st)
		},
		// A job the last decision preempted waits with the iterations it had done then.
		stopped: func(j *gpusched.Job) {
			if k, ok := s.stopKey[j.ID]; ok {
				s.enqueue(k)
			}
		},
	})
	if err == nil && (!ok || s.wait.Len() != len(v.Pending)) {
		ok = false
		forget(s.tau, &v)
		s.forgetJobs() // asks Iterations again
		s.wait.reset()
		clear(s.waiting)
		for i := range v.Pending {
			var k oracleWait
			if k, err = s.waitKey(&v, &v.Pending[i]); err != nil {
				break
			}
			s.enqueue(k)
		}
		s.follow.rescanned(&v)
	}
	if err != nil {
		s.follow.reset()
		s.boundOK = false
		return gpusched.Decision{}, err
	}
	if ok && s.boundOK && s.opt.MinRunTime <= 0 {
		if d, fast, err := s.keepRunning(&v); fast || err != nil {
			return d, err
		}
	}
	clear(s.stopKey)
	// The running jobs that rank at most the first waiting job come before every waiting job
	// and, when the running jobs fit in the available GPUs, are all chosen whatever their
	// order among themselves: they are put in front as they are ranked, not sorted. The
	// others are sorted only if the merge with the waiting jobs reaches them (with
	// MinRunTime, protection reorders them: all are sorted then).
	h := math.Inf(1)
	hc := s.wait.cursor()
	if head, ok := hc.next(); ok {
		h = head.key
	}
	part := s.opt.MinRunTime <= 0
	// The first n fill all from the front, the others from the back (in reverse: they are
	// sorted before the merge reads them, see below).
	all := slices.Grow(s.keyBuf[:0], len(v.Running))[:len(v.Running)]
	held, prot, n, first := 0, 0, 0, 0 // GPUs of all, of the protected, of the first n
	m := len(all)
	s.byPos.begin()
	bound := 0.0
	for i := range v.Running {
		st := &v.Running[i]
		o := s.byPos.get(st.Job)
		if o == nil || o.gone {
			if o, err = s.job(&v, st.Job); err != nil {
				s.follow.reset()
				s.byPos.reset()
				return gpusched.Decision{}, err
			}
		}
		s.byPos.put(st.Job, o)
		r := o.remaining(st)
		w := st.Job.EffectiveWeight()
		p := s.opt.MinRunTime > 0 && v.Now-st.Since < s.opt.MinRunTime
		k := r * (1 - s.margin) / w
		bound = max(bound, k)
		e := oracleKeyed{ranked{st: st, running: true, protected: p, pos: i}, k, o}
		g := st.Job.GPUs
		held += g
		if p {
			prot += g
		}
		if part && k <= h {
			all[n] = e
			n++
			first += g
		} else {
			m--
			all[m] = e
		}
	}
	s.byPos.end()
	s.keyBuf = all
	defer clear(all)
	s.runBound, s.boundOK = bound, true
	// With n > 0 (and the running jobs fitting) the merge sorts the others before it reads
	// them: it reads past the first n, as GPUs are left and a job waits. Otherwise it may hand
	// them to preempt as they lie, which must be the view's order.
	switch {
	case n == 0:
		slices.Reverse(all)
	case held > v.Available():
		slices.SortFunc(all, func(a, b oracleKeyed) int { return cmp.Compare(a.pos, b.pos) })
		n, first = 0, 0
	}
	lr := &s.lazy
	lr.reset(all, n)
	defer lr.clear()
	cur := s.wait.cursor()
	defer s.pool.reset()
	var wkey float64
	next := func() (ranked, bool) {
		w, ok := cur.next()
		wkey = w.key
		if !ok {
			return ranked{}, false
		}
		return ranked{st: s.pool.get(w.job)}, true
	}
	before := func(i int, _ *ranked) bool {
		return lr.all[i].protected || cmp.Compare(lr.all[i].key, wkey) <= 0
	}
	sel, order, err := preemptMerged(&v, lr.seqCounted(prot, held-prot, first), next, before, s.backfill, false, placeOn(s.place, v.Cluster), &s.sc)
	if err != nil {
		s.follow.reset()
		return gpusched.Decision{}, err
	}
	// A preempted job waits with its key of this call.
	for _, st := range sel.stopped {
		if o := s.jobs[st.Job.ID]; o != nil {
			s.stopKey[st.Job.ID] = oracleWait{job: st.Job, key: o.remaining(st) / st.Job.EffectiveWeight()}
		}
	}
	s.follow.decided(sel.preempted)
	if sel.waiting {
		for _, r := range order {
			if r.protected {
				sel.decision.WakeAt = minWake(sel.decision.WakeAt, r.st.Since+s.opt.MinRunTime, v.Now)
			}
		}
	}
	return sel.decision, nil
}

// keepRunning is the decision when no waiting job ranks before a running one (every waiting
// job's rank is at least runBound) and the running jobs fit in the available GPUs: then the
// ranking keeps every running job and dispatches the waiting jobs in their order, whatever the
// running jobs' ranks among themselves, so they are not ranked. It reports false when that
// does not hold.
func (s *oraclePolicy) keepRunning(v *gpusched.View) (gpusched.Decision, bool, error) {
	cur := s.wait.cursor()
	if head, ok := cur.next(); ok && !(s.runBound <= head.key) {
		return gpusched.Decision{}, false, nil
	}
	var rs runSeq
	if v.AcceptsKeepOthers {
		// Every running job comes first and is chosen: preemptMerged counts them, lists none.
		held := 0
		for i := range v.Running {
			held += v.Running[i].Job.GPUs
		}
		if held > v.Available() {
			return gpusched.Decision{}, false, nil
		}
		rs = runSeq{n: len(v.Running), held: held, first: len(v.Running), firstGPUs: held}
	} else {
		running := s.runBuf[:0]
		held := 0
		for i := range v.Running {
			running = append(running, ranked{st: &v.Running[i], running: true, pos: i})
			held += v.Running[i].Job.GPUs
		}
		s.runBuf = running
		defer clear(running)
		if held > v.Available() {
			return gpusched.Decision{}, false, nil
		}
		rs = runSlice(running)
	}
	cur = s.wait.cursor()
	defer s.pool.reset()
	next := func() (ranked, bool) {
		w, ok := cur.next()
		if !ok {
			return ranked{}, false
		}
		return ranked{st: s.pool.get(w.job)}, true
	}
	before := func(int, *ranked) bool { return true }
	sel, _, err := preemptMerged(v, rs, next, before, s.backfill, false, placeOn(s.place, v.Cluster), &s.sc)
	if err != nil {
		s.follow.reset()
		s.boundOK = false
		return gpusched.Decision{}, true, err
	}
	s.follow.decided(sel.preempted)
	return sel.decision, true, nil
}

// bestStepTime returns a job's time per iteration at its best placement on an idle cluster
// (gpusched.BestPlacement: consolidated, on the GPUs the job may use and whose memory its plan
// fits; on a cluster of one kind of GPU, the job packed over all of them).
func bestStepTime(cost gpusched.CostModel, v *gpusched.View, j *gpusched.Job) (float64, error) {
	_, sc, err := gpusched.BestPlacement(j, v.Cluster, cost)
	if err != nil {
		return 0, err
	}
	return sc.Time, nil
}
