package srpt

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// GangJob is a rigid (gang-scheduled) job of a GPU cluster: whenever it runs
// it holds exactly GPUs GPUs, and it needs ProcTime seconds of running in
// total. It may be preempted and resumed, on any GPUs, at no cost in this
// model.
type GangJob struct {
	// ID is chosen by the caller and must be unique within an instance.
	ID int
	// Release is the arrival time in seconds (finite, >= 0).
	Release float64
	// GPUs is the number of GPUs the job holds while it runs, 1 <= GPUs <= G.
	GPUs int
	// ProcTime is the running time in seconds the job needs (finite, >= 0).
	ProcTime float64
}

func checkGang(jobs []GangJob, gpus int) error {
	if gpus < 1 {
		return fmt.Errorf("%w: cluster has %d GPUs, need at least 1", ErrInvalidParameter, gpus)
	}
	for _, j := range jobs {
		if j.GPUs < 1 || j.GPUs > gpus {
			return fmt.Errorf("%w: job %d needs %d GPUs, cluster has %d (need 1 <= g_j <= G)", ErrInvalidJob, j.ID, j.GPUs, gpus)
		}
		if !finiteNonNeg(j.Release) {
			return fmt.Errorf("%w: job %d: release time %v s must be finite and >= 0", ErrInvalidJob, j.ID, j.Release)
		}
		if !finiteNonNeg(j.ProcTime) {
			return fmt.Errorf("%w: job %d: processing time %v s must be finite and >= 0", ErrInvalidJob, j.ID, j.ProcTime)
		}
	}
	ids := make([]int, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	slices.Sort(ids)
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			return fmt.Errorf("%w: job %d appears more than once", ErrDuplicateJob, ids[i])
		}
	}
	return nil
}

// Virtual returns the virtual single-machine instance of a cluster instance
// on gpus GPUs: job j keeps its ID and release and gets size
// g_j * p_j / G, to be scheduled on a machine of speed 1 (equivalently: work
// g_j * p_j GPU-seconds on a machine of speed G). Its SRPT schedule is what
// A-SRPT follows; its SRPT total completion time is a lower bound on the
// cluster's (see LowerBounds). Errors: ErrInvalidParameter for gpus < 1,
// ErrInvalidJob for g_j outside [1, G] or bad times, ErrDuplicateJob.
func Virtual(jobs []GangJob, gpus int) ([]Job, error) {
	if err := checkGang(jobs, gpus); err != nil {
		return nil, err
	}
	out := make([]Job, len(jobs))
	g := float64(gpus)
	for i, j := range jobs {
		out[i] = Job{ID: j.ID, Release: j.Release, Size: float64(j.GPUs) * j.ProcTime / g}
	}
	return out, nil
}

// Bounds are lower bounds on the sum of completion times, sum_j C_j, of every
// feasible preemptive schedule of a rigid-job cluster instance. All are in
// seconds. Subtract SumRelease from any of them to get a lower bound on the
// total flow time sum_j (C_j - r_j).
type Bounds struct {
	// Virtual is the SRPT sum of completion times of the virtual instance
	// (see Virtual).
	Virtual float64
	// Release is sum_j (r_j + p_j).
	Release float64
	// Rank is sum_k max(V_(k), R_(k)), where V_(k) is the k-th smallest
	// completion time of the virtual SRPT schedule and R_(k) the k-th
	// smallest r_j + p_j. It is at least max(Virtual, Release).
	Rank float64
	// SumRelease is sum_j r_j.
	SumRelease float64
}

// Best returns the strongest of the bounds on sum_j C_j (seconds).
func (b Bounds) Best() float64 { return max(b.Virtual, b.Release, b.Rank) }

// BestFlow returns the strongest lower bound on the total flow time
// sum_j (C_j - r_j) in seconds.
func (b Bounds) BestFlow() float64 { return b.Best() - b.SumRelease }

// LowerBounds computes the Bounds of a cluster instance with gpus GPUs in
// O(n log n). Proof sketches (C_j is the completion time of job j in an
// arbitrary feasible schedule S of the cluster; w_j = g_j p_j / G):
//
// Virtual. Let S run on a machine of speed 1 that, while S runs job j,
// serves j at rate g_j/G. The rates sum to at most 1 because S never uses
// more than G GPUs, so this is a processor-sharing schedule of the virtual
// instance in which job j gets its work w_j during [r_j, C_j]. Cut time into
// slices of length d and run, during slice k+1, each job for the work it got
// in slice k, one after the other: this is an ordinary preemptive schedule
// (one job at a time, nothing before its release) in which job j completes
// by C_j + 2d. SRPT is optimal for 1 | r_j, pmtn | sum C_j, so its total V
// satisfies V <= sum C_j + 2nd for every d > 0, hence V <= sum C_j.
//
// Release. Job j cannot start before r_j and runs at rate at most 1 (it is
// rigid: more GPUs do not make it faster), so C_j >= r_j + p_j.
//
// Rank. Sort completion times: C_(1) <= ... <= C_(n). The same sliced
// single-machine schedule S' has C'_j <= C_j + 2d for every job, so its k-th
// smallest completion is at most C_(k) + 2d. SRPT completes, by every
// time t, at least as many jobs as any schedule of the same instance
// (Schrage 1968: SRPT minimises the number of jobs in the system at every
// instant), so its k-th completion V_(k) <= C'_(k) <= C_(k) + 2d, hence
// V_(k) <= C_(k). And C_j >= r_j + p_j for every j gives, order statistic by
// order statistic, C_(k) >= R_(k). So C_(k) >= max(V_(k), R_(k)); summing
// over k gives the bound, which dominates both sums because a sum of maxima
// is at least the maximum of the sums. Note that the per-job sum
// sum_j max(V_j, r_j + p_j) pairing each job with itself is NOT a valid
// bound in general: the cluster may finish jobs in a different order.
//
// Errors: as Virtual. The bounds are computed in floating point; for
// comparisons with an exact optimum allow a relative slack of about 1e-12.
func LowerBounds(jobs []GangJob, gpus int) (Bounds, error) {
	vj, err := Virtual(jobs, gpus)
	if err != nil {
		return Bounds{}, err
	}
	comp, err := completions(vj, 1, nil)
	if err != nil {
		return Bounds{}, err
	}
	var b Bounds
	h := make([]float64, len(jobs))
	for i, j := range jobs {
		b.Virtual += comp[i]
		h[i] = j.Release + j.ProcTime
		b.Release += h[i]
		b.SumRelease += j.Release
	}
	slices.Sort(comp)
	slices.Sort(h)
	for k := range comp {
		b.Rank += max(comp[k], h[k])
	}
	return b, nil
}

// SubsetBound returns a lower bound on sum_j C_j (seconds) that is at least
// Bounds.Rank, in O(n^2 log n) time; use it for instances up to a few
// thousand jobs. For each k it takes
//
//	L_k = min over m >= k of max(V_k(P_m), h_(m)),
//
// where jobs are sorted by h_j = r_j + p_j, P_m is the set of the first m of
// them, h_(m) the m-th smallest h_j, and V_k(P_m) the k-th completion time of
// the virtual SRPT schedule of P_m alone; the bound is sum_k L_k.
//
// Proof sketch: in any schedule, let T be the set of the first k jobs to
// complete and m the largest sorted index in T. Then C_(k) >= h_(m) (the job
// of index m is in T), and T's virtual work can be done on one machine by
// C_(k) (the slicing argument of LowerBounds, with the other jobs dropped),
// so some single-machine schedule of P_m completes k jobs by C_(k); by
// Schrage's theorem SRPT on P_m completes k jobs no later, V_k(P_m) <= C_(k).
// Hence C_(k) >= L_k. Since V_k(P_m) >= V_(k) (fewer jobs) and
// h_(m) >= R_(k) for m >= k, L_k >= max(V_(k), R_(k)).
func SubsetBound(jobs []GangJob, gpus int) (float64, error) {
	vj, err := Virtual(jobs, gpus)
	if err != nil {
		return 0, err
	}
	n := len(jobs)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	h := func(i int) float64 { return jobs[i].Release + jobs[i].ProcTime }
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(h(a), h(b)) })
	best := make([]float64, n)
	for k := range best {
		best[k] = math.Inf(1)
	}
	prefix := make([]Job, 0, n)
	var comp []float64
	for m := 1; m <= n; m++ {
		prefix = append(prefix, vj[idx[m-1]])
		comp, err = completions(prefix, 1, comp[:0])
		if err != nil {
			return 0, err
		}
		slices.Sort(comp)
		hm := h(idx[m-1])
		for k := 0; k < m; k++ {
			best[k] = min(best[k], max(comp[k], hm))
		}
	}
	total := 0.0
	for _, v := range best {
		total += v
	}
	return total, nil
}
