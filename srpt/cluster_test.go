package srpt

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// leq reports a <= b up to floating-point rounding of the bounds (the exact
// optimum is exact; the bounds divide by G).
func leq(a, b float64) bool { return a <= b+1e-9*max(1, math.Abs(b)) }

// boundsViolation checks every bound against the slotted optimum at the
// given resolution and against each other.
func boundsViolation(in gangInstance, resolution int) (string, bool) {
	b, err := LowerBounds(in.Jobs, in.G)
	if err != nil {
		return err.Error(), true
	}
	sub, err := SubsetBound(in.Jobs, in.G)
	if err != nil {
		return err.Error(), true
	}
	opt, err := ExactOptimum(in.Jobs, in.G, resolution)
	if err != nil {
		return err.Error(), true
	}
	o := opt.SumCompletion
	switch {
	case !leq(b.Virtual, o):
		return "virtual bound above optimum", true
	case !leq(b.Release, o):
		return "release bound above optimum", true
	case !leq(b.Rank, o):
		return "rank bound above optimum", true
	case !leq(sub, o):
		return "subset bound above optimum", true
	case !leq(b.BestFlow(), opt.SumFlow):
		return "flow bound above optimum flow", true
	case !leq(max(b.Virtual, b.Release), b.Rank):
		return "rank bound below max(virtual, release)", true
	case !leq(b.Rank, sub):
		return "subset bound below rank bound", true
	}
	return "", false
}

func TestBoundsBelowExactOptimum(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genGang(6, 4, 5, 3).Draw(t, "instance")
		if msg, bad := boundsViolation(in, 1); bad {
			t.Fatal(msg)
		}
	})
}

func TestBoundsBelowHalfSlotOptimum(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genGang(5, 4, 3, 2).Draw(t, "instance")
		if msg, bad := boundsViolation(in, 2); bad {
			t.Fatal(msg)
		}
	})
}

// perJobBound is a deliberately WRONG "bound": it pairs each job's virtual
// SRPT completion with its own r_j + p_j. The cluster may finish jobs in a
// different order than the virtual machine, so it can exceed the optimum.
func perJobBound(in gangInstance) float64 {
	vj, _ := Virtual(in.Jobs, in.G)
	c, _ := completions(vj, 1, nil)
	s := 0.0
	for i, j := range in.Jobs {
		s += max(c[i], j.Release+j.ProcTime)
	}
	return s
}

// TestWrongBoundIsCaught shows that comparing with the exact optimum can
// refute an invalid bound.
func TestWrongBoundIsCaught(t *testing.T) {
	gen := genGang(5, 4, 4, 3)
	for seed := range 2000 {
		in := gen.Example(seed)
		opt, err := ExactOptimum(in.Jobs, in.G, 1)
		if err != nil {
			t.Fatal(err)
		}
		if !leq(perJobBound(in), opt.SumCompletion) {
			t.Logf("seed %d refutes the per-job bound: G=%d %+v: %v > %v", seed, in.G, in.Jobs, perJobBound(in), opt.SumCompletion)
			return
		}
	}
	t.Fatal("per-job max bound never exceeded the optimum: the property cannot catch it")
}

func TestBoundsHandExample(t *testing.T) {
	// G = 4. A needs all 4 GPUs for 2 s, B one GPU for 4 s, both at 0.
	// Virtual sizes 2 and 1: V = (1, 3), sum 4. Release bound 2 + 4 = 6.
	// Sorted: V = (1, 3), R = (2, 4): rank bound 2 + 4 = 6. The optimum
	// runs A first (2) then B (6): 8; or B alone first... B then A: 4 + 6.
	jobs := []GangJob{{ID: 1, GPUs: 4, ProcTime: 2}, {ID: 2, GPUs: 1, ProcTime: 4}}
	b, err := LowerBounds(jobs, 4)
	if err != nil {
		t.Fatal(err)
	}
	if b.Virtual != 4 || b.Release != 6 || b.Rank != 6 || b.SumRelease != 0 || b.Best() != 6 || b.BestFlow() != 6 {
		t.Errorf("bounds %+v", b)
	}
	opt, err := ExactOptimum(jobs, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	if opt.SumCompletion != 8 || !slices.Equal(opt.Completion, []float64{2, 6}) {
		t.Errorf("optimum %+v", opt)
	}
	vj, _ := Virtual(jobs, 4)
	if want := []Job{{1, 0, 2}, {2, 0, 1}}; !slices.Equal(vj, want) {
		t.Errorf("virtual %v, want %v", vj, want)
	}
}

func TestRankBoundCanBeatBoth(t *testing.T) {
	// Rank mixes the two bounds per order statistic, so it can be strictly
	// above both sums: find such an instance among generated ones.
	gen := genGang(6, 4, 5, 4)
	for seed := range 500 {
		in := gen.Example(seed)
		b, _ := LowerBounds(in.Jobs, in.G)
		if b.Rank > max(b.Virtual, b.Release)+1e-9 {
			return
		}
	}
	t.Fatal("rank bound never strictly better than max(virtual, release)")
}

func TestClusterErrors(t *testing.T) {
	cases := []struct {
		name string
		jobs []GangJob
		g    int
		want error
		says string
	}{
		{"too wide", []GangJob{{ID: 3, GPUs: 5, ProcTime: 1}}, 4, ErrInvalidJob, "job 3 needs 5 GPUs, cluster has 4"},
		{"no gpus", []GangJob{{ID: 3, GPUs: 0, ProcTime: 1}}, 4, ErrInvalidJob, "job 3 needs 0 GPUs"},
		{"empty cluster", nil, 0, ErrInvalidParameter, "0 GPUs"},
		{"nan time", []GangJob{{ID: 8, GPUs: 1, ProcTime: math.NaN()}}, 2, ErrInvalidJob, "job 8: processing time NaN"},
		{"negative time", []GangJob{{ID: 8, GPUs: 1, ProcTime: -2}}, 2, ErrInvalidJob, "job 8"},
		{"negative release", []GangJob{{ID: 8, GPUs: 1, Release: -1}}, 2, ErrInvalidJob, "job 8: release time -1"},
		{"duplicate", []GangJob{{ID: 8, GPUs: 1}, {ID: 8, GPUs: 2}}, 2, ErrDuplicateJob, "job 8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			check := func(what string, err error) {
				if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
					t.Errorf("%s: err %v, want %v mentioning %q", what, err, c.want, c.says)
				}
			}
			_, err := Virtual(c.jobs, c.g)
			check("Virtual", err)
			_, err = LowerBounds(c.jobs, c.g)
			check("LowerBounds", err)
			_, err = SubsetBound(c.jobs, c.g)
			check("SubsetBound", err)
			_, err = ExactOptimum(c.jobs, c.g, 1)
			check("ExactOptimum", err)
		})
	}
}

// TestBoundsSweep runs the bound property on 1,000 more generated instances,
// deterministically (seeds 0..999), beyond rapid's default 100.
func TestBoundsSweep(t *testing.T) {
	gen := genGang(6, 4, 5, 3)
	for seed := range 1000 {
		in := gen.Example(seed)
		if msg, bad := boundsViolation(in, 1); bad {
			t.Fatalf("seed %d, G=%d %+v: %s", seed, in.G, in.Jobs, msg)
		}
	}
}
