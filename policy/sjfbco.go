package policy

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// BCOJob is a job for SJF-BCO's offline planner: the job and the number of iterations the
// planner assumes it runs (the paper assumes it is known).
type BCOJob struct {
	Job        *gpusched.Job
	Iterations float64
}

// BCOPlacement is one job of an SJF-BCO plan: its GPUs and its planned start and end times in
// seconds (host clock).
type BCOPlacement struct {
	Job        *gpusched.Job
	GPUs       []topology.GPUID
	Start, End float64
}

// BCOPlan is an SJF-BCO schedule: every job's GPUs and planned times, in planning order
// (smallest GPU demand first), with the kappa that gave it, the per-GPU load threshold theta
// that the bisection found for that kappa, and the planned makespan (the latest planned end).
type BCOPlan struct {
	Kappa    int
	Theta    float64
	Makespan float64
	Jobs     []BCOPlacement
}

// BCOPlanOptions configure SJF-BCO's planner.
type BCOPlanOptions struct {
	// Cost gives a job's time per iteration on a placement under the link load of the planned
	// jobs running at the same time. Default: gpusched.DefaultCost() (the model-aware cost) for
	// jobs with a model, whether or not they also carry a StepTime (trace mappers set both; the
	// step time is then only the consolidated reference), and BCOCost{} for jobs known only by
	// their StepTime (set Alpha, Overhead and model bytes for the paper's contention model).
	Cost gpusched.CostModel
	// Lambda is the spread factor of LBSGF in (0, 1]: a job larger than kappa takes at most
	// ceil(Lambda x GPUs of the server) GPUs of each server it uses. Default 0.5.
	Lambda float64
	// Kappas are the kappa values to try. Default: 0 and every distinct GPU demand of the jobs.
	Kappas []int
	// Tolerance is the bisection's relative precision on theta. Default 1e-3.
	Tolerance float64
	// MaxBisections bounds the bisection steps for one kappa. Default 60.
	MaxBisections int
	// EarliestFit makes FA-FFP choose the server where a job ends earliest instead of the
	// first server (in index order) where it ends by theta. The online mode of SJFBCO sets it:
	// re-planning at every event, it must not plan a job behind a busy server while another
	// could run it now.
	EarliestFit bool

	// memo, set by SJFBCO's online mode, keeps the times per iteration the planner computed on
	// idle links between plans (see stepMemo).
	memo *stepMemo
}

// stepMemo holds times per iteration of jobs on placements with idle links, per job, as a cost
// model gave them: the answer depends on nothing else, so re-planning the same waiting jobs at
// the next event reuses them instead of evaluating the model again. A job's entries are dropped
// when it leaves the queue; all are dropped when the cluster changes.
type stepMemo struct {
	cluster *topology.Cluster
	jobs    map[gpusched.JobID]*jobMemo
	// kind[s] numbers server s's ServerSpec among the cluster's distinct specs (see
	// jobMemo.kind), kinds is their count; set on first use.
	kind  []int32
	kinds int
}

// jobMemo is what stepMemo keeps of one job.
type jobMemo struct {
	// exact: time per iteration by placement (appendGPUs), idle links; loaded: by placement and
	// the load on its links (see loadedStepTime).
	exact, loaded map[string]float64
	// kind[k]: time per iteration on GPUs of one server of kind k with idle links (0: not
	// known), for cost models under which that time depends only on the server's spec (see
	// kindInvariant).
	kind []float64
	// pack: time per iteration on the job's consolidated placement (0: not known), and the
	// servers it may use (nil: every server); both depend only on the job and the cluster.
	pack   float64
	ok     []bool
	okDone bool
}

// newStepMemo returns an empty memo for cluster c.
func newStepMemo(c *topology.Cluster) stepMemo {
	return stepMemo{cluster: c, jobs: map[gpusched.JobID]*jobMemo{}}
}

// job returns job id's entries, made on first use.
func (m *stepMemo) job(id gpusched.JobID) *jobMemo {
	jm := m.jobs[id]
	if jm == nil {
		jm = &jobMemo{}
		m.jobs[id] = jm
	}
	return jm
}

// kinds numbers the servers' specs once.
func (m *stepMemo) kindsOf(c *topology.Cluster) []int32 {
	if m.kind == nil {
		ids := map[topology.ServerSpec]int32{}
		m.kind = make([]int32, c.NumServers())
		for s := range m.kind {
			spec := c.Server(s).ServerSpec
			k, ok := ids[spec]
			if !ok {
				k = int32(len(ids))
				ids[spec] = k
			}
			m.kind[s] = k
		}
		m.kinds = len(ids)
	}
	return m.kind
}

// drop forgets job id's entries.
func (m *stepMemo) drop(id gpusched.JobID) { delete(m.jobs, id) }

// planCost is SJF-BCO's default cost: the model-aware cost for jobs with a model (a job's
// StepTime is ignored when it has a model, as gpusched.Job documents), BCOCost{} for the others.
type planCost struct{ model *gpusched.ModelCost }

// Forget drops what the model-aware cost compiled for a job that left (gpusched.ModelCost
// caches each job), so that SJF-BCO's memory stays bounded by the jobs in the system.
func (p planCost) Forget(j *gpusched.Job) { p.model.Forget(j) }

func (p planCost) StepCost(j *gpusched.Job, c *topology.Cluster, gpus []topology.GPUID, load topology.LinkLoad) (gpusched.StepCost, error) {
	if j.Model == nil {
		return BCOCost{}.StepCost(j, c, gpus, load)
	}
	return p.model.StepCost(j, c, gpus, load)
}

func (o *BCOPlanOptions) defaults() error {
	if o.Cost == nil {
		o.Cost = planCost{model: gpusched.DefaultCost()}
	}
	if o.Lambda == 0 {
		o.Lambda = 0.5
	}
	if !(o.Lambda > 0 && o.Lambda <= 1) {
		return fmt.Errorf("%w: sjf-bco: Lambda %v must be in (0, 1]", ErrInvalidOptions, o.Lambda)
	}
	if o.Tolerance == 0 {
		o.Tolerance = 1e-3
	}
	if !(o.Tolerance > 0 && o.Tolerance < 1) {
		return fmt.Errorf("%w: sjf-bco: Tolerance %v must be in (0, 1)", ErrInvalidOptions, o.Tolerance)
	}
	if o.MaxBisections == 0 {
		o.MaxBisections = 60
	}
	if o.MaxBisections < 1 {
		return fmt.Errorf("%w: sjf-bco: MaxBisections %d", ErrInvalidOptions, o.MaxBisections)
	}
	for _, k := range o.Kappas {
		if k < 0 {
			return fmt.Errorf("%w: sjf-bco: kappa %d is negative", ErrInvalidOptions, k)
		}
	}
	return nil
}

// PlanSJFBCO is SJF-BCO's offline algorithm (the paper's batch setting): it schedules the given
// jobs non-preemptively on the cluster, whose GPU g is busy until busyUntil[g] (nil: all free at
// time 0), and returns the plan with the least makespan over the kappa candidates.
//
// For one kappa and a per-GPU load threshold theta, the jobs are taken smallest GPU demand
// first (ties: arrival, id), and each is given GPUs and a start time, so that every GPU runs its
// jobs one after the other:
//
//   - a job with demand <= kappa by fragment-aware first-fit packing (FA-FFP): theta is the
//     height of every GPU's bin, and the job goes to the first server (lowest index) on which
//     it can end by theta, on the GPUs of that server (consecutive in busy-until order) that
//     leave the least idle time in front of it; so small jobs fill the first servers up to
//     theta and leave the others whole. If no single server can take it, it goes on the fewest
//     servers, largest first. (With EarliestFit, used online, the server is instead the one
//     giving the earliest end, then the fewest GPUs left idle at the start, then the lowest
//     index.)
//   - a larger job by least-busy-server GPU first (LBSGF): servers in increasing order of their
//     GPUs' mean busy-until time, each giving at most ceil(Lambda x its GPUs) of its
//     earliest-free GPUs (a second pass lifts the cap when the job would not fit otherwise).
//
// The job starts when all its GPUs are free and runs Iterations x the cost model's time per
// iteration on them, under the link load of the planned jobs running at its start (the paper's
// contention); the threshold is met if it ends by theta. Theta is found by bisection between a
// lower bound (the longest job, or the total work spread over all GPUs) and a feasible value
// found by doubling; the bisection takes feasibility as monotone in theta, as the paper's
// algorithm does. Candidates are pruned with a job's duration at its best placement on idle
// links (consolidated by Pack), taken as a lower bound of its duration anywhere: true of
// BCOCost and FixedCost; a cost model under which a spread placement is faster than a packed
// one may see a server skipped.
//
// Where the paper's text was not available, the choices above are this implementation's: the
// ordering keys, the fragment measure, the server order of LBSGF and the meaning of the spread
// factor, and the estimate of contention at the planned start (a job's duration is not revised
// when later-planned jobs overlap it).
func PlanSJFBCO(c *topology.Cluster, jobs []BCOJob, busyUntil []float64, opt BCOPlanOptions) (*BCOPlan, error) {
	return planWith(&bcoPlanner{}, c, jobs, busyUntil, opt)
}

// planWith is PlanSJFBCO on planner p (reset to the problem).
func planWith(p *bcoPlanner, c *topology.Cluster, jobs []BCOJob, busyUntil []float64, opt BCOPlanOptions) (*BCOPlan, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: sjf-bco: no cluster", ErrInvalidOptions)
	}
	if err := opt.defaults(); err != nil {
		return nil, err
	}
	if err := p.reset(c, jobs, busyUntil, opt); err != nil {
		return nil, err
	}
	return p.plan()
}

// bcoPlanner holds one planning problem. SJFBCO's online mode keeps one and resets it for
// every plan, so that its buffers are reused.
type bcoPlanner struct {
	c      *topology.Cluster
	opt    BCOPlanOptions
	jobs   []BCOJob // smallest demand first
	busy   []float64
	t0     float64
	minDur []float64                // duration at the best placement on idle links
	ok     [][]bool                 // per job, the servers it may use (nil: every server)
	jm     []*jobMemo               // per job, its memo entries
	kind   []int32                  // per server, its kind (stepMemo.kind); nil when no job uses kinds
	byKind []bool                   // per job, whether its time on one server depends only on the kind
	memo   *stepMemo                // opt.memo, or one of the planner's own
	own    stepMemo                 // the planner's memo when opt.memo is nil
	single []int32                  // per GPU, its server
	shared []bool                   // per server, whether its fabric is shared (IntraShared)
	rack   []int                    // per server, its rack (-1: none)
	packs  map[int][]topology.GPUID // Pack of every GPU, by demand
	key    []byte                   // a memo key being built
	cnt    []int                    // loads on a candidate's links
	// nodes are the recorded decisions (see try), root the first of the first decisions; st is
	// the state after the decisions of path (node indices, in planning order), placed their
	// entries; rng is the range of theta of the decision being made.
	nodes  []bcoNode
	root   int32
	st     planState
	path   []int32
	snap   []int32 // bisect's best path
	winner []int32 // plan's best path
	lb     float64 // lowerBound, once lbOK
	lbOK   bool
	// arena and linkArena hold the GPUs and links of the recorded decisions (see owned)
	arena     []topology.GPUID
	linkArena []topology.Link
	placed    []bcoEntry
	rng       thetaRange
	// scratch space of one decision
	cand, best, pick []topology.GPUID
	linkBuf          []topology.Link
	rackBuf          []int
	took             []int
	starts           []serverStart
	firsts           []int
	bySize           []int
	sameSize         bool // every server has as many GPUs
	// fresh (for tests) makes every try plan every job afresh, following no recorded decision;
	// linear (for tests) makes FA-FFP scan every server instead of using the start trees.
	fresh, linear bool
}

type bcoEntry struct {
	gpus       []topology.GPUID
	start, end float64
	links      []topology.Link
}

func newBCOPlanner(c *topology.Cluster, jobs []BCOJob, busyUntil []float64, opt BCOPlanOptions) (*bcoPlanner, error) {
	p := &bcoPlanner{}
	if err := p.reset(c, jobs, busyUntil, opt); err != nil {
		return nil, err
	}
	return p, nil
}

// reset sets the planner to a new planning problem.
func (p *bcoPlanner) reset(c *topology.Cluster, jobs []BCOJob, busyUntil []float64, opt BCOPlanOptions) error {
	n := c.NumGPUs()
	busy := p.busy[:0]
	if busyUntil != nil {
		if len(busyUntil) != n {
			return fmt.Errorf("%w: sjf-bco: busyUntil has %d entries for %d GPUs", ErrInvalidOptions, len(busyUntil), n)
		}
		busy = append(busy, busyUntil...)
	} else {
		busy = append(busy, make([]float64, n)...)
	}
	t0 := math.Inf(1)
	for g, t := range busy {
		if t-t != 0 { // NaN or infinite
			return fmt.Errorf("%w: sjf-bco: GPU %d busy until %v", ErrInvalidOptions, g, t)
		}
		if t < t0 || (t == 0 && t0 == 0 && math.Signbit(t)) { // min(t0, t), -0 below +0
			t0 = t
		}
	}
	js := append(p.jobs[:0], jobs...)
	for _, bj := range js {
		if bj.Job == nil {
			return fmt.Errorf("%w: sjf-bco: a job without a job", gpusched.ErrInvalidJob)
		}
		if bj.Job.GPUs < 1 || bj.Job.GPUs > n {
			return fmt.Errorf("%w: job %q needs %d GPUs, the cluster has %d", gpusched.ErrInvalidJob, bj.Job.ID, bj.Job.GPUs, n)
		}
		if !finiteNonNeg(bj.Iterations) {
			return fmt.Errorf("%w: job %q has %v iterations", gpusched.ErrInvalidJob, bj.Job.ID, bj.Iterations)
		}
	}
	slices.SortStableFunc(js, func(a, b BCOJob) int {
		if c := cmp.Compare(a.Job.GPUs, b.Job.GPUs); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Job.Arrival, b.Job.Arrival); c != 0 {
			return c
		}
		return cmp.Compare(a.Job.ID, b.Job.ID)
	})
	if p.c != c {
		p.packs = nil
		p.single, p.shared, p.sameSize = p.single[:0], p.shared[:0], true
		p.rack = p.rack[:0]
		for s := range c.NumServers() {
			p.shared = append(p.shared, c.Server(s).IntraShared)
			p.rack = append(p.rack, c.RackOf(s))
			_, k0 := c.GPUsOf(0)
			if _, k := c.GPUsOf(s); k != k0 {
				p.sameSize = false
			}
			_, k := c.GPUsOf(s)
			for range k {
				p.single = append(p.single, int32(s))
			}
		}
	}
	p.c, p.opt, p.jobs, p.busy, p.t0 = c, opt, js, busy, t0
	p.memo = opt.memo
	if p.memo == nil || p.memo.cluster != c {
		if p.own.cluster != c {
			p.own = newStepMemo(c)
		}
		p.memo = &p.own
	}
	p.minDur = resize(p.minDur, len(js))
	p.ok = resize(p.ok, len(js))
	p.jm = resize(p.jm, len(js))
	p.byKind = resize(p.byKind, len(js))
	p.kind = nil
	p.nodes, p.root, p.path, p.placed = p.nodes[:0], -1, p.path[:0], p.placed[:0]
	p.arena, p.linkArena = p.arena[:0], p.linkArena[:0]
	p.lbOK = false
	p.st.init(c, busy)
	_, kinds := opt.Cost.(planCost)
	var all topology.GPUSet
	for i, bj := range js {
		jm := p.memo.job(bj.Job.ID)
		p.jm[i] = jm
		p.byKind[i] = kinds && bj.Job.PS == nil
		if p.byKind[i] && p.kind == nil {
			p.kind = p.memo.kindsOf(c)
		}
		if jm.okDone && jm.pack > 0 {
			p.ok[i] = jm.ok
			p.minDur[i] = bj.Iterations * jm.pack
			continue
		}
		if all.Len() == 0 {
			all = c.AllGPUs()
		}
		pool := all
		p.ok[i] = nil
		if bj.Job.Constrained() || !c.UniformGPUs() {
			// Only the servers of the kind the job may use (and whose memory its plan fits).
			pool = bj.Job.EligibleIn(c, all)
			if pool.Len() < bj.Job.GPUs {
				return fmt.Errorf("%w: job %q needs %d GPUs, the cluster has %d it may use", gpusched.ErrTooLarge, bj.Job.ID, bj.Job.GPUs, pool.Len())
			}
			p.ok[i] = make([]bool, c.NumServers())
			for s := range p.ok[i] {
				first, k := c.GPUsOf(s)
				p.ok[i][s] = pool.CountRange(first, k) > 0
			}
		}
		jm.ok, jm.okDone = p.ok[i], true
		var gpus []topology.GPUID
		if p.ok[i] == nil {
			// Every GPU: the consolidated placement depends only on the demand.
			if p.packs == nil {
				p.packs = map[int][]topology.GPUID{}
			}
			if gpus = p.packs[bj.Job.GPUs]; gpus == nil {
				gpus, _ = c.Pack(pool, bj.Job.GPUs)
				p.packs[bj.Job.GPUs] = gpus
			}
		} else {
			gpus, _ = c.Pack(pool, bj.Job.GPUs)
		}
		t, err := p.stepTime(i, gpus)
		if err != nil {
			return err
		}
		jm.pack = t
		p.minDur[i] = bj.Iterations * t
	}
	return nil
}

// resize returns s with length n, reusing its array when it is large enough.
func resize[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}

// okServer reports whether job i (in planning order) may use server s.
func (p *bcoPlanner) okServer(i, s int) bool { return p.ok[i] == nil || p.ok[i][s] }

// stepTime returns job i's time per iteration on gpus (sorted) with idle links, from the memo
// where it holds it.
func (p *bcoPlanner) stepTime(i int, gpus []topology.GPUID) (float64, error) {
	jm := p.jm[i]
	if s := p.single[gpus[0]]; p.byKind[i] && s == p.single[gpus[len(gpus)-1]] {
		kind := p.kind[s]
		if int(kind) < len(jm.kind) && jm.kind[kind] > 0 {
			return jm.kind[kind], nil
		}
		t, err := p.cost(i, gpus, nil)
		if err == nil {
			if len(jm.kind) == 0 {
				jm.kind = make([]float64, p.memo.kinds)
			}
			jm.kind[kind] = t
		}
		return t, err
	}
	p.key = appendGPUs(p.key[:0], gpus)
	if t, ok := jm.exact[string(p.key)]; ok {
		return t, nil
	}
	t, err := p.cost(i, gpus, nil)
	if err == nil {
		if jm.exact == nil {
			jm.exact = map[string]float64{}
		}
		jm.exact[string(p.key)] = t
	}
	return t, err
}

// loadedStepTime returns job i's time per iteration on gpus (sorted), whose shared links are
// links, under the load of the planned jobs running at time t (loadAt). Under the default cost
// a job's time depends only on the load on its own links (its flows cross no other), so the
// memo keeps it by placement and that load.
func (p *bcoPlanner) loadedStepTime(i int, gpus []topology.GPUID, links []topology.Link, t float64) (float64, error) {
	cnt := resize(p.cnt, len(links))
	p.cnt = cnt
	clear(cnt)
	active := false
	for k := range p.placed {
		e := &p.placed[k]
		if len(e.links) == 0 || !(e.start <= t && t < e.end) {
			continue
		}
		active = true
		for _, l := range e.links {
			if k := slices.Index(links, l); k >= 0 {
				cnt[k]++
			}
		}
	}
	if !active {
		return p.stepTime(i, gpus) // loadAt is nil: idle links
	}
	if !p.byKind[i] {
		return p.cost(i, gpus, loadAt(p.placed, t))
	}
	jm := p.jm[i]
	p.key = appendGPUs(p.key[:0], gpus)
	for _, n := range cnt {
		p.key = append(p.key, byte(n), byte(n>>8), byte(n>>16), byte(n>>24))
	}
	if st, ok := jm.loaded[string(p.key)]; ok {
		return st, nil
	}
	st, err := p.cost(i, gpus, loadAt(p.placed, t))
	if err == nil {
		if jm.loaded == nil {
			jm.loaded = map[string]float64{}
		}
		jm.loaded[string(p.key)] = st
	}
	return st, err
}

// cost asks the cost model for job i's time per iteration on gpus under load.
func (p *bcoPlanner) cost(i int, gpus []topology.GPUID, load topology.LinkLoad) (float64, error) {
	j := p.jobs[i].Job
	sc, err := p.opt.Cost.StepCost(j, p.c, gpus, load)
	if err != nil {
		return 0, fmt.Errorf("sjf-bco: %w", err)
	}
	if !(sc.Time > 0) || math.IsInf(sc.Time, 1) {
		return 0, fmt.Errorf("%w: job %q has time per iteration %v", gpusched.ErrInvalidJob, j.ID, sc.Time)
	}
	return sc.Time, nil
}

// appendGPUs appends an encoding of gpus to b.
func appendGPUs(b []byte, gpus []topology.GPUID) []byte {
	for _, g := range gpus {
		b = append(b, byte(g), byte(g>>8), byte(g>>16), byte(g>>24))
	}
	return b
}

func (p *bcoPlanner) plan() (*BCOPlan, error) {
	if len(p.jobs) == 0 {
		return &BCOPlan{Theta: max(p.t0, 0), Makespan: max(p.t0, 0)}, nil
	}
	kappas := slices.Clone(p.opt.Kappas)
	if kappas == nil {
		kappas = []int{0}
		for _, bj := range p.jobs {
			kappas = append(kappas, bj.Job.GPUs)
		}
	}
	slices.Sort(kappas)
	kappas = slices.Compact(kappas)
	found := false
	var bestKappa int
	var bestTheta, bestMakespan, bestSum float64
	for _, k := range kappas {
		theta, err := p.bisectPath(k)
		if err != nil {
			return nil, err
		}
		makespan, sum := p.t0, 0.0
		for _, c := range p.snap {
			end := p.nodes[c].rec.e.end
			makespan = max(makespan, end)
			sum += end
		}
		if !found || makespan < bestMakespan || (makespan == bestMakespan && sum < bestSum) {
			found, bestKappa, bestTheta, bestMakespan, bestSum = true, k, theta, makespan, sum
			p.winner = append(p.winner[:0], p.snap...)
		}
	}
	plan := p.planOf(bestKappa, bestTheta, p.winner)
	for i := range plan.Jobs {
		plan.Jobs[i].GPUs = slices.Clone(plan.Jobs[i].GPUs)
	}
	return plan, nil
}

// lowerBound returns a lower bound on the makespan of any plan (computed once per problem).
func (p *bcoPlanner) lowerBound() float64 {
	if !p.lbOK {
		p.lb, p.lbOK = p.computeLowerBound(), true
	}
	return p.lb
}

func (p *bcoPlanner) computeLowerBound() float64 {
	lo, work := 0.0, 0.0
	for i, bj := range p.jobs {
		lo = max(lo, p.minDur[i])
		work += float64(bj.Job.GPUs) * p.minDur[i]
	}
	for _, t := range p.busy {
		work += t - p.t0
	}
	return p.t0 + max(lo, work/float64(len(p.busy)))
}

// bisect finds the least feasible theta for kappa (to the tolerance) and returns its plan.
func (p *bcoPlanner) bisect(kappa int) (*BCOPlan, error) {
	theta, err := p.bisectPath(kappa)
	if err != nil {
		return nil, err
	}
	return p.planOf(kappa, theta, p.snap), nil
}

// bisectPath is bisect, leaving the plan as its path of decisions in p.snap and returning its
// theta.
func (p *bcoPlanner) bisectPath(kappa int) (float64, error) {
	lo := p.lowerBound()
	ok, err := p.tryPath(kappa, lo)
	if err != nil {
		return 0, err
	}
	if ok {
		p.snap = append(p.snap[:0], p.path...)
		return lo, nil
	}
	hi := lo
	for i := 0; ; i++ {
		hi = p.t0 + 2*(hi-p.t0) + 1e-9
		if ok, err = p.tryPath(kappa, hi); err != nil {
			return 0, err
		} else if ok {
			break
		}
		if i > 200 {
			return 0, fmt.Errorf("%w: sjf-bco: no feasible threshold found for kappa %d", ErrInvalidOptions, kappa)
		}
	}
	// The plan of the least feasible theta so far is kept as its path of decisions.
	p.snap = append(p.snap[:0], p.path...)
	for i := 0; i < p.opt.MaxBisections && hi-lo > p.opt.Tolerance*(hi-p.t0); i++ {
		mid := lo + (hi-lo)/2
		ok, err := p.tryPath(kappa, mid)
		if err != nil {
			return 0, err
		}
		if ok {
			hi = mid
			p.snap = append(p.snap[:0], p.path...)
		} else {
			lo = mid
		}
	}
	return hi, nil
}

// planOf returns the plan of a path of decisions (see try) for kappa and theta.
func (p *bcoPlanner) planOf(kappa int, theta float64, path []int32) *BCOPlan {
	plan := &BCOPlan{Kappa: kappa, Theta: theta, Makespan: p.t0, Jobs: make([]BCOPlacement, len(path))}
	for i, c := range path {
		e := &p.nodes[c].rec.e
		plan.Jobs[i] = BCOPlacement{Job: p.jobs[i].Job, GPUs: e.gpus, Start: e.start, End: e.end}
		plan.Makespan = max(plan.Makespan, e.end)
	}
	return plan
}

// try plans every job for kappa and theta and returns the plan; it reports false as soon as a
// job cannot end by theta.
func (p *bcoPlanner) try(kappa int, theta float64) (*BCOPlan, bool, error) {
	ok, err := p.tryPath(kappa, theta)
	if !ok || err != nil {
		return nil, false, err
	}
	return p.planOf(kappa, theta, p.path), true, nil
}

// tryPath is try, leaving the plan as the path of decisions (p.path).
//
// A job's placement depends on theta only through comparisons of values with theta (see
// thetaRange), and on kappa only through the method (FA-FFP or LBSGF): the planner records
// each decision it makes with its method and the range of theta over which every such
// comparison comes out the same, in a tree whose paths are the sequences of decisions of its
// tries (a decision's children are the decisions made after it, for various thetas and
// methods). A later try (the next bisection step, or the next kappa) follows the recorded
// decisions whose method is its own and whose range holds its theta: the state each job sees
// is then the same, and so is the decision, without evaluating placements and costs again. A
// decision made afresh that is identical to a recorded one (for other thetas) joins it, so
// that the decisions recorded after it serve again. The state follows the path by undoing
// and making assignments.
func (p *bcoPlanner) tryPath(kappa int, theta float64) (bool, error) {
	parent := int32(-1)
	for i := range p.jobs {
		large := p.jobs[i].Job.GPUs > kappa
		c := p.child(parent)
		if p.fresh {
			c = -1
		}
		for ; c >= 0; c = p.nodes[c].next {
			if r := &p.nodes[c].rec; r.large == large && r.lo <= theta && theta < r.hi {
				break
			}
		}
		if c < 0 {
			p.undoTo(i)
			var (
				e   bcoEntry
				ok  bool
				err error
			)
			p.rng = thetaRange{lo: math.Inf(-1), hi: math.Inf(1)}
			if large {
				e, ok, err = p.lbsgf(i, theta)
			} else {
				e, ok, err = p.faffp(i, theta)
			}
			if err != nil {
				p.resetTree()
				return false, err
			}
			r := bcoRecord{e: e, ok: ok, large: large, thetaRange: p.rng}
			c = p.child(parent)
			if p.fresh {
				c = -1
			}
			for ; c >= 0; c = p.nodes[c].next {
				if old := &p.nodes[c].rec; old.same(&r) {
					if max(old.lo, r.lo) <= min(old.hi, r.hi) {
						old.lo, old.hi = min(old.lo, r.lo), max(old.hi, r.hi) // ranges that meet
					} else {
						old.thetaRange = r.thetaRange
					}
					break
				}
			}
			if c < 0 {
				c = int32(len(p.nodes))
				p.nodes = append(p.nodes, bcoNode{rec: r, child: -1, next: p.child(parent)})
				if parent < 0 {
					p.root = c
				} else {
					p.nodes[parent].child = c
				}
			}
		}
		r := &p.nodes[c].rec
		if !r.ok {
			return false, nil
		}
		if i >= len(p.path) || p.path[i] != c {
			p.undoTo(i)
			p.st.assign(p.single, r.e.gpus, r.e.end)
			p.placed = append(p.placed, r.e)
			p.path = append(p.path, c)
		}
		parent = c
	}
	return true, nil
}

// bcoNode is a decision in the planner's tree of decisions (see try): its record, its first
// child and its next sibling (node indices, -1 for none).
type bcoNode struct {
	rec         bcoRecord
	child, next int32
}

// child returns the first child of node n (-1: the first decision of every try).
func (p *bcoPlanner) child(n int32) int32 {
	if n < 0 {
		return p.root
	}
	return p.nodes[n].child
}

// undoTo brings the state back to the first n decisions of the path.
func (p *bcoPlanner) undoTo(n int) {
	if n < len(p.path) {
		p.st.undo(n)
		p.path, p.placed = p.path[:n], p.placed[:n]
	}
}

// resetTree forgets every recorded decision and brings the state back to the initial one.
func (p *bcoPlanner) resetTree() {
	p.undoTo(0)
	p.nodes, p.root = p.nodes[:0], -1
}

// thetaRange is a range lo <= theta < hi of the threshold over which the comparisons made so
// far with theta all come out the same.
type thetaRange struct{ lo, hi float64 }

// above reports whether x > theta and narrows the range to the thresholds for which the answer
// is the same. (A NaN x empties the range.)
func (r *thetaRange) above(x, theta float64) bool {
	if x > theta {
		r.hi = min(r.hi, x)
		return true
	}
	r.lo = max(r.lo, x)
	return false
}

// same reports whether two records hold the same decision (for possibly different thetas).
func (r *bcoRecord) same(o *bcoRecord) bool {
	return r.ok == o.ok && r.large == o.large && r.e.start == o.e.start && r.e.end == o.e.end && slices.Equal(r.e.gpus, o.e.gpus)
}

// bcoRecord is one job's decision in a try: its entry, whether it ends by theta, whether it
// was placed as a large job (LBSGF), and the thresholds for which the decision is the same.
type bcoRecord struct {
	e     bcoEntry
	ok    bool
	large bool
	thetaRange
}

// planState is the GPUs' busy-until times during one planning pass, with every server's GPUs
// kept sorted by busy-until time (then id) and the servers' sums of busy-until times, and a log
// to undo the assignments made since the initial state.
type planState struct {
	free []float64
	ids  []topology.GPUID // every server's GPUs, server after server: see sorted
	off  []int            // server s's GPUs are ids[off[s]:off[s+1]]
	sum  []float64
	// byMean lists the servers by mean busy-until time (least busy first), then index; means
	// holds the servers' means (sum / GPUs).
	byMean []int
	means  []float64
	c      *topology.Cluster // the cluster of the last init
	// trees[g]: the servers' start times for g GPUs (see tree); changed: the servers changed
	// by assignments and undos in this pass, in order
	trees   []startTree
	changed []int32
	// the orders of the last init, where the next starts
	initIDs    []topology.GPUID
	initByMean []int
	// The undo log: per assignment, where its entries of the logs below begin (marks), the
	// GPUs' former busy-until times, the touched servers' former sums and GPU orders, and the
	// positions in byMean they were taken from and put at.
	marks   []undoMark
	oldFree []gpuWas
	oldSrv  []srvWas
	oldIDs  []topology.GPUID
	touched []int
}

type undoMark struct{ gpus, srvs, ids int }

type gpuWas struct {
	g    topology.GPUID
	free float64
}

type srvWas struct {
	s        int
	sum      float64
	from, to int // positions in byMean
}

// sorted returns server s's GPUs by busy-until time, then id.
func (st *planState) sorted(s int) []topology.GPUID { return st.ids[st.off[s]:st.off[s+1]] }

func (st *planState) mean(s int) float64 { return st.means[s] }

// size returns server s's number of GPUs.
func (st *planState) size(s int) int { return st.off[s+1] - st.off[s] }

func (st *planState) meanLess(a, b int) int {
	if c := cmp.Compare(st.mean(a), st.mean(b)); c != 0 {
		return c
	}
	return cmp.Compare(a, b)
}

// init sets the state to the GPUs' initial busy-until times. On the cluster of the last
// pass, it starts from that pass's initial orders (the busy-until times of consecutive plans
// are much alike), which the sorts then only repair: the orders are total, so the result is
// the same whatever the starting order.
func (st *planState) init(c *topology.Cluster, busy []float64) {
	ns := c.NumServers()
	warm := st.c == c && len(st.off) == ns+1 && len(st.ids) == len(busy) && len(st.initIDs) == len(busy)
	if warm {
		copy(st.ids, st.initIDs)
		copy(st.byMean, st.initByMean)
	} else {
		st.c = c
		st.ids = resize(st.ids, len(busy))
		st.off = resize(st.off, ns+1)
		st.byMean = resize(st.byMean, ns)
		st.off[0] = 0
		for s := range ns {
			first, n := c.GPUsOf(s)
			st.off[s+1] = st.off[s] + n
			for i, gs := 0, st.sorted(s); i < n; i++ {
				gs[i] = first + topology.GPUID(i)
			}
			st.byMean[s] = s
		}
	}
	st.free = append(st.free[:0], busy...)
	st.sum = resize(st.sum, ns)
	st.means = resize(st.means, ns)
	for s := range ns {
		first, n := c.GPUsOf(s)
		sum := 0.0
		for _, t := range st.free[int(first) : int(first)+n] {
			sum += t
		}
		st.sum[s] = sum
		st.means[s] = sum / float64(n)
		st.resort(s)
	}
	// Insertion sort, bounded: a byMean far from the new order is sorted afresh.
	bm, moves := st.byMean, 0
	for i := 1; i < len(bm) && moves <= 8*len(bm); i++ {
		x := bm[i]
		j := i
		for ; j > 0 && st.meanLess(bm[j-1], x) > 0; j-- {
			bm[j] = bm[j-1]
		}
		bm[j] = x
		moves += i - j
	}
	if moves > 8*len(bm) {
		slices.SortFunc(bm, st.meanLess)
	}
	st.marks, st.oldFree, st.oldSrv, st.oldIDs = st.marks[:0], st.oldFree[:0], st.oldSrv[:0], st.oldIDs[:0]
	for g := range st.trees {
		st.trees[g].built = false
	}
	st.changed = st.changed[:0]
	st.initIDs = append(st.initIDs[:0], st.ids...)
	st.initByMean = append(st.initByMean[:0], st.byMean...)
}

// resort sorts server s's GPUs by busy-until time, then id (insertion sort: an assignment
// moves a few GPUs of an ordered list).
func (st *planState) resort(s int) {
	gs, free := st.sorted(s), st.free
	for i := 1; i < len(gs); i++ {
		x := gs[i]
		j := i
		for ; j > 0 && (free[gs[j-1]] > free[x] || (free[gs[j-1]] == free[x] && gs[j-1] > x)); j-- {
			gs[j] = gs[j-1]
		}
		gs[j] = x
	}
}

// assign makes gpus busy until end; server[g] is GPU g's server.
func (st *planState) assign(server []int32, gpus []topology.GPUID, end float64) {
	st.marks = append(st.marks, undoMark{gpus: len(st.oldFree), srvs: len(st.oldSrv), ids: len(st.oldIDs)})
	st.touched = st.touched[:0]
	for _, g := range gpus {
		s := int(server[g])
		if !slices.Contains(st.touched, s) {
			st.touched = append(st.touched, s)
			st.oldSrv = append(st.oldSrv, srvWas{s: s, sum: st.sum[s]})
			st.oldIDs = append(st.oldIDs, st.sorted(s)...)
		}
		st.oldFree = append(st.oldFree, gpuWas{g: g, free: st.free[g]})
		st.sum[s] += end - st.free[g]
		st.free[g] = end
	}
	for _, s := range st.touched {
		st.means[s] = st.sum[s] / float64(st.size(s))
	}
	// Every touched server leaves byMean before any goes back in its place: the list without
	// them is ordered, so each finds its place by bisection and the order is the same whatever
	// the order of the touched servers.
	was := st.oldSrv[len(st.oldSrv)-len(st.touched):]
	if len(was) == 1 {
		// One server: it moves from its place to its new one, the servers between shift.
		s := was[0].s
		st.resort(s)
		st.retree(s)
		from := slices.Index(st.byMean, s)
		was[0].from, was[0].to = from, st.move(from, st.placeOf(s, from))
		return
	}
	for i := range was {
		s := was[i].s
		st.resort(s)
		st.retree(s)
		j := slices.Index(st.byMean, s)
		st.byMean = slices.Delete(st.byMean, j, j+1)
		was[i].from = j
	}
	for i := range was {
		s := was[i].s
		j := sort.Search(len(st.byMean), func(k int) bool { return !st.less(st.byMean[k], s) })
		st.byMean = slices.Insert(st.byMean, j, s)
		was[i].to = j
	}
}

// less reports whether server a comes before server b in byMean.
func (st *planState) less(a, b int) bool {
	ma, mb := st.means[a], st.means[b]
	return ma < mb || (ma == mb && a < b)
}

// placeOf returns server s's place in byMean without its entry at index from (the first
// place whose server does not come before s).
func (st *planState) placeOf(s, from int) int {
	bm := st.byMean
	lo, hi := 0, len(bm)-1
	for lo < hi {
		h := int(uint(lo+hi) >> 1)
		x := h
		if h >= from {
			x++
		}
		if st.less(bm[x], s) {
			lo = h + 1
		} else {
			hi = h
		}
	}
	return lo
}

// move moves byMean's entry at index from to index to, shifting those between; it returns to.
func (st *planState) move(from, to int) int {
	bm := st.byMean
	s := bm[from]
	if to >= from {
		copy(bm[from:to], bm[from+1:to+1])
	} else {
		copy(bm[to+1:from+1], bm[to:from])
	}
	bm[to] = s
	return to
}

// undo takes back the assignments after the first n.
func (st *planState) undo(n int) {
	for len(st.marks) > n {
		m := st.marks[len(st.marks)-1]
		st.marks = st.marks[:len(st.marks)-1]
		was := st.oldSrv[m.srvs:]
		if len(was) == 1 {
			st.move(was[0].to, was[0].from)
		} else {
			for i := len(was) - 1; i >= 0; i-- {
				st.byMean = slices.Delete(st.byMean, was[i].to, was[i].to+1)
			}
		}
		ids := st.oldIDs[m.ids:]
		for i := len(was) - 1; i >= 0; i-- {
			s := was[i].s
			if len(was) > 1 {
				st.byMean = slices.Insert(st.byMean, was[i].from, s)
			}
			st.sum[s] = was[i].sum
			st.means[s] = was[i].sum / float64(st.size(s))
			gs := st.sorted(s)
			copy(gs, ids[len(ids)-len(gs):])
			ids = ids[:len(ids)-len(gs)]
		}
		for _, w := range st.oldFree[m.gpus:] {
			st.free[w.g] = w.free
		}
		for i := range was {
			st.retree(was[i].s)
		}
		st.oldFree, st.oldSrv, st.oldIDs = st.oldFree[:m.gpus], st.oldSrv[:m.srvs], st.oldIDs[:m.ids]
	}
}

// loadAt is the link load of the planned jobs running at time t.
func loadAt(placed []bcoEntry, t float64) topology.LinkLoad {
	var load topology.LinkLoad
	for _, e := range placed {
		if len(e.links) == 0 || !(e.start <= t && t < e.end) {
			continue
		}
		if load == nil {
			load = topology.LinkLoad{}
		}
		for _, l := range e.links {
			load[l]++
		}
	}
	return load
}

// finish completes a candidate of job i: start when all its GPUs are free, end after the
// job's duration. The entry's GPUs (sorted) are written to dst's array.
func (p *bcoPlanner) finish(i int, gpus, dst []topology.GPUID) (bcoEntry, error) {
	gpus = append(dst[:0], gpus...)
	slices.Sort(gpus)
	free := p.st.free
	start := math.Inf(-1)
	for _, g := range gpus {
		start = max(start, free[g])
	}
	var (
		t     float64
		err   error
		links []topology.Link
	)
	if s := p.single[gpus[0]]; !p.shared[s] && p.single[gpus[len(gpus)-1]] == s {
		// One server with a non-blocking fabric: the job crosses no shared link.
		t, err = p.stepTime(i, gpus)
	} else {
		links = p.linksOf(gpus)
		t, err = p.loadedStepTime(i, gpus, links, start)
	}
	if err != nil {
		return bcoEntry{}, err
	}
	return bcoEntry{gpus: gpus, start: start, end: start + p.jobs[i].Iterations*t, links: links}, nil
}

// linksOf is topology.Cluster.Links for sorted GPUs, without its maps: the servers of sorted
// GPUs come in increasing order.
func (p *bcoPlanner) linksOf(gpus []topology.GPUID) []topology.Link {
	out := p.linkBuf[:0]
	servers := 0
	racks := p.rackBuf[:0]
	for k := 0; k < len(gpus); {
		s := p.single[gpus[k]]
		n := 1
		for k+n < len(gpus) && p.single[gpus[k+n]] == s {
			n++
		}
		k += n
		servers++
		if n > 1 && p.shared[s] {
			out = append(out, topology.Link{Kind: topology.IntraLink, Index: int(s)})
		}
		if r := p.rack[s]; !slices.Contains(racks, r) {
			racks = append(racks, r)
		}
	}
	if servers > 1 {
		for k := 0; k < len(gpus); k++ {
			if s := p.single[gpus[k]]; k == 0 || s != p.single[gpus[k-1]] {
				out = append(out, topology.Link{Kind: topology.NICLink, Index: int(s)})
			}
		}
	}
	if len(racks) > 1 {
		slices.Sort(racks)
		for _, r := range racks {
			if r >= 0 {
				out = append(out, topology.Link{Kind: topology.UplinkLink, Index: r})
			}
		}
	}
	p.linkBuf, p.rackBuf = out, racks
	if len(out) == 0 {
		return nil
	}
	if cap(p.linkArena)-len(p.linkArena) < len(out) {
		p.linkArena = make([]topology.Link, 0, max(1024, 2*len(out), cap(p.linkArena)))
	}
	n := len(p.linkArena)
	p.linkArena = append(p.linkArena, out...)
	return p.linkArena[n:len(p.linkArena):len(p.linkArena)]
}

// owned returns e with GPUs of its own (finish writes them to scratch space), kept in the
// planner's arena: they live as long as the problem's decisions (a plan given out copies them).
func (p *bcoPlanner) owned(e bcoEntry) bcoEntry {
	if cap(p.arena)-len(p.arena) < len(e.gpus) {
		// A new block: the decisions recorded so far keep the old one.
		p.arena = make([]topology.GPUID, 0, max(4096, 2*len(e.gpus), cap(p.arena)))
	}
	n := len(p.arena)
	p.arena = append(p.arena, e.gpus...)
	e.gpus = p.arena[n:len(p.arena):len(p.arena)]
	return e
}

// faffp is fragment-aware first-fit packing.
func (p *bcoPlanner) faffp(i int, theta float64) (bcoEntry, bool, error) {
	st := &p.st
	bj, minDur := p.jobs[i], p.minDur[i]
	g, free := bj.Job.GPUs, st.free
	var best bcoEntry
	found := false
	if p.opt.EarliestFit {
		// The server where the job ends earliest; among equal ends, the fragment: the fewest
		// of the server's GPUs free by the start that the job leaves idle, then the least idle
		// time in front of the job on its own GPUs; then the lowest index. Servers are
		// evaluated from the earliest start, and skipped once even the job's shortest
		// duration could not beat the best end.
		var bestHole int
		var bestGap float64
		consider := func(s int) error {
			all := st.sorted(s)
			e, err := p.finish(i, all[:g], p.cand)
			if err != nil {
				return err
			}
			p.cand = e.gpus
			// A candidate ending after the best loses whatever theta is (the best ends by
			// theta): only the others are compared with theta, so that the decision's range of
			// theta (see try) is not narrowed by comparisons that cannot change it.
			if (found && e.end > best.end) || p.rng.above(e.end, theta) {
				return nil
			}
			hole, gap := 0, 0.0
			for i, x := range all {
				if i < g {
					gap += e.start - free[x]
				} else if free[x] <= e.start {
					hole++
				}
			}
			if !found || e.end < best.end || (e.end == best.end && (hole < bestHole || (hole == bestHole && gap < bestGap))) {
				best, bestHole, bestGap, found = e, hole, gap, true
				p.cand, p.best = p.best, p.cand
			}
			return nil
		}
		searched := false
		if p.ok[i] == nil && !p.linear {
			// The servers' start times for g kept in a tree (startTree): the servers where
			// the job starts earliest, then those that could beat the best end, are found
			// without a scan. Once the first pass finds a candidate, the second pass only
			// considers servers with start+minDur <= best end (the comparisons with theta it
			// would make then come out as already recorded: they are left out); if the first
			// pass was skipped (first+minDur > theta), every other server is skipped too and
			// records nothing new. Otherwise the scan below runs.
			tr := st.tree(g)
			first := tr.min()
			skipped := math.IsInf(first, 1) || p.rng.above(first+minDur, theta)
			if !skipped {
				for s := tr.next(0, first); s >= 0; s = tr.next(s+1, first) {
					if found && first+minDur > best.end {
						break
					}
					if err := consider(s); err != nil {
						return bcoEntry{}, false, err
					}
				}
			}
			if skipped || found {
				for s := tr.next(0, below(best.end, minDur)); found && s >= 0; s = tr.next(s+1, below(best.end, minDur)) {
					if start := tr.at(s); start == first || start+minDur > best.end {
						continue
					}
					if err := consider(s); err != nil {
						return bcoEntry{}, false, err
					}
				}
				searched = true
			}
		}
		if !searched {
			if err := p.scan(i, theta, &found, &best, consider); err != nil {
				return bcoEntry{}, false, err
			}
		}
		if found {
			return p.owned(best), true, nil
		}
	} else {
		// First fit: the first server with g GPUs that end the job by theta; on it, the g GPUs
		// (consecutive in busy-until order) that leave the least idle time in front of the job.
		bestGap := 0.0
		for s := range len(st.off) - 1 {
			if !p.okServer(i, s) {
				continue
			}
			all := st.sorted(s)
			for i0 := 0; i0+g <= len(all); i0++ {
				if p.rng.above(free[all[i0+g-1]]+minDur, theta) {
					break // later windows start later still
				}
				e, err := p.finish(i, all[i0:i0+g], p.cand)
				if err != nil {
					return bcoEntry{}, false, err
				}
				p.cand = e.gpus
				if p.rng.above(e.end, theta) {
					continue
				}
				gap := 0.0
				for _, x := range all[i0 : i0+g] {
					gap += e.start - free[x]
				}
				if !found || gap < bestGap || (gap == bestGap && e.end < best.end) {
					best, bestGap, found = e, gap, true
					p.cand, p.best = p.best, p.cand
				}
			}
			if found {
				return p.owned(best), true, nil
			}
		}
	}
	// Fewest servers: the largest first, the least busy first among equals (then the lowest
	// index): byMean's order, stably sorted by size.
	servers := st.byMean
	if !p.sameSize {
		servers = append(p.bySize[:0], st.byMean...)
		p.bySize = servers
		slices.SortStableFunc(servers, func(a, b int) int { return cmp.Compare(st.size(b), st.size(a)) })
	}
	gpus := p.pick[:0]
	for _, s := range servers {
		if len(gpus) == g {
			break
		}
		if !p.okServer(i, s) {
			continue
		}
		for _, x := range st.sorted(s) {
			if len(gpus) == g {
				break
			}
			gpus = append(gpus, x)
		}
	}
	p.pick = gpus
	e, err := p.finish(i, gpus, p.cand)
	if err != nil {
		return bcoEntry{}, false, err
	}
	return p.owned(e), !p.rng.above(e.end, theta), nil
}

// scan is FA-FFP's earliest-fit search over every server that may take job i (in two passes:
// the servers where it starts earliest, then the others), in index order.
func (p *bcoPlanner) scan(i int, theta float64, found *bool, best *bcoEntry, consider func(s int) error) error {
	st := &p.st
	g, minDur, free := p.jobs[i].Job.GPUs, p.minDur[i], st.free
	first := math.Inf(1)
	cands, firsts := p.starts[:0], p.firsts[:0]
	ok, ids, off := p.ok[i], st.ids, st.off
	for s := range len(off) - 1 {
		if off[s+1]-off[s] >= g && (ok == nil || ok[s]) {
			start := free[ids[off[s]+g-1]]
			cands = append(cands, serverStart{s: s, start: start})
			if start < first {
				first, firsts = start, firsts[:0]
			}
			if start == first {
				firsts = append(firsts, s)
			}
		}
	}
	p.starts, p.firsts = cands, firsts
	// (Once a candidate is found, ending by theta, the test against theta is implied by the
	// test against the best.)
	if len(firsts) > 0 && !p.rng.above(first+minDur, theta) {
		for _, s := range firsts {
			if *found && first+minDur > best.end {
				break
			}
			if err := consider(s); err != nil {
				return err
			}
		}
	}
	for _, c := range cands {
		start := c.start
		if start == first || (*found && start+minDur > best.end) || p.rng.above(start+minDur, theta) {
			continue
		}
		if err := consider(c.s); err != nil {
			return err
		}
	}
	return nil
}

// below returns a bound on the starts x with x+d <= b (rounded): every such x is at most the
// bound (b-d, widened by far more than the rounding errors of both sums).
func below(b, d float64) float64 {
	return b - d + (math.Abs(b)+math.Abs(d))*1e-15
}

// startTree holds, for one GPU demand g, every server's start time for a job of g GPUs (the
// busy-until time of its g-th earliest-free GPU; +Inf where it has fewer GPUs) in a tree of
// minima over the servers' indices.
type startTree struct {
	built  bool
	synced int       // the entries of planState.changed it reflects
	n      int       // servers
	size   int       // leaves: a power of two >= n
	t      []float64 // t[size+s]: server s; t[k] = min(t[2k], t[2k+1])
}

// tree returns the start tree for g, built on first use in this pass and brought up to date
// with the servers that assign and undo changed since its last use.
func (st *planState) tree(g int) *startTree {
	for len(st.trees) <= g {
		st.trees = append(st.trees, startTree{})
	}
	tr := &st.trees[g]
	if !tr.built {
		n := len(st.off) - 1
		tr.n, tr.size = n, 1
		for tr.size < n {
			tr.size *= 2
		}
		tr.t = resize(tr.t, 2*tr.size)
		for s := range tr.size {
			tr.t[tr.size+s] = st.startOf(s, g)
		}
		for k := tr.size - 1; k >= 1; k-- {
			tr.t[k] = min(tr.t[2*k], tr.t[2*k+1])
		}
		tr.built = true
		tr.synced = len(st.changed)
	}
	// Bring the servers changed since the last use up to date.
	for _, s := range st.changed[tr.synced:] {
		k := tr.size + int(s)
		tr.t[k] = st.startOf(int(s), g)
		for k > 1 {
			k /= 2
			m := min(tr.t[2*k], tr.t[2*k+1])
			if math.Float64bits(m) == math.Float64bits(tr.t[k]) {
				break // the nodes above keep their minima
			}
			tr.t[k] = m
		}
	}
	tr.synced = len(st.changed)
	return tr
}

// startOf returns server s's start time for g GPUs (+Inf where it has fewer).
func (st *planState) startOf(s, g int) float64 {
	if s >= len(st.off)-1 || st.size(s) < g {
		return math.Inf(1)
	}
	return st.free[st.ids[st.off[s]+g-1]]
}

// retree notes that server s changed, for the trees to catch up when next used.
func (st *planState) retree(s int) { st.changed = append(st.changed, int32(s)) }

func (tr *startTree) min() float64 { return tr.t[1] }

func (tr *startTree) at(s int) float64 { return tr.t[tr.size+s] }

// next returns the first server from index from whose start is at most x, or -1.
func (tr *startTree) next(from int, x float64) int {
	if from >= tr.n {
		return -1
	}
	k := tr.size + from
	for !(tr.t[k] <= x) {
		for k&1 == 1 {
			k /= 2
		}
		if k == 0 {
			return -1
		}
		k++
	}
	for k < tr.size {
		k *= 2
		if !(tr.t[k] <= x) {
			k++
		}
	}
	if s := k - tr.size; s < tr.n {
		return s
	}
	return -1
}

// serverStart is a server and the time a job could start there.
type serverStart struct {
	s     int
	start float64
}

// lbsgf is least-busy-server GPU first with spread factor lambda.
func (p *bcoPlanner) lbsgf(i int, theta float64) (bcoEntry, bool, error) {
	st := &p.st
	g := p.jobs[i].Job.GPUs
	took := resize(p.took, len(st.off)-1)
	clear(took)
	p.took = took
	gpus := p.pick[:0]
	for _, s := range st.byMean {
		if len(gpus) == g {
			break
		}
		if !p.okServer(i, s) {
			continue
		}
		list := st.sorted(s)
		limit := min(len(list), max(1, int(math.Ceil(p.opt.Lambda*float64(len(list))))))
		for took[s] < limit && len(gpus) < g {
			gpus = append(gpus, list[took[s]])
			took[s]++
		}
	}
	for _, s := range st.byMean {
		if len(gpus) == g {
			break
		}
		if !p.okServer(i, s) {
			continue
		}
		list := st.sorted(s)
		for took[s] < len(list) && len(gpus) < g {
			gpus = append(gpus, list[took[s]])
			took[s]++
		}
	}
	p.pick = gpus
	e, err := p.finish(i, gpus, p.cand)
	if err != nil {
		return bcoEntry{}, false, err
	}
	return p.owned(e), !p.rng.above(e.end, theta), nil
}

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

// SJFBCO is the SJF-BCO scheduler (Smallest Job First with Balanced Contention and Overhead;
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
type SJFBCO struct {
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

// NewSJFBCO returns an SJF-BCO scheduler.
func NewSJFBCO(opt SJFBCOOptions) (*SJFBCO, error) {
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
	s := &SJFBCO{gate: gate{cost: opt.Cost}, opt: opt, backfill: opt.Order != Strict, iters: map[gpusched.JobID]float64{}}
	// A job estimated at NaN, infinite or negative iterations is rejected alone; its estimate
	// is fixed at admission (Iterations is still asked once per job).
	s.gate.admit = func(j *gpusched.Job, _ *topology.Cluster) error {
		_, err := s.estimate(j)
		return err
	}
	return s, nil
}

// String returns "sjf-bco" (or SJFBCOOptions.Name).
func (s *SJFBCO) String() string { return name(s.opt.Name, "sjf-bco") }

// LastPlan returns the plan SJF-BCO made last (nil before any).
func (s *SJFBCO) LastPlan() *BCOPlan { return s.last }

func (s *SJFBCO) estimate(j *gpusched.Job) (float64, error) {
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
func (s *SJFBCO) Schedule(v gpusched.View) (gpusched.Decision, error) {
	if err := s.ready(); err != nil {
		return gpusched.Decision{}, err
	}
	return s.gate.decide(v, s.schedule)
}

func (s *SJFBCO) schedule(vp *gpusched.View) (gpusched.Decision, error) {
	v := *vp
	if s.opt.Batch {
		return s.scheduleBatch(&v)
	}
	s.follow(&v)
	run := keepAll(&v)
	if len(v.Pending) == 0 {
		return gpusched.Decision{Run: run}, nil
	}
	free := v.Free()
	if s.opt.Replan > 0 && s.plan != nil && s.planOn == v.Cluster && v.Now < s.planAt+s.opt.Replan {
		return s.replanWake(gpusched.Decision{Run: s.followPlan(run, free)}, free, v.Now), nil
	}
	waiting := s.queue.smallest(s.opt.Window)
	if waiting[0].GPUs > free.Len() {
		return gpusched.Decision{Run: run}, nil
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
	return s.replanWake(gpusched.Decision{Run: run}, free, v.Now), nil
}

// replanWake asks, with Replan > 0, to be called when the next plan is due if a waiting job
// fits in the GPUs the decision leaves free, so that a job that arrived after the last plan
// does not wait for another event when it could start (a job that does not fit waits for a
// completion, which calls the scheduler anyway).
func (s *SJFBCO) replanWake(d gpusched.Decision, free topology.GPUSet, now float64) gpusched.Decision {
	if s.opt.Replan > 0 && s.queue.live > 0 && s.queue.smallest(1)[0].GPUs <= free.Len() {
		d.WakeAt = minWake(d.WakeAt, s.planAt+s.opt.Replan, now)
	}
	return d
}

// followPlan starts the jobs of the last plan that still wait and whose planned GPUs are all
// free, in planning order, passing over a job any of whose GPUs a job planned before it and
// still waiting needs (the batch mode's rule).
func (s *SJFBCO) followPlan(run []gpusched.Assignment, free topology.GPUSet) []gpusched.Assignment {
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
func (s *SJFBCO) follow(v *gpusched.View) {
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
// link load it was computed for.
type bcoStep struct {
	gpus  []topology.GPUID
	links []topology.Link
	// load[k]: the other jobs' flows on links[k] when time was computed; valid: time was.
	load  []int
	time  float64
	valid bool
	// job is the job; pos its index in the view's running jobs at the last call; iters its
	// estimated iterations (SJFBCO.estimate) once known.
	job     *gpusched.Job
	pos     int
	iters   float64
	itersOK bool
}

// busyUntil estimates when each GPU frees: now for free GPUs, the estimated end of the job on it
// otherwise. The slice is reused by the next call.
func (s *SJFBCO) busyUntil(v *gpusched.View) ([]float64, error) {
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
		} else if sc = s.steps[st.Job.ID]; sc != nil && sc.pos < len(prev) && prev[sc.pos] == sc {
			next = sc.pos + 1
		}
		if sc == nil || !slices.Equal(sc.gpus, st.GPUs) {
			sc = &bcoStep{gpus: slices.Clone(st.GPUs), links: c.Links(st.GPUs), job: st.Job}
		}
		sc.pos = i
		steps[i] = sc
		if len(sc.links) == 0 && sc.valid && sc.itersOK {
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
func (s *SJFBCO) writeEnd(busy []float64, st *gpusched.JobStatus, sc *bcoStep, now float64) {
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
func (s *SJFBCO) scheduleBatch(v *gpusched.View) (gpusched.Decision, error) {
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
	run := keepAll(v)
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
	return gpusched.Decision{Run: run}, nil
}
