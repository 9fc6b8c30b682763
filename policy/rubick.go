package policy

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// RubickOptions configure Rubick.
type RubickOptions struct {
	// Cost times each plan of a job on a consolidated placement of an idle cluster: the
	// resource-sensitivity curves. Default gpusched.DefaultCost().
	Cost gpusched.CostModel
	// MinGain is the least relative gain in normalised throughput that justifies
	// reconfiguring a running job (a restart). Default 0.1 (10%).
	MinGain float64
	// MaxReconfigurations bounds how often one job is reconfigured (the artifact's restart
	// limit of 5). Default 5; negative: never reconfigure running jobs.
	MaxReconfigurations int
	// Name, when set, replaces "rubick" in reports.
	Name string
}

// rubickPolicy is the reconfiguring policy of Rubick (Zhang et al., MLSys'25, arXiv 2408.08586; the
// artifact's sched/morphling_sched/policy/morphling.py, where it is called Morphling): it
// chooses each job's execution plan (Job.Plans) together with its GPUs, CPU cores and host
// memory, guided by the performance model, so that the cluster's total normalised throughput
// is high while guaranteed jobs keep their promised speed.
//
// For each job it builds a resource-sensitivity curve: the throughput (samples per second) of
// every plan the job allows, timed by the cost model on a consolidated placement of an idle
// cluster, normalised by the throughput of the job's own plan (the user's request; 1.0). At
// every call:
//
//  1. Running jobs keep their plan and GPUs (a change is a restart, paid at the host's
//     reconfiguration cost).
//  2. Waiting jobs are admitted in order: guaranteed jobs (Job.Guaranteed) first, then the
//     rest by the slope of their curve at its first point (normalised throughput per GPU of
//     their most efficient plan), steepest first, ties by arrival. A guaranteed job gets the
//     plan of fewest GPUs whose throughput on the placement it is given (timed there by the
//     cost model) reaches its target, its own plan's on a consolidated placement (within
//     1%); a best-effort job the plan of highest throughput per GPU (fewest GPUs among
//     equals). If it does not fit and the job is guaranteed, best-effort running jobs are
//     shrunk to a smaller plan (the one losing the least normalised throughput per GPU
//     freed) until it fits, and it waits if none can be; a best-effort job takes GPUs from
//     them only while what they lose per GPU is less than what it gains (its slope).
//  3. Leftover GPUs go to the jobs that gain most: repeatedly, the job and larger plan with
//     the highest gain in normalised throughput per extra GPU, if the gain is at least MinGain
//     and the job has been reconfigured fewer than MaxReconfigurations times. Guaranteed jobs
//     are left out: a running one is not paused for a restart (its guarantee is its speed
//     while it runs), and one starting now keeps the placement that was checked.
//
// Plans are placed by their shape: data-parallel plans of up to one server's GPUs on one
// server (best fit), and 3D-parallel plans with every tensor-parallel group inside one
// server, the servers with most free GPUs first, ranks in order so that a pipeline's stages
// sit together. A plan is placed only where every server it uses has the CPU cores and host
// memory its workers need (topology.ServerSpec.CPUs, HostMemory).
//
// Jobs that are not reconfigurable run their own plan: for them Rubick is a
// guarantee-first, slope-ordered backfilling policy.
//
// Differences from the artifact's code, which this implementation does not copy (the paper's
// description is followed where the two disagree):
//   - morphling.py's alloc_per_node tests `if "llama" or "3B" in targeted_job`, which is always
//     true, so it never takes GPUs from other jobs for a job that needs them; here a guaranteed
//     job does take them from best-effort jobs, as the paper describes.
//   - The artifact orders jobs by ascending slope (sorted with reverse=False); the paper's
//     greedy serves the largest marginal gain first, which is what step 2 does.
//   - The artifact's curves come from its own fitted formula per model; here from package
//     graph's model (per-GPU-type constants fitted on the A800 data, package perf).
//   - The artifact admits a guaranteed job once its curve's throughput, which ignores where
//     the job is placed, reaches two thirds of its target (`1.5 * throughput >= sla_perf`),
//     and may reconfigure it later; here the throughput on the actual placement must reach
//     the target, and a running guaranteed job is not reconfigured. On the multi-tenant
//     workload this raised the share of guaranteed jobs that met their target (sim.Summary.
//     GuaranteeAttainment) from 72% to 98% and shortened the average JCT (BENCHMARKS.md).
//   - The CPU and bandwidth dimensions of the artifact's curves (threads 1..64, bandwidth
//     0..10) are the plans' CPU threads under ZeRO-Offload (the options a job lists) and the
//     links of the actual placement, which the cost model times.
//
// Rubick keeps state between calls (curves, reconfiguration counts) and is not safe for
// concurrent use.
type rubickPolicy struct {
	opt    RubickOptions
	name   string
	tput   map[string]float64 // model|plan -> samples per second on a consolidated placement
	curves map[gpusched.JobID]*rubickCurve
	reconf map[gpusched.JobID]int
	broken rubickBroken // a deliberately wrong variant, for tests that must catch it

	// Per-call scratch, kept between calls so that a call allocates little: the curves of the
	// last view's running and pending jobs in the view's order (found without a map lookup
	// when the host keeps its lists in order), and the records of one call.
	runCurves, pendCurves posCache[rubickCurve]
	noRoom                []placeShape
	host                  hostFree
	slab                  []rubickJob
	jobsBuf, waitBuf      []*rubickJob
	candsBuf              []*rubickJob
}

// rubickBroken names the deliberately wrong variants of Rubick that its property test must
// catch (rubick_property_test.go).
type rubickBroken uint8

const (
	rubickSound             rubickBroken = iota
	rubickIgnoresHost                    // places workers without counting CPU cores and host memory
	rubickIgnoresGuarantees              // orders guaranteed jobs among the best-effort ones
	rubickIgnoresMemory                  // takes plans that cannot run for fast ones
	rubickFullPath                       // never takes the idle path (the reference for it)
	rubickIdleIgnoresShrink              // calls a call idle although a running job may shrink
	rubickIdleIgnoresFree                // calls a call idle although GPUs are free
)

type rubickCurve struct {
	tput []float64 // per plan choice, normalised by choice 0's (0: cannot run)
}

// newRubick returns a Rubick scheduler.
func newRubick(opt RubickOptions) (*rubickPolicy, error) {
	switch {
	case math.IsNaN(opt.MinGain) || opt.MinGain < 0 || math.IsInf(opt.MinGain, 0):
		return nil, fmt.Errorf("policy: rubick: min gain %v must be finite and >= 0", opt.MinGain)
	}
	if opt.Cost == nil {
		opt.Cost = gpusched.DefaultCost()
	}
	if opt.MinGain == 0 {
		opt.MinGain = 0.1
	}
	if opt.MaxReconfigurations == 0 {
		opt.MaxReconfigurations = 5
	}
	return &rubickPolicy{opt: opt, name: name(opt.Name, "rubick"), tput: map[string]float64{},
		curves: map[gpusched.JobID]*rubickCurve{}, reconf: map[gpusched.JobID]int{}}, nil
}

// String returns "rubick" (or RubickOptions.Name).
func (r *rubickPolicy) String() string { return r.name }

// JobCompleted forgets a job that left.
func (r *rubickPolicy) JobCompleted(c gpusched.Completion) {
	if !observed(r.ready, c) {
		return
	}
	delete(r.curves, c.Job.ID)
	delete(r.reconf, c.Job.ID)
}

// Throughput returns the normalised throughput of each plan choice of j (choice 0, the job's
// own plan, is 1; 0 for a choice that cannot run on c): the job's resource-sensitivity curve.
func (r *rubickPolicy) Throughput(j *gpusched.Job, c *topology.Cluster) ([]float64, error) {
	cu, err := r.curve(j, c)
	if err != nil {
		return nil, err
	}
	return slices.Clone(cu.tput), nil
}

func (r *rubickPolicy) curve(j *gpusched.Job, c *topology.Cluster) (*rubickCurve, error) {
	if cu, ok := r.curves[j.ID]; ok {
		return cu, nil
	}
	// The job's own form (a GPU count, finite features, a cost); its other plan options are
	// checked one by one below, an unrunnable one counting as no throughput.
	own := *j
	own.Plans = nil
	if err := own.Validate(nil); err != nil {
		return nil, err
	}
	cu := &rubickCurve{tput: make([]float64, j.Choices())}
	all := c.AllGPUs()
	for k := range cu.tput {
		t, err := r.absolute(j, k, c, all)
		if err != nil {
			if k == 0 {
				return nil, err
			}
			if r.broken == rubickIgnoresMemory {
				cu.tput[k] = 2 * cu.tput[0]
			}
			continue
		}
		cu.tput[k] = t
	}
	if !(cu.tput[0] > 0) {
		return nil, fmt.Errorf("%w: job %q: its own plan has no throughput", gpusched.ErrNoCost, j.ID)
	}
	base := cu.tput[0]
	for k := range cu.tput {
		cu.tput[k] /= base
	}
	r.curves[j.ID] = cu
	return cu, nil
}

// absolute returns iterations per second of plan choice k of j alone on a consolidated,
// shape-respecting placement of c (shared by every job of the same model and plan).
func (r *rubickPolicy) absolute(j *gpusched.Job, k int, c *topology.Cluster, all topology.GPUSet) (float64, error) {
	w := j.WithPlan(k)
	key := ""
	if w.Model != nil {
		key = fmt.Sprintf("%s|%v|%d", w.Model.Name(), w.Plan, len(w.Plan.Stages))
		if t, ok := r.tput[key]; ok {
			return t, nil
		}
	}
	probe := w
	if key != "" {
		cp := *w
		cp.ID = gpusched.JobID("rubick-curve|" + key) // one cache entry per (model, plan)
		probe = &cp
	}
	// On a cluster of one kind of GPU, the job consolidated over all of them; on a mixed one,
	// the fastest of its placements on each kind it may use and over all (a plan that fits
	// only the 80 GB GPUs is timed there, not on the T4s first in the cluster).
	pools := []topology.GPUSet{all}
	if !c.UniformGPUs() {
		pools = append(kindPools(c, w), all)
	}
	var (
		best     float64
		firstErr error
	)
	for _, pool := range pools {
		g, ok := shapePlace(c, pool, nil, w, 0)
		if !ok {
			continue
		}
		sc, err := r.opt.Cost.StepCost(probe, c, g, nil)
		switch {
		case err != nil:
			err = fmt.Errorf("%w: job %q plan choice %d (%v): %w", gpusched.ErrInvalidJob, j.ID, k, w.Plan, err)
		case !(sc.Time > 0):
			err = fmt.Errorf("%w: job %q plan choice %d: step time %v", gpusched.ErrNoCost, j.ID, k, sc.Time)
		}
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		best = max(best, 1/sc.Time)
	}
	switch {
	case best > 0:
	case firstErr != nil:
		return 0, firstErr
	default:
		return 0, fmt.Errorf("%w: job %q plan choice %d fits nowhere on %s", gpusched.ErrTooLarge, j.ID, k, c.Name())
	}
	if key != "" {
		r.tput[key] = best
	}
	return best, nil
}

// kindPools returns, for each kind of GPU of c that job w may use (in order of its first
// server), the set of those GPUs.
func kindPools(c *topology.Cluster, w *gpusched.Job) []topology.GPUSet {
	var (
		specs []topology.GPUSpec
		pools []topology.GPUSet
	)
	for s := range c.NumServers() {
		spec := c.Server(s).GPU
		if !w.Eligible(spec) {
			continue
		}
		k := slices.Index(specs, spec)
		if k < 0 {
			specs = append(specs, spec)
			pools = append(pools, topology.NewGPUSet(c.NumGPUs()))
			k = len(pools) - 1
		}
		first, n := c.GPUsOf(s)
		for g := first; g < first+topology.GPUID(n); g++ {
			pools[k].Add(g)
		}
	}
	return pools
}

// hostFree tracks the free CPU cores and host memory of each server (nil slices: not
// accounted).
type hostFree struct {
	cpus []int
	mem  []float64
}

// reset makes h the free host resources of c's idle servers, reusing h's slices.
func (h *hostFree) reset(c *topology.Cluster) {
	h.cpus, h.mem = resize(h.cpus, c.NumServers()), resize(h.mem, c.NumServers())
	for s := range c.NumServers() {
		sp := c.Server(s)
		h.cpus[s], h.mem[s] = sp.CPUs, sp.HostMemory
		if sp.CPUs == 0 {
			h.cpus[s] = math.MaxInt32
		}
		if sp.HostMemory == 0 {
			h.mem[s] = math.Inf(1)
		}
	}
}

// room returns how many workers of job w server s can still host.
func (h *hostFree) room(s int, w *gpusched.Job) int {
	if h == nil {
		return math.MaxInt32
	}
	n := math.MaxInt32
	if w.CPUs > 0 {
		n = min(n, h.cpus[s]/w.CPUs)
	}
	if w.HostMemory > 0 {
		n = min(n, int(math.Floor(h.mem[s]/w.HostMemory*(1+1e-12))))
	}
	return n
}

func (h *hostFree) take(c *topology.Cluster, w *gpusched.Job, gpus []topology.GPUID, sign int) {
	if h == nil || (w.CPUs == 0 && w.HostMemory == 0) {
		return // nothing to count (subtracting zeros changes no count, not even an infinite one)
	}
	for _, g := range gpus {
		s := c.ServerOf(g)
		h.cpus[s] -= sign * w.CPUs
		h.mem[s] -= float64(sign) * w.HostMemory
	}
}

// placeShape is what shapePlace's success depends on of the job it places, besides the free
// GPUs and host resources: GPUs, tensor-parallel degree, host needs and eligibility.
type placeShape struct {
	gpus, tp, cpus int
	mem, minMem    float64
	gpuType        string
}

// shapeOf returns w's placeShape.
func shapeOf(w *gpusched.Job) placeShape {
	return placeShape{gpus: w.GPUs, tp: max(1, w.Plan.TP), cpus: w.CPUs, mem: w.HostMemory,
		minMem: w.MinGPUMemory, gpuType: w.GPUType}
}

// shapePlace places w (a job under one plan) on free GPUs: up to one server's worth on the
// best-fitting single server; larger ones with every tensor-parallel group inside a server,
// servers with most free GPUs first. It honours the servers' free CPU cores and host memory.
func shapePlace(c *topology.Cluster, free topology.GPUSet, h *hostFree, w *gpusched.Job, _ int) ([]topology.GPUID, bool) {
	n := w.GPUs
	if n > free.Len() {
		return nil, false
	}
	type srv struct{ s, free int }
	var ss []srv
	for s := range c.NumServers() {
		first, m := c.GPUsOf(s)
		f := free.CountRange(first, m)
		if !w.Eligible(c.Server(s).GPU) {
			f = 0
		}
		f = min(f, h.room(s, w))
		if f > 0 {
			ss = append(ss, srv{s, f})
		}
	}
	take := func(s, k int, out []topology.GPUID) []topology.GPUID {
		first, m := c.GPUsOf(s)
		for g := first; g < first+topology.GPUID(m) && k > 0; g++ {
			if free.Contains(g) {
				out = append(out, g)
				k--
			}
		}
		return out
	}
	// Best fit on one server.
	best := -1
	for i, x := range ss {
		if x.free >= n && (best < 0 || x.free < ss[best].free) {
			best = i
		}
	}
	if best >= 0 {
		return take(ss[best].s, n, nil), true
	}
	tp := max(1, w.Plan.TP)
	slices.SortStableFunc(ss, func(a, b srv) int { return cmp.Compare(b.free, a.free) })
	var out []topology.GPUID
	left := n
	for _, x := range ss {
		k := min(left, x.free/tp*tp)
		if k == 0 {
			continue
		}
		out = take(x.s, k, out)
		left -= k
		if left == 0 {
			return out, true
		}
	}
	return nil, false
}

type rubickJob struct {
	st     *gpusched.JobStatus
	cu     *rubickCurve
	choice int
	gpus   []topology.GPUID
	run    bool
	order  float64
	idx    int // position in Schedule's list of jobs
	// guar and arrival are the job's Guaranteed and Arrival, beside the order they sort by.
	guar    bool
	arrival float64
}

// cachedCurve returns j's curve as curve does, found first in pc's walk of the last view
// (the same curve: curve memoises it by job id) and recorded there for the next one.
func (r *rubickPolicy) cachedCurve(pc *posCache[rubickCurve], j *gpusched.Job, c *topology.Cluster) (*rubickCurve, error) {
	if cu := pc.get(j); cu != nil {
		pc.put(j, cu)
		return cu, nil
	}
	cu, err := r.curve(j, c)
	if err == nil {
		pc.put(j, cu)
	}
	return cu, err
}

// record returns a cleared record of this call's slab (whose capacity Schedule sized for
// every job of the view, so that earlier records stay where they are).
func (r *rubickPolicy) record() *rubickJob {
	r.slab = append(r.slab, rubickJob{})
	return &r.slab[len(r.slab)-1]
}

// Schedule implements gpusched.Scheduler.
func (r *rubickPolicy) Schedule(v gpusched.View) (gpusched.Decision, error) {
	if err := r.ready(); err != nil {
		return gpusched.Decision{}, err
	}
	if err := checkView(&v); err != nil {
		return gpusched.Decision{}, err
	}
	c := v.Cluster
	var d gpusched.Decision
	free := v.Free()
	if r.idle(&v, free) {
		return r.idleDecision(&v, c), nil
	}
	h := &r.host
	h.reset(c)
	if r.broken == rubickIgnoresHost {
		h = nil
	}
	if n := len(v.Running) + len(v.Pending); cap(r.slab) < n {
		r.slab = make([]rubickJob, 0, n+n/4)
	}
	defer r.release()
	r.runCurves.begin()
	defer r.runCurves.end()
	r.pendCurves.begin()
	defer r.pendCurves.end()
	jobs := r.jobsBuf[:0]
	// 1. Running jobs keep their plan and GPUs.
	for i := range v.Running {
		st := &v.Running[i]
		cu, err := r.cachedCurve(&r.runCurves, st.Job, c)
		if err != nil {
			d.Rejected = append(d.Rejected, &gpusched.JobError{Job: st.Job.ID, Err: err})
			continue
		}
		rj := r.record()
		*rj = rubickJob{st: st, cu: cu, choice: st.PlanChoice, gpus: st.GPUs, run: true}
		if v.Unavailable.Len() > 0 && slices.ContainsFunc(st.GPUs, v.Unavailable.Contains) {
			rj.run, rj.gpus = false, nil // a drained server: place it again below
			for _, g := range st.GPUs {
				if !v.Unavailable.Contains(g) {
					free.Add(g)
				}
			}
		} else {
			h.take(c, st.Job.WithPlan(st.PlanChoice), st.GPUs, 1)
		}
		jobs = append(jobs, rj)
	}
	// 2. Waiting jobs: guaranteed first, then by slope.
	wait := r.waitBuf[:0]
	for _, rj := range jobs {
		if !rj.run {
			wait = append(wait, rj)
		}
	}
	for i := range v.Pending {
		st := &v.Pending[i]
		cu, err := r.cachedCurve(&r.pendCurves, st.Job, c)
		if err != nil {
			d.Rejected = append(d.Rejected, &gpusched.JobError{Job: st.Job.ID, Err: err})
			continue
		}
		rj := r.record()
		*rj = rubickJob{st: st, cu: cu}
		jobs = append(jobs, rj)
		wait = append(wait, rj)
	}
	anyGuar, minNeed := false, math.MaxInt
	for _, rj := range wait {
		rj.choice = r.entryChoice(rj)
		k := rj.choice
		n := rj.st.Job.GPUsFor(k)
		rj.order = rj.cu.tput[k] / float64(n)
		rj.guar, rj.arrival = rj.st.Job.Guaranteed, rj.st.Job.Arrival
		anyGuar = anyGuar || rj.guar
		minNeed = min(minNeed, n)
	}
	// The running jobs shrinkOne may shrink, in the order of jobs; a job started below joins
	// them in its place. (Without them, shrinkOne costs nothing: a queue of jobs that are not
	// reconfigurable no longer makes each call quadratic.)
	for i, rj := range jobs {
		rj.idx = i
	}
	r.jobsBuf, r.waitBuf = jobs, wait // kept for the next call (release clears them)
	cands := r.candsBuf[:0]
	defer func() { r.candsBuf = cands }()
	for _, rj := range jobs {
		if r.shrinkable(rj) {
			cands = append(cands, rj)
		}
	}
	// With no running job to shrink and no guaranteed job waiting, a waiting job is placed
	// under its entry plan on the free GPUs or not at all: when none has so few GPUs as are
	// free, none is placed, whatever their order.
	if len(cands) == 0 && !anyGuar && minNeed > free.Len() {
		wait = wait[:0]
	}
	// The waiting jobs are taken in order (guaranteed first, then by slope, then by arrival,
	// then as listed) from a heap, so that a call that fills the free GPUs after a few of them
	// does not sort them all.
	q := waitHeap{jobs: wait, guar: r.broken != rubickIgnoresGuarantees}
	q.init()
	// The shapes of best-effort jobs that found no room since resources were last freed:
	// admissions only take GPUs, cores and memory, and a shape that fits nowhere fits nowhere
	// on less (shapePlace needs the sum over servers of their usable GPUs, rounded down to
	// whole tensor-parallel groups, to reach its GPUs), so a job of such a shape is not placed
	// again until a shrink frees some.
	noRoom := r.noRoom[:0]
	defer func() { r.noRoom = noRoom[:0] }()
	for q.len() > 0 {
		if free.Len() == 0 && len(cands) == 0 {
			break // shapePlace places nothing on no free GPUs, and no shrink can free any
		}
		rj := q.pop()
		maxLoss := math.Inf(1) // a guaranteed job takes what it needs
		if !rj.st.Job.Guaranteed {
			maxLoss = rj.order // a best-effort one, only what gains more than it costs
		}
		var (
			g     []topology.GPUID
			k     int
			ok    bool
			shape placeShape
		)
		known := !rj.guar && len(noRoom) > 0 // shape is set
		if known {
			shape = shapeOf(rj.st.Job.WithPlan(rj.choice))
		}
		if !known || !slices.Contains(noRoom, shape) {
			g, k, ok = r.admit(c, free, h, rj)
		}
		for !ok {
			if !r.shrinkOne(c, cands, free, h, maxLoss) {
				break
			}
			noRoom = noRoom[:0]
			g, k, ok = r.admit(c, free, h, rj)
		}
		if !ok {
			if !rj.guar {
				if !known {
					shape = shapeOf(rj.st.Job.WithPlan(rj.choice))
				}
				if !slices.Contains(noRoom, shape) {
					noRoom = append(noRoom, shape)
				}
			}
			continue
		}
		rj.choice, rj.gpus, rj.run = k, g, true
		free.RemoveAll(topology.SetOf(g...))
		h.take(c, rj.st.Job.WithPlan(k), g, 1)
		if r.shrinkable(rj) {
			i, _ := slices.BinarySearchFunc(cands, rj.idx, func(x *rubickJob, p int) int { return cmp.Compare(x.idx, p) })
			cands = slices.Insert(cands, i, rj)
		}
	}
	// 3. Leftovers to those who gain most.
	for free.Len() > 0 {
		var (
			best     *rubickJob
			bestK    int
			bestG    []topology.GPUID
			bestGain float64
		)
		for _, rj := range jobs {
			if !rj.run || !rj.st.Job.Reconfigurable() {
				continue
			}
			if rj.st.GPUs != nil && (rj.st.Job.Guaranteed || r.reconf[rj.st.Job.ID] >= r.opt.MaxReconfigurations) {
				continue // a guaranteed job is not paused once it runs
			}
			if rj.st.Job.Guaranteed && rj.st.GPUs == nil {
				continue // nor widened where its speed on the placement was not checked
			}
			cur := rj.cu.tput[rj.choice]
			nCur := rj.st.Job.GPUsFor(rj.choice)
			pool := free.Clone()
			pool.AddAll(topology.SetOf(rj.gpus...))
			h.take(c, rj.st.Job.WithPlan(rj.choice), rj.gpus, -1)
			for k, t := range rj.cu.tput {
				n := rj.st.Job.GPUsFor(k)
				if n <= nCur || !(t > cur*(1+r.opt.MinGain)) || n > pool.Len() {
					continue
				}
				gain := (t - cur) / float64(n-nCur)
				if best != nil && gain <= bestGain {
					continue
				}
				g, ok := shapePlace(c, pool, h, rj.st.Job.WithPlan(k), 0)
				if !ok {
					continue
				}
				best, bestK, bestG, bestGain = rj, k, g, gain
			}
			h.take(c, rj.st.Job.WithPlan(rj.choice), rj.gpus, 1)
		}
		if best == nil {
			break
		}
		h.take(c, best.st.Job.WithPlan(best.choice), best.gpus, -1)
		free.AddAll(topology.SetOf(best.gpus...))
		best.choice, best.gpus = bestK, bestG
		free.RemoveAll(topology.SetOf(bestG...))
		h.take(c, best.st.Job.WithPlan(bestK), bestG, 1)
	}
	// For a host that takes deltas (View.AcceptsKeepOthers), only the jobs that start or change
	// are listed, and the running jobs left out are stopped.
	delta := v.AcceptsKeepOthers
	d.KeepOthers = delta
	if !delta {
		n := 0
		for _, rj := range jobs {
			if rj.run {
				n++
			}
		}
		d.Run = make([]gpusched.Assignment, 0, n)
	}
	for _, rj := range jobs {
		running := rj.st.GPUs != nil
		if !rj.run {
			if delta && running {
				d.Stop = append(d.Stop, rj.st.Job.ID)
			}
			continue
		}
		changed := running && (rj.st.PlanChoice != rj.choice || !sameGPUs(rj.st.GPUs, rj.gpus))
		if changed {
			r.reconf[rj.st.Job.ID]++
		}
		if delta && running && !changed {
			continue
		}
		d.Run = append(d.Run, gpusched.Assignment{Job: rj.st.Job.ID, GPUs: rj.gpus, PlanChoice: rj.choice})
	}
	return d, nil
}

// sameGPUs reports whether a and b list the same GPUs in the same order; a running job that
// keeps its GPUs holds the view's own slice, which is compared by address first.
func sameGPUs(a, b []topology.GPUID) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || &a[0] == &b[0] || slices.Equal(a, b)
}

// idle reports whether Schedule can change nothing in view v with the given free GPUs: the
// host takes deltas, no GPU is free or drained and no running job may be shrunk. Such a call
// places no waiting job (a job starts only on free GPUs or on what a shrink frees, guaranteed
// ones too: they shrink best-effort jobs but never stop one), widens none (leftovers need free
// GPUs) and stops none (only a drained server displaces a running job), so its decision lists
// nothing but the jobs whose curves fail; about a third of the calls on the Philly file at 8x
// are such calls. The test is conservative: a running job it cannot rule out as shrinkable
// sends the call down the full path.
func (r *rubickPolicy) idle(v *gpusched.View, free topology.GPUSet) bool {
	if !v.AcceptsKeepOthers || (free.Len() > 0 && r.broken != rubickIdleIgnoresFree) || v.Unavailable.Len() > 0 || r.broken == rubickFullPath {
		return false
	}
	for i := range v.Running {
		j := v.Running[i].Job
		if !j.Guaranteed && j.Reconfigurable() && r.reconf[j.ID] < r.opt.MaxReconfigurations && r.broken != rubickIdleIgnoresShrink {
			return false // shrinkable
		}
	}
	return true
}

// idleDecision is Schedule's decision for a call that idle allows: every job's curve is looked
// up in the same walks as the full path (which keeps the caches in step and rejects the jobs
// whose curves fail, running ones first, in the view's order), and nothing else changes.
func (r *rubickPolicy) idleDecision(v *gpusched.View, c *topology.Cluster) gpusched.Decision {
	d := gpusched.Decision{KeepOthers: true}
	for _, w := range []struct {
		pc   *posCache[rubickCurve]
		list []gpusched.JobStatus
	}{{&r.runCurves, v.Running}, {&r.pendCurves, v.Pending}} {
		w.pc.begin()
		for i := range w.list {
			j := w.list[i].Job
			if _, err := r.cachedCurve(w.pc, j, c); err != nil {
				d.Rejected = append(d.Rejected, &gpusched.JobError{Job: j.ID, Err: err})
			}
		}
		w.pc.end()
	}
	return d
}

// waitHeap orders Rubick's waiting jobs: guaranteed ones first (when guar), then by order
// (normalised throughput per GPU) decreasing, then by arrival, then by idx, their place in
// the view (a strict order, so that pops come in the order of a stable sort of the jobs as
// listed by the first three keys).
type waitHeap struct {
	jobs []*rubickJob
	guar bool
}

func (q *waitHeap) less(a, b *rubickJob) bool {
	if a.guar != b.guar && q.guar {
		return a.guar
	}
	if c := cmp.Compare(b.order, a.order); c != 0 {
		return c < 0
	}
	if c := cmp.Compare(a.arrival, b.arrival); c != 0 {
		return c < 0
	}
	return a.idx < b.idx
}

func (q *waitHeap) len() int { return len(q.jobs) }

// init makes q.jobs a heap.
func (q *waitHeap) init() {
	for i := len(q.jobs)/2 - 1; i >= 0; i-- {
		q.down(i)
	}
}

// pop removes and returns the first job.
func (q *waitHeap) pop() *rubickJob {
	top := q.jobs[0]
	last := len(q.jobs) - 1
	q.jobs[0] = q.jobs[last]
	q.jobs[last] = nil
	q.jobs = q.jobs[:last]
	q.down(0)
	return top
}

func (q *waitHeap) down(i int) {
	n := len(q.jobs)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && q.less(q.jobs[r], q.jobs[l]) {
			m = r
		}
		if !q.less(q.jobs[m], q.jobs[i]) {
			return
		}
		q.jobs[i], q.jobs[m] = q.jobs[m], q.jobs[i]
		i = m
	}
}

// release clears the call's records and lists, which point into its view, for the next call.
func (r *rubickPolicy) release() {
	clear(r.slab)
	r.slab = r.slab[:0]
	clear(r.jobsBuf)
	clear(r.waitBuf)
	clear(r.candsBuf)
	r.jobsBuf, r.waitBuf, r.candsBuf = r.jobsBuf[:0], r.waitBuf[:0], r.candsBuf[:0]
}

// guaranteeSlack is how far below its target a guaranteed job's speed on the placement it is
// given may be (the simulator's sim.GuaranteeTolerance).
const guaranteeSlack = 0.01

// admit finds a placement for waiting job rj on the free GPUs: for a best-effort job its
// entry plan shaped by shapePlace; for a guaranteed one the first plan, fewest GPUs first,
// whose speed on the placement shapePlace gives it (timed by the cost model, idle links)
// reaches its target, the speed of its own plan on a consolidated placement of the idle
// cluster. It returns the GPUs and the plan choice.
func (r *rubickPolicy) admit(c *topology.Cluster, free topology.GPUSet, h *hostFree, rj *rubickJob) ([]topology.GPUID, int, bool) {
	j := rj.st.Job
	if !j.Guaranteed {
		g, ok := shapePlace(c, free, h, j.WithPlan(rj.choice), 0)
		return g, rj.choice, ok
	}
	target, err := r.absolute(j, 0, c, c.AllGPUs())
	if err != nil {
		return nil, 0, false
	}
	ks := []int{rj.choice}
	if j.Reconfigurable() {
		for k, t := range rj.cu.tput {
			if k != rj.choice && t >= 1-guaranteeSlack {
				ks = append(ks, k)
			}
		}
		slices.SortStableFunc(ks[1:], func(a, b int) int { return cmp.Compare(j.GPUsFor(a), j.GPUsFor(b)) })
	}
	for _, k := range ks {
		w := j.WithPlan(k)
		g, ok := shapePlace(c, free, h, w, 0)
		if !ok {
			continue
		}
		if t, err := r.speedOn(w, c, g); err == nil && t >= target*(1-guaranteeSlack) {
			return g, k, true
		}
	}
	return nil, 0, false
}

// speedOn returns the iterations per second of w (a job under one plan) on gpus, idle links.
func (r *rubickPolicy) speedOn(w *gpusched.Job, c *topology.Cluster, gpus []topology.GPUID) (float64, error) {
	probe := w
	if w.Model != nil {
		cp := *w
		cp.ID = gpusched.JobID(fmt.Sprintf("rubick-curve|%s|%v|%d", w.Model.Name(), w.Plan, len(w.Plan.Stages)))
		probe = &cp
	}
	sc, err := r.opt.Cost.StepCost(probe, c, gpus, nil)
	if err != nil {
		return 0, err
	}
	if !(sc.Time > 0) || math.IsInf(sc.Time, 0) {
		return 0, fmt.Errorf("%w: job %q: step time %v", gpusched.ErrNoCost, w.ID, sc.Time)
	}
	return 1 / sc.Time, nil
}

// entryChoice is the plan a waiting job starts under: for a guaranteed job the smallest plan
// reaching its own plan's throughput, for a best-effort one the plan of highest throughput
// per GPU (fewest GPUs among equals). A job that is not reconfigurable runs its own plan.
func (r *rubickPolicy) entryChoice(rj *rubickJob) int {
	j := rj.st.Job
	if !j.Reconfigurable() {
		return 0
	}
	best, bestN, bestV := 0, j.GPUsFor(0), 0.0
	for k, t := range rj.cu.tput {
		if !(t > 0) {
			continue
		}
		n := j.GPUsFor(k)
		if j.Guaranteed {
			if t >= 1-1e-9 && n < bestN {
				best, bestN = k, n
			}
			continue
		}
		v := t / float64(n)
		if v > bestV*(1+1e-9) || (v >= bestV*(1-1e-9) && n < bestN) {
			best, bestN, bestV = k, n, v
		}
	}
	return best
}

// shrinkable reports whether rj is a running best-effort job that may still be reconfigured.
func (r *rubickPolicy) shrinkable(rj *rubickJob) bool {
	j := rj.st.Job
	return rj.run && !j.Guaranteed && j.Reconfigurable() && r.reconf[j.ID] < r.opt.MaxReconfigurations
}

// shrinkOne shrinks one of jobs, best-effort running jobs, to a smaller plan, the one losing
// the least normalised throughput per GPU freed (less than maxLoss), and reports whether it
// found one.
func (r *rubickPolicy) shrinkOne(c *topology.Cluster, jobs []*rubickJob, free topology.GPUSet, h *hostFree, maxLoss float64) bool {
	var (
		best     *rubickJob
		bestK    int
		bestG    []topology.GPUID
		bestLoss = maxLoss
	)
	for _, rj := range jobs {
		j := rj.st.Job
		if !r.shrinkable(rj) {
			continue
		}
		nCur := j.GPUsFor(rj.choice)
		cur := rj.cu.tput[rj.choice]
		pool := free.Clone()
		pool.AddAll(topology.SetOf(rj.gpus...))
		h.take(c, j.WithPlan(rj.choice), rj.gpus, -1)
		for k, t := range rj.cu.tput {
			n := j.GPUsFor(k)
			if n >= nCur || !(t > 0) {
				continue
			}
			loss := (cur - t) / float64(nCur-n)
			if loss >= bestLoss {
				continue
			}
			// Shrink within the job's own GPUs, so that the freed ones are new.
			g, ok := shapePlace(c, topology.SetOf(rj.gpus...), h, j.WithPlan(k), 0)
			if !ok {
				continue
			}
			best, bestK, bestG, bestLoss = rj, k, g, loss
		}
		h.take(c, j.WithPlan(rj.choice), rj.gpus, 1)
	}
	if best == nil {
		return false
	}
	h.take(c, best.st.Job.WithPlan(best.choice), best.gpus, -1)
	free.AddAll(topology.SetOf(best.gpus...))
	best.choice, best.gpus = bestK, bestG
	free.RemoveAll(topology.SetOf(bestG...))
	h.take(c, best.st.Job.WithPlan(bestK), bestG, 1)
	return true
}
