package srpt

import (
	"errors"
	"math"
	"math/bits"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// slotSchedule solves an instance and also returns the slot-by-slot
// schedule, so that tests can check it is feasible and realises the value.
func slotSchedule(t *rapid.T, in gangInstance, resolution int) (Optimum, *exactDP, []int) {
	opt, err := ExactOptimum(in.Jobs, in.G, resolution)
	if err != nil {
		t.Fatal(err)
	}
	var pos []int
	r0 := math.Inf(1)
	for i, j := range in.Jobs {
		if j.ProcTime > 0 {
			pos = append(pos, i)
			r0 = min(r0, j.Release)
		}
	}
	if len(pos) == 0 {
		return opt, nil, nil
	}
	d, err := newExactDP(in.Jobs, pos, in.G, resolution, r0)
	if err != nil {
		t.Fatal(err)
	}
	d.solve()
	comp := make([]float64, len(in.Jobs))
	var slots []int
	d.reconstruct(comp, r0, float64(resolution), &slots)
	return opt, d, slots
}

// TestExactScheduleFeasible replays the reconstructed slot schedule: GPU
// capacity respected, no job before its release, every job gets exactly its
// processing time, completions are as reported and sum to the DP value.
func TestExactScheduleFeasible(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genGang(5, 4, 4, 3).Draw(t, "instance")
		K := rapid.IntRange(1, 2).Draw(t, "resolution")
		opt, d, slots := slotSchedule(t, in, K)
		if d == nil {
			return
		}
		r0 := math.Inf(1)
		for _, i := range d.pos {
			r0 = min(r0, in.Jobs[i].Release)
		}
		got := make([]float64, len(in.Jobs))
		work := make([]int, len(in.Jobs))
		for s, sub := range slots {
			start := r0 + float64(s)/float64(K)
			used := 0
			for m := sub; m != 0; m &= m - 1 {
				i := d.pos[bits.TrailingZeros(uint(m))]
				j := in.Jobs[i]
				used += j.GPUs
				if j.Release > start {
					t.Fatalf("slot %d runs job %d before its release", s, j.ID)
				}
				work[i]++
				if work[i] > int(j.ProcTime)*K {
					t.Fatalf("job %d overprocessed", j.ID)
				}
				got[i] = start + 1/float64(K)
			}
			if used > in.G {
				t.Fatalf("slot %d uses %d GPUs of %d", s, used, in.G)
			}
		}
		for i, j := range in.Jobs {
			if j.ProcTime == 0 {
				got[i] = j.Release
			} else if work[i] != int(j.ProcTime)*K {
				t.Fatalf("job %d got %d slots, needs %v", j.ID, work[i], j.ProcTime*float64(K))
			}
			if !closeTo(got[i], opt.Completion[i]) {
				t.Fatalf("job %d completes at %v in the slots, reported %v", j.ID, got[i], opt.Completion[i])
			}
		}
		full := 0
		for k := range d.m {
			full += d.units[k] * d.stride[k]
		}
		want := float64(len(d.pos))*r0 + float64(d.f[full])/float64(K)
		for _, j := range in.Jobs {
			if j.ProcTime == 0 {
				want += j.Release
			}
		}
		if !closeTo(opt.SumCompletion, want) {
			t.Fatalf("sum of completions %v, DP value %v", opt.SumCompletion, want)
		}
	})
}

// TestExactMatchesKnownOptima checks the DP against cases with a known
// optimum computed independently: (a) every job needs the whole cluster, so
// the cluster is one machine and SRPT on p_j is optimal; (b) every job needs
// one GPU and all are released at 0: SPT list scheduling is optimal and
// preemption does not help (McNaughton 1959), and the k-th shortest job
// completes at the sum of the p of jobs k, k-G, k-2G, ... in sorted order.
func TestExactMatchesKnownOptima(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genGang(6, 4, 4, 3).Draw(t, "instance")
		whole := slices.Clone(in.Jobs)
		single := make([]Job, len(whole))
		for i := range whole {
			whole[i].GPUs = in.G
			single[i] = Job{ID: whole[i].ID, Release: whole[i].Release, Size: whole[i].ProcTime}
		}
		s, err := Offline(single, 1)
		if err != nil {
			t.Fatal(err)
		}
		opt, err := ExactOptimum(whole, in.G, 1)
		if err != nil {
			t.Fatal(err)
		}
		if opt.SumCompletion != s.SumCompletion {
			t.Fatalf("whole-cluster jobs: DP %v, SRPT %v", opt.SumCompletion, s.SumCompletion)
		}

		unit := slices.Clone(in.Jobs)
		ps := make([]float64, len(unit))
		for i := range unit {
			unit[i].GPUs, unit[i].Release = 1, 0
			ps[i] = unit[i].ProcTime
		}
		slices.Sort(ps)
		want := 0.0
		for k := range ps {
			for i := k; i >= 0; i -= in.G {
				want += ps[i]
			}
		}
		opt, err = ExactOptimum(unit, in.G, 1)
		if err != nil {
			t.Fatal(err)
		}
		if opt.SumCompletion != want {
			t.Fatalf("one-GPU jobs at 0 on %d GPUs: DP %v, SPT %v", in.G, opt.SumCompletion, want)
		}
	})
}

// TestIntegerSlotsNotExactForRigidJobs records the counterexample in the
// ExactOptimum documentation: half slots beat integer slots.
func TestIntegerSlotsNotExactForRigidJobs(t *testing.T) {
	jobs := []GangJob{{ID: 1, GPUs: 1, ProcTime: 1}, {ID: 2, GPUs: 1, ProcTime: 1}, {ID: 3, GPUs: 2, ProcTime: 1}, {ID: 4, GPUs: 3, ProcTime: 1}}
	o1, err := ExactOptimum(jobs, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	o2, err := ExactOptimum(jobs, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	if o1.SumCompletion != 7 || o2.SumCompletion != 6.5 {
		t.Fatalf("integer slots %v (want 7), half slots %v (want 6.5)", o1.SumCompletion, o2.SumCompletion)
	}
	if want := []float64{1.5, 1.5, 1, 2.5}; !slices.Equal(o2.Completion, want) {
		t.Fatalf("half-slot completions %v, want %v", o2.Completion, want)
	}
}

// TestFinerGridNeverWorse: refining the grid can only help.
func TestFinerGridNeverWorse(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genGang(4, 4, 3, 2).Draw(t, "instance")
		o1, err := ExactOptimum(in.Jobs, in.G, 1)
		if err != nil {
			t.Fatal(err)
		}
		o2, err := ExactOptimum(in.Jobs, in.G, 2)
		if err != nil {
			t.Fatal(err)
		}
		if o2.SumCompletion > o1.SumCompletion {
			t.Fatalf("half slots %v worse than integer slots %v", o2.SumCompletion, o1.SumCompletion)
		}
		if !closeTo(o1.SumFlow, o1.SumCompletion-sumRelease(in.Jobs)) {
			t.Fatalf("flow %v inconsistent", o1.SumFlow)
		}
	})
}

// TestIntegerSlotsExactForOneGPUJobs: with g_j = 1 (identical parallel
// machines) integer preemption suffices (Baptiste et al. 2012); the DP
// agrees on generated instances.
func TestIntegerSlotsExactForOneGPUJobs(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genGang(4, 3, 3, 2).Draw(t, "instance")
		for i := range in.Jobs {
			in.Jobs[i].GPUs = 1
		}
		o1, _ := ExactOptimum(in.Jobs, in.G, 1)
		o2, _ := ExactOptimum(in.Jobs, in.G, 2)
		if o1.SumCompletion != o2.SumCompletion {
			t.Fatalf("one-GPU jobs: integer slots %v, half slots %v", o1.SumCompletion, o2.SumCompletion)
		}
	})
}

func sumRelease(jobs []GangJob) float64 {
	s := 0.0
	for _, j := range jobs {
		s += j.Release
	}
	return s
}

func TestExactErrors(t *testing.T) {
	one := []GangJob{{ID: 5, GPUs: 1, ProcTime: 1}}
	if _, err := ExactOptimum(one, 1, 0); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("resolution 0: %v", err)
	}
	if _, err := ExactOptimum([]GangJob{{ID: 5, GPUs: 1, ProcTime: 1.5}}, 1, 1); !errors.Is(err, ErrInvalidJob) || !strings.Contains(err.Error(), "job 5: processing time 1.5") {
		t.Errorf("fractional p: %v", err)
	}
	if _, err := ExactOptimum([]GangJob{{ID: 5, GPUs: 1, Release: 0.5, ProcTime: 1}}, 1, 1); !errors.Is(err, ErrInvalidJob) {
		t.Errorf("fractional r: %v", err)
	}
	var many []GangJob
	for i := range 13 {
		many = append(many, GangJob{ID: i, GPUs: 1, ProcTime: 1})
	}
	if _, err := ExactOptimum(many, 2, 1); !errors.Is(err, ErrTooLarge) {
		t.Errorf("13 jobs: %v", err)
	}
	big := []GangJob{{ID: 1, GPUs: 1, ProcTime: 1000}, {ID: 2, GPUs: 1, ProcTime: 1000}, {ID: 3, GPUs: 1, ProcTime: 1000}}
	if _, err := ExactOptimum(big, 2, 1); !errors.Is(err, ErrTooLarge) {
		t.Errorf("huge state space: %v", err)
	}
	o, err := ExactOptimum([]GangJob{{ID: 1, GPUs: 1, Release: 3}}, 1, 1)
	if err != nil || o.SumCompletion != 3 || o.SumFlow != 0 {
		t.Errorf("zero-length job: %+v %v", o, err)
	}
}
