// This file holds SJF-BCO's offline planner: its input and output types, the bisection on
// the load threshold theta over kappa, and the tree of decisions that tries share.

package policy

import (
	"cmp"
	"fmt"
	"math"
	"slices"

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
	// linear (for tests) makes FA-FFP scan every server instead of using the start trees;
	// reference (for tests) plans every kappa by bisection, in order (see allLarge).
	fresh, linear, reference bool
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
	// The least busy-until time, each checked finite; the state's start is set here too, from
	// the last plan's start for the servers whose times are the same (see planState.scan).
	t0, bad := p.st.scan(c, busy)
	if bad >= 0 {
		p.st.scanned = false
		return fmt.Errorf("%w: sjf-bco: GPU %d busy until %v", ErrInvalidOptions, bad, busy[bad])
	}
	p.st.init(c, busy)
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
	// The kappas below the smallest demand (0 by default) place every job by LBSGF, whose
	// placements do not depend on theta: they all give one plan, that of the smallest of them
	// (k0), planned last (see allLarge). The plan chosen is the first in kappa order of least
	// makespan, then least sum of ends, as if every kappa were planned in order.
	rest, allLarge, k0 := kappas, false, 0
	if !p.reference && len(kappas) > 0 && kappas[0] < p.jobs[0].Job.GPUs {
		n := 0
		for n < len(kappas) && kappas[n] < p.jobs[0].Job.GPUs {
			n++
		}
		rest, allLarge, k0 = kappas[n:], true, kappas[0]
	}
	found := false
	var bestKappa int
	var bestTheta, bestMakespan, bestSum float64
	for _, k := range rest {
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
	if allLarge {
		ok, theta, makespan, sum, err := p.allLarge(k0, found, bestMakespan)
		if err != nil {
			return nil, err
		}
		// k0 comes before every other kappa: it wins ties.
		if ok && (!found || makespan < bestMakespan || (makespan == bestMakespan && sum <= bestSum)) {
			bestKappa, bestTheta = k0, theta
			p.winner = append(p.winner[:0], p.path...)
		}
	}
	plan := p.planOf(bestKappa, bestTheta, p.winner)
	for i := range plan.Jobs {
		plan.Jobs[i].GPUs = slices.Clone(plan.Jobs[i].GPUs)
	}
	return plan, nil
}

// allLarge plans every job by LBSGF (kappa k0, below every demand) and returns the plan's
// theta, makespan and sum of ends, the plan being left as p.path; ok is false when a job of
// it ends after bound (when bounded: the best makespan of the other kappas), so that it cannot
// be chosen, and it is left unfinished.
//
// Every placement of such a plan is the same whatever theta is (only whether the job ends by
// theta depends on it): a try for theta is feasible exactly when the plan's latest end is at
// most theta, so bisectPath's theta follows from that end without the tries, by the same
// arithmetic.
func (p *bcoPlanner) allLarge(k0 int, bounded bool, bound float64) (ok bool, theta, makespan, sum float64, err error) {
	if !bounded {
		bound = math.Inf(1)
	}
	// Every job ends by the largest finite theta: the try records each job's placement.
	if ok, err = p.tryPathBound(k0, math.MaxFloat64, bound); !ok || err != nil {
		return false, 0, 0, 0, err
	}
	last := math.Inf(-1)
	makespan = p.t0
	for _, c := range p.path {
		end := p.nodes[c].rec.e.end
		last = max(last, end)
		makespan = max(makespan, end)
		sum += end
	}
	// bisectPath, with "the try for theta is feasible" as last <= theta.
	lo := p.lowerBound()
	if last <= lo {
		return true, lo, makespan, sum, nil
	}
	hi := lo
	for i := 0; ; i++ {
		hi = p.t0 + 2*(hi-p.t0) + 1e-9
		if last <= hi {
			break
		}
		if i > 200 {
			return false, 0, 0, 0, fmt.Errorf("%w: sjf-bco: no feasible threshold found for kappa %d", ErrInvalidOptions, k0)
		}
	}
	for i := 0; i < p.opt.MaxBisections && hi-lo > p.opt.Tolerance*(hi-p.t0); i++ {
		if mid := lo + (hi-lo)/2; last <= mid {
			hi = mid
		} else {
			lo = mid
		}
	}
	return true, hi, makespan, sum, nil
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
	return p.tryPathBound(kappa, theta, math.Inf(1))
}

// tryPathBound is tryPath, also stopping with false as soon as a job ends after bound.
func (p *bcoPlanner) tryPathBound(kappa int, theta, bound float64) (bool, error) {
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
		if !r.ok || r.e.end > bound {
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
