package policy

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"unsafe"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// The SJF-BCO paper compares SJF-BCO with First-Fit, List-Scheduling and Random. Its text was
// not available to this implementation, so the three are defined here in their textbook forms,
// as online, non-preemptive policies that take jobs in arrival order and backfill (a job that
// cannot start is passed over; Order = Strict makes it block the rest): they differ in where a
// job goes.

// firstFitPolicy places each job, in arrival order, on the first server (lowest index) with enough
// free GPUs, and otherwise on the lowest-numbered free GPUs, server after server: first-fit
// packing with no look at load or fragmentation. It keeps no state and is safe for concurrent
// use.
type firstFitPolicy struct {
	gate     gate
	name     string
	backfill bool
}

// newFirstFit returns a First-Fit scheduler; default order: Backfill. The Placer is ignored:
// first fit is the placement.
func newFirstFit(opt Options) (*firstFitPolicy, error) {
	if err := opt.check("first-fit"); err != nil {
		return nil, err
	}
	return &firstFitPolicy{name: name(opt.Name, "first-fit"), backfill: opt.backfill(true)}, nil
}

// String returns "first-fit" (or Options.Name).
func (f *firstFitPolicy) String() string { return f.name }

// Schedule keeps every running job and starts waiting jobs first-fit.
func (f *firstFitPolicy) Schedule(v gpusched.View) (gpusched.Decision, error) {
	if err := f.ready(); err != nil {
		return gpusched.Decision{}, err
	}
	return f.gate.decide(v, f.schedule)
}

func (f *firstFitPolicy) schedule(vp *gpusched.View) (gpusched.Decision, error) {
	v := *vp
	c := v.Cluster
	return dispatch(&v, arrivalOrder(&v), f.backfill, func(free topology.GPUSet, st *gpusched.JobStatus) ([]topology.GPUID, bool) {
		return firstFit(c, free, st.Job.GPUs)
	})
}

func firstFit(c *topology.Cluster, free topology.GPUSet, n int) ([]topology.GPUID, bool) {
	for s := 0; s < c.NumServers(); s++ {
		first, k := c.GPUsOf(s)
		if free.CountRange(first, k) >= n {
			return takeGPUs(c, free, []int{s}, []int{n}), true
		}
	}
	var out []topology.GPUID
	free.Range(func(g topology.GPUID) bool {
		out = append(out, g)
		return len(out) < n
	})
	return out, len(out) == n
}

// listPolicy is Graham's list scheduling for rigid parallel jobs (Garey and Graham, 1975):
// jobs in arrival order (the list); whenever GPUs are free, the first job in the list that fits
// starts, on the free GPUs that have been busy the least so far (least loaded first, ties by
// GPU id), wherever they are: it balances load and ignores locality.
//
// It accumulates each GPU's busy time from the jobs it ran between calls (the host calls at
// every completion, so a job that left ran until the call): it must see every event of one host
// in time order and is not safe for concurrent use.
type listPolicy struct {
	gate     gate
	name     string
	backfill bool
	load     []float64
	last     float64
	busy     topology.GPUSet // the GPUs of the jobs the last decision ran, loaded until this call
	byLoad   []topology.GPUID
}

// newListScheduling returns a List-Scheduling scheduler; default order: Backfill. The Placer
// is ignored: least-loaded GPUs is the placement.
func newListScheduling(opt Options) (*listPolicy, error) {
	if err := opt.check("list-scheduling"); err != nil {
		return nil, err
	}
	return &listPolicy{name: name(opt.Name, "list-scheduling"), backfill: opt.backfill(true)}, nil
}

// String returns "list-scheduling" (or Options.Name).
func (l *listPolicy) String() string { return l.name }

// Load returns the busy time in seconds that GPU g has accumulated by the last call.
func (l *listPolicy) Load(g topology.GPUID) float64 {
	if int(g) < 0 || int(g) >= len(l.load) {
		return 0
	}
	return l.load[g]
}

// Schedule keeps every running job and starts jobs in list order on the least-loaded GPUs.
func (l *listPolicy) Schedule(v gpusched.View) (gpusched.Decision, error) {
	if err := l.ready(); err != nil {
		return gpusched.Decision{}, err
	}
	return l.gate.decide(v, l.schedule)
}

func (l *listPolicy) schedule(vp *gpusched.View) (gpusched.Decision, error) {
	v := *vp
	c := v.Cluster
	if len(l.load) != c.NumGPUs() {
		l.load, l.busy, l.last = make([]float64, c.NumGPUs()), topology.GPUSet{}, v.Now
	}
	if dt := v.Now - l.last; dt > 0 {
		l.busy.Range(func(g topology.GPUID) bool {
			if int(g) < len(l.load) {
				l.load[g] += dt
			}
			return true
		})
	}
	l.last = v.Now
	d, err := dispatch(&v, arrivalOrder(&v), l.backfill, func(free topology.GPUSet, st *gpusched.JobStatus) ([]topology.GPUID, bool) {
		gs := free.Slice()
		if len(gs) < st.Job.GPUs {
			return nil, false
		}
		out := l.leastLoaded(gs, st.Job.GPUs)
		slices.Sort(out)
		return out, true
	})
	if err != nil {
		return d, err
	}
	l.busy = l.ranOn(&v, d)
	return d, nil
}

// ranOn returns the GPUs of the jobs that decision d (of dispatch) runs. When d is a delta, or
// its Run starts by keeping every running job of v on its GPUs (dispatch's full decisions do),
// and no GPU is unavailable, the running jobs' GPUs are those v does not list free, and only
// the started jobs' GPUs are read.
func (l *listPolicy) ranOn(v *gpusched.View, d gpusched.Decision) topology.GPUSet {
	run := d.Run
	if d.KeepOthers {
		// A delta of dispatch: every running job kept, then the starts.
		busy := v.Cluster.AllGPUs()
		busy.RemoveAll(v.Free())
		if v.Unavailable.Len() > 0 {
			busy = topology.NewGPUSet(v.Cluster.NumGPUs())
			for i := range v.Running {
				for _, g := range v.Running[i].GPUs {
					busy.Add(g)
				}
			}
		}
		for _, a := range run {
			for _, g := range a.GPUs {
				busy.Add(g)
			}
		}
		return busy
	}
	keeps := len(run) >= len(v.Running) && v.Unavailable.Len() == 0
	for i := 0; keeps && i < len(v.Running); i++ {
		a, st := &run[i], &v.Running[i]
		keeps = len(a.GPUs) == len(st.GPUs) && unsafe.SliceData(a.GPUs) == unsafe.SliceData(st.GPUs)
	}
	if !keeps {
		busy := topology.NewGPUSet(v.Cluster.NumGPUs())
		for _, a := range run {
			for _, g := range a.GPUs {
				busy.Add(g)
			}
		}
		return busy
	}
	busy := v.Cluster.AllGPUs()
	busy.RemoveAll(v.Free())
	for _, a := range run[len(v.Running):] {
		for _, g := range a.GPUs {
			busy.Add(g)
		}
	}
	return busy
}

// leastLoaded returns the k GPUs of gs (in increasing id order, k <= len(gs)) that have been
// busy the least, ties to the lower id: the first k of gs sorted stably by load. For few GPUs
// it selects them in one pass over gs instead of sorting all of them.
func (l *listPolicy) leastLoaded(gs []topology.GPUID, k int) []topology.GPUID {
	if k > 8 {
		slices.SortStableFunc(gs, func(a, b topology.GPUID) int { return cmp.Compare(l.load[a], l.load[b]) })
		return gs[:k]
	}
	// best holds the k least loaded so far, by (load, id); gs comes in id order, so a GPU
	// enters only if strictly less loaded than the last kept.
	best := l.byLoad[:0]
	for _, g := range gs {
		if len(best) == k && !(l.load[g] < l.load[best[k-1]]) {
			continue
		}
		i := len(best)
		if i < k {
			best = append(best, g)
		} else {
			i = k - 1
		}
		for ; i > 0 && l.load[g] < l.load[best[i-1]]; i-- {
			best[i] = best[i-1]
		}
		best[i] = g
	}
	l.byLoad = best
	return slices.Clone(best)
}

// RandomOptions configure Random.
type RandomOptions struct {
	// Order: Backfill (default) or Strict.
	Order Order
	// Seed seeds the random choices: the same seed and the same sequence of views give the same
	// decisions.
	Seed uint64
	// Name, when set, replaces "random" in reports.
	Name string
}

// randomPolicy places each job, in arrival order, on free GPUs drawn uniformly at random (from a PCG
// seeded with Seed). It keeps its random stream between calls: it is not safe for concurrent
// use.
type randomPolicy struct {
	gate     gate
	name     string
	backfill bool
	rng      *rand.Rand
	src      *rand.PCG // rng's source, whose state SaveState writes
}

// newRandom returns a Random scheduler.
func newRandom(opt RandomOptions) (*randomPolicy, error) {
	if opt.Order > Backfill {
		return nil, fmt.Errorf("%w: random: unknown Order %d", ErrInvalidOptions, opt.Order)
	}
	src := rand.NewPCG(opt.Seed, 0x9e3779b97f4a7c15)
	return &randomPolicy{name: name(opt.Name, "random"), backfill: opt.Order != Strict, rng: rand.New(src), src: src}, nil
}

// String returns "random" (or RandomOptions.Name).
func (r *randomPolicy) String() string { return r.name }

// Schedule keeps every running job and starts waiting jobs on random free GPUs.
func (r *randomPolicy) Schedule(v gpusched.View) (gpusched.Decision, error) {
	if err := r.ready(); err != nil {
		return gpusched.Decision{}, err
	}
	return r.gate.decide(v, r.schedule)
}

func (r *randomPolicy) schedule(vp *gpusched.View) (gpusched.Decision, error) {
	v := *vp
	return dispatch(&v, arrivalOrder(&v), r.backfill, func(free topology.GPUSet, st *gpusched.JobStatus) ([]topology.GPUID, bool) {
		gs := free.Slice()
		if len(gs) < st.Job.GPUs {
			return nil, false
		}
		r.rng.Shuffle(len(gs), func(i, j int) { gs[i], gs[j] = gs[j], gs[i] })
		out := gs[:st.Job.GPUs]
		slices.Sort(out)
		return out, true
	})
}
