package policy

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// SMDOptions configure SMD.
type SMDOptions struct {
	// Name is the report name (default "smd").
	Name string
	// Cost times each job's shapes (default gpusched.DefaultCost()).
	Cost gpusched.CostModel
	// Interval is the scheduling interval in seconds: at each multiple of it every job's
	// allocation is decided afresh (default 600). Between them, waiting jobs are fitted into
	// the free resources and running jobs keep theirs.
	Interval float64
	// Iterations estimates a job's total iterations (its work); remaining work is the estimate
	// minus the iterations done, at least 1% of the estimate. Default: 1,000 for every job.
	Iterations func(j *gpusched.Job) float64
	// ExactStates bounds the dynamic program: an interval's knapsack is solved exactly when
	// (GPUs + 1) x (cores + 1) x jobs is at most this (default 500,000), otherwise by the
	// greedy approximation.
	ExactStates int
	// LPVariables bounds the LP relaxation that gives an interval's lower bound: with more
	// variables (job x shape pairs) than this (default 300) the bound is the Lagrangian one
	// over the GPU capacity alone (equal to the LP's when cores and memory do not bind).
	LPVariables int
}

// smdPolicy is the sum-of-ratios multi-dimensional-knapsack decomposition scheduler after Yu, Wu,
// Ji and Liu, "A Sum-of-Ratios Multi-Dimensional-Knapsack Decomposition for DNN Resource
// Scheduling" (INFOCOM 2021, arXiv 2105.13855), for parameter-server jobs.
//
// Only the abstract (and a follow-up's one-line description: an inner resource-allocation
// problem inside an outer job-selection problem) was readable. What they state, and how this
// code does it:
//   - "a resource scheduling analytical model by considering DNN's layered structure": a PS
//     job's time per iteration under a shape (W workers, P shards) is the cost model's (package
//     ps: compute from the layer graph, shards cut from the layers, push, aggregate, pull).
//   - "a sum-of-ratios objective": at each scheduling interval, minimise the sum over the jobs
//     selected of their remaining work over the throughput their allocation gives (remaining
//     iterations x seconds per iteration: the remaining time if nothing changed).
//   - "decomposition into multi-dimensional knapsacks, resource types as dimensions": once the
//     jobs are selected each ratio depends only on the job's own shape, so the sum separates
//     and the interval's problem is a multiple-choice knapsack with one item per (job, shape),
//     cost the ratio, weights its GPUs, CPU cores and host memory (workers' and shards'), and
//     the cluster's free totals as capacities.
//   - exact "where small": dynamic programming over (GPUs used, cores used) when the table is
//     at most ExactStates cells (memory is carried along each cell's best path: exact when
//     memory does not bind); "a
//     documented approximation where large": every job starts at the shape of least resources,
//     then the upgrade with the largest drop in its ratio per unit of normalised extra
//     resource (sum over dimensions of extra / capacity) that still fits is applied, until none
//     helps (Toyoda's effective-gradient greedy); no guarantee is claimed for it.
//   - the outer job selection: jobs in order of least remaining time at their smallest shape
//     (SRPT's order), added while their smallest shapes fit the totals.
//
// Choices made here: the knapsack works on the cluster's totals, then each job is placed in
// the order selected, on the fewest servers with its shards beside its largest groups of
// workers (the repair of ps-locality from an empty placement), falling back to its smaller
// shapes, or waiting, when the servers' fragments do not hold it; a running job whose shape is
// unchanged keeps its GPUs; jobs that are not PS jobs have one shape (their own plan).
// Stats reports each interval's objective against its lower bound (the LP relaxation of the
// knapsack, or its Lagrangian bound over the GPUs when the LP is too large). It keeps state: not safe for
// concurrent use.
type smdPolicy struct {
	gate     gate
	name     string
	cost     gpusched.CostModel
	interval float64
	iters    func(*gpusched.Job) float64
	exact    int
	lpVars   int
	next     float64
	steps    map[gpusched.JobID][]smdItem // each job's shapes, ratio = seconds per iteration
	stats    PSStats
	rejects  []*gpusched.JobError // jobs of the current call that cannot be timed
}

// newSMD returns the scheduler.
func newSMD(opt SMDOptions) (*smdPolicy, error) {
	if opt.Interval == 0 {
		opt.Interval = 600
	}
	if !(opt.Interval > 0) || math.IsInf(opt.Interval, 0) {
		return nil, fmt.Errorf("%w: smd: Interval %v must be a finite time > 0", ErrInvalidOptions, opt.Interval)
	}
	if opt.ExactStates < 0 || opt.LPVariables < 0 {
		return nil, fmt.Errorf("%w: smd: ExactStates %d and LPVariables %d must be >= 0", ErrInvalidOptions, opt.ExactStates, opt.LPVariables)
	}
	if opt.ExactStates == 0 {
		opt.ExactStates = 500_000
	}
	if opt.LPVariables == 0 {
		opt.LPVariables = 300
	}
	if opt.Cost == nil {
		opt.Cost = gpusched.DefaultCost()
	}
	if opt.Iterations == nil {
		opt.Iterations = func(*gpusched.Job) float64 { return defaultIterations }
	}
	s := &smdPolicy{name: name(opt.Name, "smd"), cost: opt.Cost, interval: opt.Interval, iters: opt.Iterations,
		exact: opt.ExactStates, lpVars: opt.LPVariables, steps: make(map[gpusched.JobID][]smdItem)}
	if f, ok := opt.Cost.(costForgetter); ok {
		s.gate.forget = f // SMD admits by structure and times with the cost: forget leavers
	}
	return s, nil
}

// String returns "smd" (or Options.Name).
func (s *smdPolicy) String() string { return s.name }

// Stats returns the account of the intervals so far.
func (s *smdPolicy) Stats() PSStats { return s.stats }

// Schedule decides the allocation of the interval, or fits waiting jobs between intervals.
func (s *smdPolicy) Schedule(v gpusched.View) (gpusched.Decision, error) {
	if err := s.ready(); err != nil {
		return gpusched.Decision{}, err
	}
	s.rejects = s.rejects[:0]
	d, err := s.gate.decide(v, s.schedule)
	if err != nil {
		return d, err
	}
	d.Rejected = append(d.Rejected, s.rejects...)
	return d, nil
}

// smdItem is one (job, shape) of an interval's knapsack.
type smdItem struct {
	choice int
	gpus   int
	cpus   int
	mem    float64
	ratio  float64 // remaining iterations x seconds per iteration
}

type smdJob struct {
	st    *gpusched.JobStatus
	items []smdItem // by GPUs, then cores
	small int       // index of the item of least resources
	pos   int       // place among the call's candidates
}

// smdHeap orders SMD's candidate jobs by the ratio of their smallest shape, then by their
// place among the candidates (a strict order: pops come in the order of a stable sort by
// ratio).
type smdHeap struct{ jobs []smdJob }

func (q *smdHeap) less(a, b *smdJob) bool {
	if c := cmp.Compare(a.items[a.small].ratio, b.items[b.small].ratio); c != 0 {
		return c < 0
	}
	return a.pos < b.pos
}

func (q *smdHeap) len() int { return len(q.jobs) }

// init makes q.jobs a heap.
func (q *smdHeap) init() {
	for i := len(q.jobs)/2 - 1; i >= 0; i-- {
		q.down(i)
	}
}

// pop removes and returns the first job.
func (q *smdHeap) pop() smdJob {
	top := q.jobs[0]
	last := len(q.jobs) - 1
	q.jobs[0] = q.jobs[last]
	q.jobs = q.jobs[:last]
	q.down(0)
	return top
}

func (q *smdHeap) down(i int) {
	n := len(q.jobs)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && q.less(&q.jobs[r], &q.jobs[l]) {
			m = r
		}
		if !q.less(&q.jobs[m], &q.jobs[i]) {
			return
		}
		q.jobs[i], q.jobs[m] = q.jobs[m], q.jobs[i]
		i = m
	}
}

func (s *smdPolicy) schedule(v *gpusched.View) (gpusched.Decision, error) {
	full := v.Now >= s.next
	if full {
		s.next = (math.Floor(v.Now/s.interval) + 1) * s.interval
		forget(s.steps, v) // once per interval: memory follows the jobs, a scan per interval
	}
	d := gpusched.Decision{WakeAt: s.next}
	var st *psState
	var cands []*gpusched.JobStatus
	if full {
		// Every job is a candidate: free everything.
		st = newPSState(&gpusched.View{Now: v.Now, Cluster: v.Cluster, Unavailable: v.Unavailable})
		for i := range v.Running {
			cands = append(cands, &v.Running[i])
		}
	} else {
		// Between intervals every running job keeps its GPUs: a host that takes deltas gets
		// the starts only.
		if d.KeepOthers = v.AcceptsKeepOthers; !d.KeepOthers {
			d.Run = (*psState)(nil).keepRunning(v)
		}
		if len(v.Pending) == 0 || v.Free().Len() == 0 {
			return d, nil // nothing to place, or nowhere (newPSState's freeGPUs would be 0)
		}
		st = newPSState(v)
		if st.freeGPUs == 0 {
			return d, nil
		}
	}
	for i := range v.Pending {
		cands = append(cands, &v.Pending[i])
	}
	if len(cands) == 0 {
		return d, nil
	}
	capG, capC, capM := st.freeGPUs, 0, 0.0
	for srv := range st.free {
		if len(st.free[srv]) > 0 || full {
			capC = satAdd(capC, st.cpus[srv])
			capM += st.mem[srv]
		}
	}
	jobs := make([]smdJob, 0, len(cands))
	minG := math.MaxInt // the fewest GPUs of a job's smallest shape
	for _, c := range cands {
		jb, err := s.items(v, c)
		if err != nil {
			s.rejects = append(s.rejects, &gpusched.JobError{Job: c.Job.ID, Err: err})
			continue
		}
		if len(jb.items) > 0 {
			jobs = append(jobs, jb)
			minG = min(minG, jb.items[jb.small].gpus)
		}
	}
	// Outer problem: select in order of least remaining time at the smallest shape (ties in
	// the candidates' order), taken from a heap until no job's smallest shape fits the GPUs
	// left, so that a call that fills the free GPUs after a few jobs does not sort them all.
	q := smdHeap{jobs: jobs}
	for i := range q.jobs {
		q.jobs[i].pos = i
	}
	q.init()
	var sel []smdJob
	g, cc, m := 0, 0, 0.0
	for q.len() > 0 && capG-g >= minG {
		jb := q.pop()
		it := jb.items[jb.small]
		if g+it.gpus <= capG && cc+it.cpus <= capC && m+it.mem <= capM*(1+1e-12) {
			sel = append(sel, jb)
			g, cc, m = g+it.gpus, cc+it.cpus, m+it.mem
		}
	}
	if len(sel) == 0 {
		return d, nil
	}
	// Inner problem: the multiple-choice multi-dimensional knapsack.
	var pick []int
	if states := float64(capG+1) * float64(min(capC, 1<<30)+1) * float64(len(sel)); capC < math.MaxInt32/2 && states <= float64(s.exact) {
		pick = smdExact(sel, capG, capC, capM)
		s.stats.Exact++
	}
	if pick == nil {
		pick = smdGreedy(sel, capG, capC, capM)
	}
	obj := 0.0
	for i, jb := range sel {
		obj += jb.items[pick[i]].ratio
	}
	s.stats.Intervals++
	s.stats.Objective += obj
	s.stats.ObjectiveBound += s.bound(sel, capG, capC, capM, obj)
	// Placement: running jobs that keep their shape keep their GPUs, then the rest in order.
	placed := make([]bool, len(sel))
	if full {
		for i, jb := range sel {
			if jb.st.GPUs != nil && jb.items[pick[i]].choice == jb.st.PlanChoice {
				a := gpusched.Assignment{Job: jb.st.Job.ID, GPUs: jb.st.GPUs, PlanChoice: jb.st.PlanChoice}
				st.take(v.Cluster, jb.st.Job, a)
				d.Run = append(d.Run, a)
				placed[i] = true
			}
		}
	}
	for i, jb := range sel {
		if placed[i] {
			continue
		}
		// The chosen shape, then smaller ones (fewer GPUs first fit fragments better).
		for _, k := range smdFallback(jb, pick[i]) {
			if a, ok := s.place(v.Cluster, st, jb.st.Job, jb.items[k].choice); ok {
				st.take(v.Cluster, jb.st.Job, a)
				d.Run = append(d.Run, a)
				break
			}
		}
	}
	return d, nil
}

// items lists a job's shapes with their resources and ratios. A job's shapes, resources and
// seconds per iteration are computed once (the first time SMD sees it) and kept while it stays;
// each call sets the ratios from the remaining work.
func (s *smdPolicy) items(v *gpusched.View, st *gpusched.JobStatus) (smdJob, error) {
	j := st.Job
	tmpl, ok := s.steps[j.ID]
	if !ok {
		for k := range j.Choices() {
			if j.IsPS() && j.Reconfigurable() && k == 0 && j.PS.NumPS == 0 {
				continue // the baseline shape: the PS-aware choices replace it
			}
			w := j.GPUsFor(k)
			if w > v.Cluster.NumGPUs() {
				continue
			}
			gpus := make([]topology.GPUID, w)
			for i := range gpus {
				gpus[i] = topology.GPUID(i)
			}
			sc, err := s.cost.StepCost(j.WithPlan(k), v.Cluster, gpus, nil)
			if err != nil {
				return smdJob{}, fmt.Errorf("%w: job %q plan choice %d: %w", gpusched.ErrNoCost, j.ID, k, err)
			}
			o, _ := j.Option(k)
			it := smdItem{choice: k, gpus: w, cpus: o.CPUs * w, mem: o.HostMemory * float64(w), ratio: sc.Time}
			if j.PS != nil {
				np := max(j.NumPSOf(k), 1)
				it.cpus += np * j.PS.CPUs
				it.mem += float64(np) * j.PS.HostMemory
			}
			tmpl = append(tmpl, it)
		}
		slices.SortStableFunc(tmpl, func(a, b smdItem) int {
			if c := cmp.Compare(a.gpus, b.gpus); c != 0 {
				return c
			}
			return cmp.Compare(a.cpus, b.cpus)
		})
		s.steps[j.ID] = tmpl
	}
	est := s.iters(j)
	if !(est > 0) || math.IsInf(est, 0) {
		est = defaultIterations
	}
	rem := max(est-st.Iterations, est/100)
	jb := smdJob{st: st, items: make([]smdItem, len(tmpl))}
	for i, it := range tmpl {
		it.ratio *= rem // the template holds seconds per iteration
		jb.items[i] = it
	}
	return jb, nil
}

// place puts job j under plan choice k on the servers: a PS shape by ps-locality's repair from
// an empty placement, anything else whole on the fewest servers.
func (s *smdPolicy) place(c *topology.Cluster, st *psState, j *gpusched.Job, k int) (gpusched.Assignment, bool) {
	if np := j.NumPSOf(k); j.IsPS() && np > 0 {
		w := j.GPUsFor(k)
		if w > st.freeGPUs || np > w {
			return gpusched.Assignment{}, false
		}
		in := st.instance(j, k, psShape{w, np})
		picks := make([]psPick, len(in.Servers))
		if !repair(in, picks) {
			return gpusched.Assignment{}, false
		}
		return gpusched.Assignment{Job: j.ID, GPUs: st.gpusFor(picks), PlanChoice: k}, true
	}
	if k != 0 {
		return gpusched.Assignment{}, false
	}
	return st.placeWhole(c, j)
}

// smdFallback lists the items to try for a job: the chosen one, then those with fewer GPUs,
// largest first.
func smdFallback(jb smdJob, chosen int) []int {
	out := []int{chosen}
	for i := chosen - 1; i >= 0; i-- {
		if jb.items[i].gpus < jb.items[chosen].gpus || (jb.items[i].gpus == jb.items[chosen].gpus && jb.items[i].cpus < jb.items[chosen].cpus) {
			out = append(out, i)
		}
	}
	return out
}

func satAdd(a, b int) int {
	if a > math.MaxInt32-b {
		return math.MaxInt32
	}
	return a + b
}

// smdExact solves the multiple-choice knapsack exactly by dynamic programming over (GPUs,
// cores) used; memory, not a dimension of the table, is carried along the best path to each
// cell and checked against the total (exact whenever memory does not bind). It returns the item
// index of each job, or nil when the table finds no selection (the greedy then runs).
//
// The table spans only the GPUs and cores the jobs can use together (the sums of their
// largest items', within the capacities): cells beyond are unreachable. Cells are visited in
// order of GPUs, then cores, whatever the table's width, so the choices, ties included, are
// those of the table over the whole capacities. (Jobs that ask for no cores, as every job
// without host resources, make the table one column wide instead of one per core of the
// cluster: a800 clusters have 96 cores per server.)
func smdExact(sel []smdJob, capG, capC int, capM float64) []int {
	maxG, maxC := 0, 0
	for _, jb := range sel {
		g, c := 0, 0
		for _, it := range jb.items {
			g, c = max(g, it.gpus), max(c, it.cpus)
		}
		maxG, maxC = satAdd(maxG, g), satAdd(maxC, c)
	}
	capG, capC = min(capG, maxG), min(capC, maxC)
	W := (capG + 1) * (capC + 1)
	inf := math.Inf(1)
	cur, memUsed := make([]float64, W), make([]float64, W)
	nxt, nmem := make([]float64, W), make([]float64, W)
	for i := range cur {
		cur[i] = inf
	}
	cur[0] = 0
	choice := make([][]int16, len(sel))
	for jn, jb := range sel {
		for i := range nxt {
			nxt[i], nmem[i] = inf, 0
		}
		ch := make([]int16, W)
		for st, v := range cur {
			if v == inf {
				continue
			}
			g, c := st/(capC+1), st%(capC+1)
			for k, it := range jb.items {
				g2, c2 := g+it.gpus, c+it.cpus
				m2 := memUsed[st] + it.mem
				if g2 > capG || c2 > capC || m2 > capM*(1+1e-12) {
					continue
				}
				s2 := g2*(capC+1) + c2
				if v+it.ratio < nxt[s2] {
					nxt[s2], nmem[s2], ch[s2] = v+it.ratio, m2, int16(k)
				}
			}
		}
		cur, nxt = nxt, cur
		memUsed, nmem = nmem, memUsed
		choice[jn] = ch
	}
	best := -1
	for st, v := range cur {
		if v < inf && (best < 0 || v < cur[best]) {
			best = st
		}
	}
	if best < 0 {
		return nil
	}
	pick := make([]int, len(sel))
	st := best
	for jn := len(sel) - 1; jn >= 0; jn-- {
		k := int(choice[jn][st])
		pick[jn] = k
		it := sel[jn].items[k]
		g, c := st/(capC+1)-it.gpus, st%(capC+1)-it.cpus
		st = g*(capC+1) + c
	}
	return pick
}

// smdGreedy is the approximation for large intervals: every job at its item of least
// resources, then repeatedly the upgrade of largest ratio drop per unit of normalised extra
// resource that fits, until none lowers the objective.
func smdGreedy(sel []smdJob, capG, capC int, capM float64) []int {
	pick := make([]int, len(sel))
	g, c, m := 0, 0, 0.0
	for i, jb := range sel {
		pick[i] = jb.small
		it := jb.items[jb.small]
		g, c, m = g+it.gpus, c+it.cpus, m+it.mem
	}
	norm := func(dg, dc int, dm float64) float64 {
		x := float64(dg) / float64(max(capG, 1))
		if capC < math.MaxInt32/2 && capC > 0 {
			x += float64(dc) / float64(capC)
		}
		if !math.IsInf(capM, 1) && capM > 0 {
			x += dm / capM
		}
		return x
	}
	for {
		bi, bk, bestScore := -1, -1, 0.0
		for i, jb := range sel {
			cur := jb.items[pick[i]]
			for k, it := range jb.items {
				drop := cur.ratio - it.ratio
				if drop <= 0 {
					continue
				}
				dg, dc, dm := it.gpus-cur.gpus, it.cpus-cur.cpus, it.mem-cur.mem
				if g+dg > capG || c+dc > capC || m+dm > capM*(1+1e-12) {
					continue
				}
				score := drop / math.Max(norm(max(dg, 0), max(dc, 0), math.Max(dm, 0)), 1e-9)
				if score > bestScore {
					bi, bk, bestScore = i, k, score
				}
			}
		}
		if bi < 0 {
			return pick
		}
		cur, it := sel[bi].items[pick[bi]], sel[bi].items[bk]
		g, c, m = g+it.gpus-cur.gpus, c+it.cpus-cur.cpus, m+it.mem-cur.mem
		pick[bi] = bk
	}
}

// bound returns a lower bound on the interval's knapsack optimum: the larger of the Lagrangian
// bound over the GPU capacity (smdLagrange) and, when that leaves a gap to the objective
// reached (obj) and the LP has at most LPVariables variables and solves, the LP relaxation.
func (s *smdPolicy) bound(sel []smdJob, capG, capC int, capM, obj float64) float64 {
	lb := smdLagrange(sel, capG)
	if lb >= obj*(1-1e-12) {
		return lb
	}
	nv := 0
	for _, jb := range sel {
		nv += len(jb.items)
	}
	if nv > s.lpVars {
		return lb
	}
	b, err := smdLP(sel, capG, capC, capM)
	if err != nil {
		return lb
	}
	return max(b, lb)
}

// smdLagrange returns max over lambda >= 0 of L(lambda) = sum_j min_k (ratio_jk + lambda
// GPUs_jk) - lambda capG: relaxing the GPU capacity with multiplier lambda, a lower bound on the
// knapsack's optimum for every lambda (weak duality; at its maximum it equals the LP relaxation
// without the cores and memory rows). L is concave and piecewise linear; golden-section search
// finds its maximum to within 1e-9 of the range. lambda = 0 is each job at its fastest shape.
func smdLagrange(sel []smdJob, capG int) float64 {
	L := func(l float64) float64 {
		v := -l * float64(capG)
		for _, jb := range sel {
			b := math.Inf(1)
			for _, it := range jb.items {
				b = min(b, it.ratio+l*float64(it.gpus))
			}
			v += b
		}
		return v
	}
	hi := 0.0
	for _, jb := range sel {
		for _, it := range jb.items {
			hi = max(hi, it.ratio)
		}
	}
	lo, best := 0.0, L(0)
	const phi = 0.6180339887498949
	a, b := lo, hi
	x1, x2 := b-phi*(b-a), a+phi*(b-a)
	f1, f2 := L(x1), L(x2)
	for range 80 {
		if f1 < f2 {
			a, x1, f1 = x1, x2, f2
			x2 = a + phi*(b-a)
			f2 = L(x2)
		} else {
			b, x2, f2 = x2, x1, f1
			x1 = b - phi*(b-a)
			f1 = L(x1)
		}
	}
	return max(best, f1, f2)
}

// smdLP solves the knapsack's LP relaxation: x_{j,k} >= 0, sum_k x_{j,k} = 1 per job, total
// GPUs, cores and memory within the capacities.
func smdLP(sel []smdJob, capG, capC int, capM float64) (float64, error) {
	nv := 0
	for _, jb := range sel {
		nv += len(jb.items)
	}
	dims := []bool{true, capC < math.MaxInt32/2, !math.IsInf(capM, 1)}
	nd := 0
	for _, on := range dims {
		if on {
			nd++
		}
	}
	rows := len(sel) + nd
	A := mat.NewDense(rows, nv+nd, nil)
	b := make([]float64, rows)
	cost := make([]float64, nv+nd)
	v := 0
	for j, jb := range sel {
		for _, it := range jb.items {
			cost[v] = it.ratio
			A.Set(j, v, 1)
			r := len(sel)
			for d, on := range dims {
				if !on {
					continue
				}
				A.Set(r, v, [3]float64{float64(it.gpus), float64(it.cpus), it.mem / 1e9}[d])
				r++
			}
			v++
		}
		b[j] = 1
	}
	r := len(sel)
	for d, on := range dims {
		if !on {
			continue
		}
		A.Set(r, nv+r-len(sel), 1)
		b[r] = [3]float64{float64(capG), float64(capC), capM / 1e9}[d]
		r++
	}
	// A feasible starting basis: every job at its item of least resources (the selection
	// made them fit), the capacity rows' slacks taking the rest. It spares the simplex its
	// search for one (a QR factorisation per try, the bulk of the time).
	basic := make([]int, 0, rows)
	v = 0
	for _, jb := range sel {
		basic = append(basic, v+jb.small)
		v += len(jb.items)
	}
	for d := range nd {
		basic = append(basic, nv+d)
	}
	opt, _, err := simplexFrom(cost, A, b, basic)
	if errors.Is(err, errInfeasible) {
		return 0, err
	}
	return opt, err
}
