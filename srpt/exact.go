package srpt

import (
	"fmt"
	"math"
	"math/bits"
)

// MaxExactStates is the largest dynamic-programming table ExactOptimum will
// build (entries of 4 bytes, so at most 64 MiB).
const MaxExactStates = 1 << 24

// maxExactJobs is the largest number of jobs with positive processing time
// ExactOptimum accepts (its subset tables have 3^n entries).
const maxExactJobs = 12

// Optimum is the result of ExactOptimum.
type Optimum struct {
	// SumCompletion is the optimal sum of completion times in seconds.
	SumCompletion float64
	// SumFlow is SumCompletion minus the sum of release times: the optimal
	// total flow time sum_j (C_j - r_j) in seconds (the same schedule
	// minimises both, since they differ by a constant).
	SumFlow float64
	// Completion[i] is the completion time, in seconds, of the i-th input job
	// in one optimal schedule (ties between optimal choices are broken
	// deterministically).
	Completion []float64
}

// ExactOptimum solves a tiny preemptive rigid-job cluster instance exactly,
// by dynamic programming, over time-slotted schedules: time is cut into slots
// of 1/resolution seconds, and in every slot the cluster runs a set of
// released, unfinished jobs whose GPU demands sum to at most gpus, each for
// the whole slot. Release and processing times must be integers (seconds);
// they are then whole numbers of slots. The objective is the sum of
// completion times (equivalently the total flow time, see Optimum).
//
// What it guarantees. The result is the exact optimum over slotted schedules
// (the DP state is the slot and the vector of remaining slots of every job;
// it considers only maximal sets of jobs per slot, which loses nothing: adding
// a job to a slot where it fits and dropping its last slot later never delays
// any job). The true preemptive optimum OPT, which may preempt at any real
// time, satisfies OPT <= ExactOptimum(resolution) for every resolution, and
// refining the grid (multiplying resolution) never increases the result.
//
// Integer slots are exact for one machine (SRPT is optimal and preempts only
// at integer times on integer data) and for identical parallel machines with
// g_j = 1 (Baptiste, Carlier, Kononov, Queyranne, Sevastyanov, Sviridenko,
// "Integer preemptive scheduling on parallel machines", Oper. Res. Lett. 40,
// 2012: integral preemption suffices for release dates and total (weighted)
// tardiness, of which sum C_j is the case d_j = 0). They are NOT exact for
// rigid jobs with g_j > 1. Smallest example (G = 3, four jobs released at 0,
// p_j = 1, g = 1, 1, 2, 3): every integer-slot schedule has sum C_j >= 7, but
// running the 2-GPU job during [0, 1) while the two 1-GPU jobs share the
// third GPU for half a second each, then run side by side during [1, 1.5),
// then the 3-GPU job during [1.5, 2.5), gives 1 + 1.5 + 1.5 + 2.5 = 6.5,
// which resolution 2 finds. This package does not claim a resolution at
// which the slotted optimum is exact for rigid jobs.
//
// Consequences for tests: OPT <= ExactOptimum, so "bound <= ExactOptimum" is
// a necessary condition for a valid lower bound (a violation proves the
// bound wrong, a pass does not prove it right), and "cost <= rho *
// ExactOptimum" never fails for a scheduler that truly is rho-competitive but
// can miss a violation by up to rho * (ExactOptimum - OPT). Use resolution 2
// or more for rigid jobs when the state space allows it.
//
// Limits: at most 12 jobs with positive processing time, and
// (number of release slots + 1) * prod_j (p_j * resolution + 1) at most
// MaxExactStates; larger instances fail with ErrTooLarge. Other errors:
// ErrInvalidParameter (gpus < 1, resolution < 1), ErrInvalidJob (g_j outside
// [1, gpus], negative, NaN or non-integer times), ErrDuplicateJob.
func ExactOptimum(jobs []GangJob, gpus int, resolution int) (Optimum, error) {
	if err := checkGang(jobs, gpus); err != nil {
		return Optimum{}, err
	}
	if resolution < 1 {
		return Optimum{}, fmt.Errorf("%w: resolution %d must be >= 1", ErrInvalidParameter, resolution)
	}
	const maxUnits = 1 << 20
	K := float64(resolution)
	for _, j := range jobs {
		if j.Release != math.Trunc(j.Release) || j.Release*K > maxUnits {
			return Optimum{}, fmt.Errorf("%w: job %d: release time %v s must be an integer below %d/resolution for the exact solver", ErrInvalidJob, j.ID, j.Release, maxUnits)
		}
		if j.ProcTime != math.Trunc(j.ProcTime) || j.ProcTime*K > maxUnits {
			return Optimum{}, fmt.Errorf("%w: job %d: processing time %v s must be an integer below %d/resolution for the exact solver", ErrInvalidJob, j.ID, j.ProcTime, maxUnits)
		}
	}
	opt := Optimum{Completion: make([]float64, len(jobs))}
	var pos []int // input indices of the jobs with positive processing time
	r0 := math.Inf(1)
	for i, j := range jobs {
		opt.SumFlow -= j.Release
		if j.ProcTime == 0 {
			opt.Completion[i] = j.Release
			continue
		}
		pos = append(pos, i)
		r0 = min(r0, j.Release)
	}
	m := len(pos)
	if m > maxExactJobs {
		return Optimum{}, fmt.Errorf("%w: %d jobs with positive processing time, limit %d", ErrTooLarge, m, maxExactJobs)
	}
	if m > 0 {
		d, err := newExactDP(jobs, pos, gpus, resolution, r0)
		if err != nil {
			return Optimum{}, err
		}
		d.solve()
		d.reconstruct(opt.Completion, r0, K, nil)
	}
	for _, c := range opt.Completion {
		opt.SumCompletion += c
	}
	opt.SumFlow += opt.SumCompletion
	return opt, nil
}

type exactDP struct {
	jobs   []GangJob
	pos    []int
	m      int
	units  []int   // u_j: processing slots
	rel    []int   // a_j: release slot (shifted so the earliest is 0)
	stride []int   // mixed radix strides
	states int     // prod (u_j + 1)
	tmax   int     // last release slot; layers 0..tmax, layer tmax is time-invariant
	dec    []int   // dec[sub] = sum of strides over sub
	off    []int32 // maximal feasible subsets of mask: subs[off[mask]:off[mask+1]]
	subs   []uint16
	f      []int32 // f[layer*states + s]: min remaining cost in slot-jobs
}

func newExactDP(jobs []GangJob, pos []int, gpus, resolution int, r0 float64) (*exactDP, error) {
	m := len(pos)
	d := &exactDP{jobs: jobs, pos: pos, m: m, units: make([]int, m), rel: make([]int, m), stride: make([]int, m)}
	d.states = 1
	for k, i := range pos {
		j := jobs[i]
		d.units[k] = int(j.ProcTime) * resolution
		d.rel[k] = int(j.Release-r0) * resolution
		d.tmax = max(d.tmax, d.rel[k])
		d.stride[k] = d.states
		if d.states > MaxExactStates/(d.units[k]+1) {
			return nil, fmt.Errorf("%w: more than %d states", ErrTooLarge, MaxExactStates)
		}
		d.states *= d.units[k] + 1
	}
	if d.tmax+1 > MaxExactStates/d.states {
		return nil, fmt.Errorf("%w: %d release slots x %d remaining-work states exceed %d", ErrTooLarge, d.tmax+1, d.states, MaxExactStates)
	}
	full := 1 << m
	gsum := make([]int, full)
	d.dec = make([]int, full)
	for sub := 1; sub < full; sub++ {
		k := bits.TrailingZeros(uint(sub))
		gsum[sub] = gsum[sub&(sub-1)] + jobs[pos[k]].GPUs
		d.dec[sub] = d.dec[sub&(sub-1)] + d.stride[k]
	}
	d.off = make([]int32, full+1)
	for mask := 0; mask < full; mask++ {
		d.off[mask] = int32(len(d.subs))
		// Enumerate submasks of mask (including the empty one) that fit and
		// to which no further job of mask can be added.
		for sub := mask; ; sub = (sub - 1) & mask {
			if gsum[sub] <= gpus {
				maximal := true
				for rest := mask &^ sub; rest != 0; rest &= rest - 1 {
					if gsum[sub]+jobs[pos[bits.TrailingZeros(uint(rest))]].GPUs <= gpus {
						maximal = false
						break
					}
				}
				if maximal {
					d.subs = append(d.subs, uint16(sub))
				}
			}
			if sub == 0 {
				break
			}
		}
	}
	d.off[full] = int32(len(d.subs))
	d.f = make([]int32, (d.tmax+1)*d.states)
	return d, nil
}

// remMask returns the set of jobs with remaining work in state s.
func (d *exactDP) remMask(s int) int {
	mask := 0
	for k := 0; k < d.m; k++ {
		if (s/d.stride[k])%(d.units[k]+1) != 0 {
			mask |= 1 << k
		}
	}
	return mask
}

// released returns the set of jobs released by slot t.
func (d *exactDP) released(t int) int {
	mask := 0
	for k := 0; k < d.m; k++ {
		if d.rel[k] <= t {
			mask |= 1 << k
		}
	}
	return mask
}

// best returns the minimal next-layer value and the subset achieving it
// (first in enumeration order) for state s with active set act, reading the
// next layer at offset next.
func (d *exactDP) best(s, act, next int) (int32, int) {
	bestV, bestSub := int32(math.MaxInt32), 0
	for _, sub := range d.subs[d.off[act]:d.off[act+1]] {
		if v := d.f[next+s-d.dec[sub]]; v < bestV {
			bestV, bestSub = v, int(sub)
		}
	}
	return bestV, bestSub
}

func (d *exactDP) solve() {
	// Time-invariant layer: every job released.
	inv := d.tmax * d.states
	for s := 1; s < d.states; s++ {
		rm := d.remMask(s)
		v, _ := d.best(s, rm, inv) // s - dec < s: already computed
		d.f[inv+s] = int32(bits.OnesCount(uint(rm))) + v
	}
	for t := d.tmax - 1; t >= 0; t-- {
		cur, next := t*d.states, (t+1)*d.states
		rel := d.released(t)
		for s := 1; s < d.states; s++ {
			rm := d.remMask(s)
			v, _ := d.best(s, rm&rel, next)
			d.f[cur+s] = int32(bits.OnesCount(uint(rm))) + v
		}
	}
}

// reconstruct follows one optimal schedule and writes completion times. If
// slots is not nil, the set of running jobs (a bit mask over d.pos) of every
// slot from the earliest release on is appended to it.
func (d *exactDP) reconstruct(comp []float64, r0, K float64, slots *[]int) {
	s := 0
	for k := range d.m {
		s += d.units[k] * d.stride[k]
	}
	for t := 0; s != 0; t++ {
		layer := min(t+1, d.tmax)
		rm := d.remMask(s)
		act := rm & d.released(t)
		_, sub := d.best(s, act, layer*d.states)
		if slots != nil {
			*slots = append(*slots, sub)
		}
		s -= d.dec[sub]
		done := rm &^ d.remMask(s)
		for ; done != 0; done &= done - 1 {
			k := bits.TrailingZeros(uint(done))
			comp[d.pos[k]] = r0 + float64(t+1)/K
		}
	}
}
