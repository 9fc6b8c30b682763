package policy

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// PSLocalityOptions configure PSLocality.
type PSLocalityOptions struct {
	// Name is the report name (default "ps-locality").
	Name string
	// Cost times a job's candidate allocations (default gpusched.DefaultCost()). Give it the
	// host's cost model.
	Cost gpusched.CostModel
	// Seed seeds the randomized rounding; the same seed and views give the same decisions.
	Seed uint64
	// Efficiency is the least per-GPU efficiency, in (0, 1], of the shape chosen for a job: of
	// the shapes that fit now, the fastest whose GPU-seconds per iteration are at most
	// 1/Efficiency times the least any of them needs. Default 0.5.
	Efficiency float64
	// Rounds is how many roundings are drawn per shape; the repaired one of least locality
	// cost is kept (default 8). When every draw fails to repair, the repair alone is run from
	// an empty placement.
	Rounds int
}

// PSStats are a PS policy's account of its decisions and of their lower bounds.
type PSStats struct {
	// Placed is the number of PS jobs placed by the program (rounding and repair).
	Placed int
	// Achieved is the sum over those placements of their cross-server bytes per iteration
	// under an even split of the parameters; Bound the sum of the LP relaxations' optima of the
	// same shapes: a lower bound on Achieved for the shapes chosen.
	Achieved, Bound float64
	// Intervals, Objective and ObjectiveBound are SMD's: the scheduling intervals solved,
	// and the sum over them of the sum-of-ratios objective of the allocation chosen (seconds)
	// and of its LP lower bound.
	Intervals                 int
	Objective, ObjectiveBound float64
	// Exact counts SMD's intervals solved exactly by dynamic programming.
	Exact int
	// Rejected counts jobs rejected because their program failed (ErrLP).
	Rejected int
}

// Gap returns Achieved / Bound (1 when both are zero; +Inf when only the bound is).
func (s PSStats) Gap() float64 { return ratio(s.Achieved, s.Bound) }

// ObjectiveGap returns Objective / ObjectiveBound for SMD.
func (s PSStats) ObjectiveGap() float64 { return ratio(s.Objective, s.ObjectiveBound) }

func ratio(a, b float64) float64 {
	switch {
	case b > 0:
		return a / b
	case a == 0:
		return 1
	}
	return math.Inf(1)
}

// psLocalityPolicy is the locality-aware online scheduler of parameter-server jobs after Yu, Liu,
// Wu, Ji and Bentley, "Toward Efficient Online Scheduling for Distributed Machine Learning
// Systems" (IEEE TNSE 2022, arXiv 2108.02917). For each arriving PS job it decides, jointly,
// how many workers and PS shards the job gets and on which servers, with their locality (a
// worker beside a shard exchanges that shard's slice over PCIe, not the network).
//
// Only the paper's abstract was readable. What it states, and how this code does it:
//   - "worker-parameter server locality configurations": a server's local configuration is
//     (m workers, n shards) of the job; an allocation is one configuration or none per server.
//   - "a mixed packing and covering integer program": for a shape (W workers, P shards), the
//     integer program over y_{c,k} (servers of class c, servers with the same free GPUs, cores
//     and memory, taking configuration k) packs at most |c| configurations into each class and
//     covers exactly W workers and P shards; its objective is the locality cost, the bytes per
//     iteration that cross servers, sum of (m (P - n) + n (W - m)) x P-bytes/P.
//   - "randomized rounding": the LP relaxation (gonum's simplex) is rounded server by server:
//     a server of class c takes configuration k with probability y_{c,k}/|c| (none with the
//     rest), drawn from a seeded generator; Rounds draws, the best repaired one kept.
//   - the bound "as far as it can be stated": the relaxation's optimum LP* is at most the
//     integer optimum OPT, and the rounding's expected cost is exactly LP* <= OPT with the
//     workers and shards covered in expectation (property-tested against brute force on tiny
//     instances, a rounding without the empty choice caught). The feasibility repair that
//     completes or trims the cover has no proven factor here; Stats reports the achieved cost
//     against LP* (the optimality gap), and the tests log the measured ratio.
//
// Choices this library made where the paper was not readable: the job's shape is chosen among
// its plan options (ps.Configs) that fit now, as the fastest whose GPU-seconds per
// iteration are within 1/Efficiency of the least (timed by the cost model on the repaired
// placement); the program is solved once per shape when the job is considered; jobs are
// considered in arrival order, later ones backfilling, and are never preempted or resized once
// started; a shard runs beside a worker of its job (ps.Placement). Jobs that are not PS
// jobs are placed whole, on the fewest servers, within cores and memory.
//
// Jobs whose bounds admit no allocation on the cluster are rejected by the gate (Job.Validate:
// ps.ErrInvalidJob, ErrTooLarge); a job whose program fails (ErrLP) is rejected with the
// reason, naming it, and the others are scheduled. It keeps state (the generator, the
// statistics): not safe for concurrent use.
type psLocalityPolicy struct {
	gate  gate
	name  string
	cost  gpusched.CostModel
	eta   float64
	draws int
	rng   *rand.Rand
	stats PSStats
	bad   map[gpusched.JobID]error
	solve func(*psInstance) (*psLP, error) // solveLP; tests inject failures
	// rejects are the jobs of the current call whose program failed.
	rejects []*gpusched.JobError
}

// newPSLocality returns the scheduler.
func newPSLocality(opt PSLocalityOptions) (*psLocalityPolicy, error) {
	if opt.Efficiency == 0 {
		opt.Efficiency = 0.5
	}
	if !(opt.Efficiency > 0 && opt.Efficiency <= 1) {
		return nil, fmt.Errorf("%w: ps-locality: Efficiency %v must be in (0, 1]", ErrInvalidOptions, opt.Efficiency)
	}
	if opt.Rounds < 0 {
		return nil, fmt.Errorf("%w: ps-locality: Rounds %d must be >= 0", ErrInvalidOptions, opt.Rounds)
	}
	if opt.Rounds == 0 {
		opt.Rounds = 8
	}
	if opt.Cost == nil {
		opt.Cost = gpusched.DefaultCost()
	}
	return &psLocalityPolicy{
		name: name(opt.Name, "ps-locality"), cost: opt.Cost, eta: opt.Efficiency, draws: opt.Rounds,
		rng: rand.New(rand.NewPCG(opt.Seed, 0x70736c6f63)), bad: make(map[gpusched.JobID]error), solve: solveLP,
	}, nil
}

// String returns "ps-locality" (or Options.Name).
func (p *psLocalityPolicy) String() string { return p.name }

// Stats returns the account of the decisions so far.
func (p *psLocalityPolicy) Stats() PSStats { return p.stats }

// Schedule keeps every running job and places waiting jobs in arrival order.
func (p *psLocalityPolicy) Schedule(v gpusched.View) (gpusched.Decision, error) {
	if err := p.ready(); err != nil {
		return gpusched.Decision{}, err
	}
	p.rejects = p.rejects[:0]
	d, err := p.gate.decide(v, p.schedule)
	if err != nil {
		return d, err
	}
	// The gate lists the jobs it rejects; add those whose program failed.
	d.Rejected = append(d.Rejected, p.rejects...)
	return d, nil
}

func (p *psLocalityPolicy) schedule(v *gpusched.View) (gpusched.Decision, error) {
	// Every running job keeps its GPUs: a host that takes deltas gets the starts only.
	d := gpusched.Decision{KeepOthers: v.AcceptsKeepOthers}
	if !d.KeepOthers {
		d.Run = (*psState)(nil).keepRunning(v)
	}
	if len(v.Pending) == 0 {
		return d, nil
	}
	st := newPSState(v)
	forget(p.bad, v)
	order := arrivalOrder(v)
	for i := range max(len(order), len(v.Pending)) {
		if st.freeGPUs == 0 {
			break
		}
		js := &v.Pending[min(i, len(v.Pending)-1)]
		if order != nil {
			js = order[i]
		}
		j := js.Job
		if err, ok := p.bad[j.ID]; ok {
			p.rejects = append(p.rejects, &gpusched.JobError{Job: j.ID, Err: err})
			continue
		}
		var a gpusched.Assignment
		var ok bool
		if j.IsPS() && j.Reconfigurable() {
			if j.PS.MinWorkers > st.freeGPUs {
				continue // no shape fits: skip it without a program
			}
			c, err := p.placePS(v.Cluster, st, j)
			if err != nil {
				p.bad[j.ID] = err
				p.stats.Rejected++
				p.rejects = append(p.rejects, &gpusched.JobError{Job: j.ID, Err: err})
				continue
			}
			if c == nil {
				continue
			}
			a, ok = gpusched.Assignment{Job: j.ID, GPUs: c.gpus, PlanChoice: c.choice}, true
			p.stats.Placed++
			p.stats.Achieved += c.cost
			p.stats.Bound += c.bound
		} else {
			a, ok = st.placeWhole(v.Cluster, j)
		}
		if ok {
			st.take(v.Cluster, j, a)
			d.Run = append(d.Run, a)
		}
	}
	return d, nil
}

// psCand is a placed shape of a job.
type psCand struct {
	choice      int
	gpus        []topology.GPUID
	step        float64 // seconds per iteration, idle links
	cost, bound float64 // cross-server bytes per iteration, its LP lower bound
}

// placePS returns the chosen placement of PS job j on the free resources, nil when none of its
// shapes fits now, or an error wrapping ErrLP naming the job.
func (p *psLocalityPolicy) placePS(c *topology.Cluster, st *psState, j *gpusched.Job) (*psCand, error) {
	var cands []psCand
	for k := range j.Choices() {
		w, np := j.GPUsFor(k), j.NumPSOf(k)
		if np < 1 || w > st.freeGPUs || np > w {
			continue
		}
		in := st.instance(j, k, psShape{w, np})
		sol, err := p.solve(in)
		if errors.Is(err, errInfeasible) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("job %q, %d workers x %d shards: %w", j.ID, w, np, err)
		}
		var best []psPick
		bestCost := math.Inf(1)
		for range p.draws {
			picks := sol.round(in, p.rng)
			if repair(in, picks) {
				if cst := in.totalCost(picks); cst < bestCost {
					best, bestCost = picks, cst
				}
			}
		}
		if best == nil {
			picks := make([]psPick, len(in.Servers))
			if !repair(in, picks) {
				continue
			}
			best, bestCost = picks, in.totalCost(picks)
		}
		gpus := st.gpusFor(best)
		sc, err := p.cost.StepCost(j.WithPlan(k), c, gpus, nil)
		if err != nil {
			return nil, fmt.Errorf("%w: job %q: %w", gpusched.ErrNoCost, j.ID, err)
		}
		shard := j.Model.ParamBytes() / float64(np)
		cands = append(cands, psCand{choice: k, gpus: gpus, step: sc.Time, cost: bestCost * shard, bound: sol.Bound * shard})
	}
	if len(cands) == 0 {
		return nil, nil
	}
	least := math.Inf(1)
	for _, cd := range cands {
		least = min(least, cd.step*float64(len(cd.gpus)))
	}
	best := -1
	for i, cd := range cands {
		if cd.step*float64(len(cd.gpus)) <= least/p.eta*(1+1e-12) && (best < 0 || cd.step < cands[best].step) {
			best = i
		}
	}
	return &cands[best], nil
}

// psState is the free resources of the cluster during one decision.
type psState struct {
	free     [][]topology.GPUID // free GPUs per server, ascending
	cpus     []int              // free cores per server (math.MaxInt32: not accounted)
	mem      []float64          // free host memory per server (+Inf: not accounted)
	freeGPUs int
	srvIdx   []int // scratch: server positions of the last instance
}

func newPSState(v *gpusched.View) *psState {
	c := v.Cluster
	n := c.NumServers()
	st := &psState{free: make([][]topology.GPUID, n), cpus: make([]int, n), mem: make([]float64, n)}
	for s := range n {
		sp := c.Server(s)
		st.cpus[s], st.mem[s] = math.MaxInt32, math.Inf(1)
		if sp.CPUs > 0 {
			st.cpus[s] = sp.CPUs
		}
		if sp.HostMemory > 0 {
			st.mem[s] = sp.HostMemory
		}
	}
	free := v.Free()
	count := make([]int, n)
	free.Range(func(g topology.GPUID) bool {
		count[c.ServerOf(g)]++
		st.freeGPUs++
		return true
	})
	backing := make([]topology.GPUID, st.freeGPUs)
	off := 0
	for s := range n {
		st.free[s] = backing[off : off : off+count[s]]
		off += count[s]
	}
	free.Range(func(g topology.GPUID) bool {
		s := c.ServerOf(g)
		st.free[s] = append(st.free[s], g)
		return true
	})
	for i := range v.Running {
		r := &v.Running[i]
		if j := r.Job; r.PlanChoice == 0 && j.PS == nil && j.CPUs == 0 && j.HostMemory == 0 {
			continue // its own plan on no host resources: ServerNeeds would name none
		}
		r.Job.ServerNeeds(c, r.PlanChoice, r.GPUs, func(s, cpus int, mem float64) bool {
			st.cpus[s] -= cpus
			st.mem[s] -= mem
			return true
		})
	}
	return st
}

// keepRunning lists every running job where it runs, under its plan choice.
func (st *psState) keepRunning(v *gpusched.View) []gpusched.Assignment {
	run := make([]gpusched.Assignment, 0, len(v.Running)+8)
	for i := range v.Running {
		r := &v.Running[i]
		run = append(run, gpusched.Assignment{Job: r.Job.ID, GPUs: r.GPUs, PlanChoice: r.PlanChoice})
	}
	return run
}

// instance is job j's program for a shape under choice k on the servers with free GPUs.
func (st *psState) instance(j *gpusched.Job, k int, sh psShape) *psInstance {
	o, _ := j.Option(k)
	in := &psInstance{Shape: sh, WorkerCPU: o.CPUs, WorkerMem: o.HostMemory, PSCPU: j.PS.CPUs, PSMem: j.PS.HostMemory}
	st.srvIdx = st.srvIdx[:0]
	for s, f := range st.free {
		if len(f) == 0 {
			continue
		}
		st.srvIdx = append(st.srvIdx, s)
		// Resources beyond what the shape could use on one server do not change the server's
		// configurations: clamp them, so that servers fall into few classes (exactly the same
		// program, far fewer variables).
		in.Servers = append(in.Servers, psSrv{
			GPUs: min(len(f), sh.W),
			CPUs: min(st.cpus[s], sh.W*in.WorkerCPU+sh.P*in.PSCPU),
			Mem:  math.Min(st.mem[s], float64(sh.W)*in.WorkerMem+float64(sh.P)*in.PSMem),
		})
	}
	return in
}

// gpusFor turns the picks of the last instance into a worker order: on every server its N
// shard-hosting workers first (worker k hosts shard k: ps.Placement), then the rest.
func (st *psState) gpusFor(picks []psPick) []topology.GPUID {
	var head, tail []topology.GPUID
	for i, k := range picks {
		if k.M == 0 {
			continue
		}
		f := st.free[st.srvIdx[i]]
		head = append(head, f[:k.N]...)
		tail = append(tail, f[k.N:k.M]...)
	}
	return append(head, tail...)
}

// take removes an assignment's GPUs, cores and memory from the free resources.
func (st *psState) take(c *topology.Cluster, j *gpusched.Job, a gpusched.Assignment) {
	for _, g := range a.GPUs {
		s := c.ServerOf(g)
		if i := slices.Index(st.free[s], g); i >= 0 {
			st.free[s] = slices.Delete(st.free[s], i, i+1)
			st.freeGPUs--
		}
	}
	j.ServerNeeds(c, a.PlanChoice, a.GPUs, func(s, cpus int, mem float64) bool {
		st.cpus[s] -= cpus
		st.mem[s] -= mem
		return true
	})
}

// placeWhole places a job under its own plan (choice 0) on the fewest servers: on the one
// server with the fewest free GPUs that holds it all, else on the servers with the most free
// GPUs, each within its cores and memory (a PS job's baseline shards included).
func (st *psState) placeWhole(c *topology.Cluster, j *gpusched.Job) (gpusched.Assignment, bool) {
	g := j.GPUs
	if g > st.freeGPUs {
		return gpusched.Assignment{}, false
	}
	eligible := func(s int) bool { return len(st.free[s]) > 0 && j.Eligible(c.Server(s).GPU) }
	perWorkerCPU, perWorkerMem := j.CPUs, j.HostMemory
	psCPU, psMem := 0, 0.0
	if j.PS != nil {
		psCPU, psMem = j.PS.CPUs, j.PS.HostMemory
	}
	room := func(s int) int { // workers server s can take (with one baseline shard)
		n := len(st.free[s])
		for n > 0 && (n*perWorkerCPU+psCPU > st.cpus[s] || float64(n)*perWorkerMem+psMem > st.mem[s]*(1+1e-12)) {
			n--
		}
		return n
	}
	best := -1
	for s := range st.free {
		if eligible(s) && room(s) >= g && (best < 0 || len(st.free[s]) < len(st.free[best])) {
			best = s
		}
	}
	var gpus []topology.GPUID
	if best >= 0 {
		gpus = slices.Clone(st.free[best][:g])
	} else {
		order := make([]int, 0, len(st.free))
		for s := range st.free {
			if eligible(s) {
				order = append(order, s)
			}
		}
		slices.SortStableFunc(order, func(a, b int) int { return len(st.free[b]) - len(st.free[a]) })
		for _, s := range order {
			n := min(room(s), g-len(gpus))
			gpus = append(gpus, st.free[s][:n]...)
			if len(gpus) == g {
				break
			}
		}
		if len(gpus) < g {
			return gpusched.Assignment{}, false
		}
	}
	return gpusched.Assignment{Job: j.ID, GPUs: gpus}, true
}
