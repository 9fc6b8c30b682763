package srpt

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

func TestWeightedEqualWeightsIsSRPT(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		jobs := genDyadicJobs(20).Draw(t, "jobs")
		w := rapid.SampledFrom([]float64{0.5, 1, 3}).Draw(t, "w")
		wj := make([]WeightedJob, len(jobs))
		for i, j := range jobs {
			wj[i] = WeightedJob{ID: j.ID, Release: j.Release, Size: j.Size, Weight: w}
		}
		a, err := Offline(jobs, 1)
		if err != nil {
			t.Fatal(err)
		}
		b, err := OfflineWeighted(wj, 1)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a.Completion, b.Completion) || !slices.Equal(a.Segments, b.Segments) {
			t.Fatalf("equal weights: weighted %v, SRPT %v", b.Completion, a.Completion)
		}
		if !closeTo(b.SumWeightedCompletion, w*a.SumCompletion) {
			t.Fatalf("weighted sum %v, want %v", b.SumWeightedCompletion, w*a.SumCompletion)
		}
	})
}

// TestWeightedOptimalWithoutReleases: with every release at 0 the rule is
// Smith's ratio rule, optimal; checked against all job orders (preemption
// does not help without releases).
func TestWeightedOptimalWithoutReleases(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 6).Draw(t, "n")
		jobs := make([]WeightedJob, n)
		for i := range jobs {
			jobs[i] = WeightedJob{ID: i, Size: float64(rapid.IntRange(0, 8).Draw(t, "s")), Weight: float64(rapid.IntRange(1, 5).Draw(t, "w"))}
		}
		s, err := OfflineWeighted(jobs, 1)
		if err != nil {
			t.Fatal(err)
		}
		best := math.Inf(1)
		perm := make([]int, n)
		for i := range perm {
			perm[i] = i
		}
		var rec func(k int)
		rec = func(k int) {
			if k == n {
				c, tot := 0.0, 0.0
				for _, i := range perm {
					c += jobs[i].Size
					tot += jobs[i].Weight * c
				}
				best = min(best, tot)
				return
			}
			for i := k; i < n; i++ {
				perm[k], perm[i] = perm[i], perm[k]
				rec(k + 1)
				perm[k], perm[i] = perm[i], perm[k]
			}
		}
		rec(0)
		if n > 0 && !closeTo(s.SumWeightedCompletion, best) {
			t.Fatalf("weighted rule %v, best order %v", s.SumWeightedCompletion, best)
		}
	})
}

// weightedOpt is a brute-force optimum of sum w_j C_j over unit-slot
// preemptive single-machine schedules (memoised over time and remaining
// vector). Tiny instances only.
func weightedOpt(jobs []WeightedJob) float64 {
	memo := map[string]float64{}
	rem := make([]int, len(jobs))
	for i, j := range jobs {
		rem[i] = int(j.Size)
	}
	var rec func(t int) float64
	rec = func(t int) float64 {
		key := fmt.Sprint(t, rem)
		if v, ok := memo[key]; ok {
			return v
		}
		left := false
		best := math.Inf(1)
		for i, j := range jobs {
			if rem[i] == 0 {
				continue
			}
			left = true
			if int(j.Release) > t {
				continue
			}
			rem[i]--
			v := rec(t + 1)
			if rem[i] == 0 {
				v += j.Weight * float64(t+1)
			}
			rem[i]++
			best = min(best, v)
		}
		if !left {
			best = 0
		} else if best == math.Inf(1) { // nothing released: idle
			best = rec(t + 1)
		}
		memo[key] = best
		return best
	}
	base := 0.0
	for _, j := range jobs {
		if j.Size == 0 {
			base += j.Weight * j.Release
		}
	}
	return base + rec(0)
}

// TestWeightedIsOnlyAHeuristic: the brute force is never beaten by the rule
// (a sanity check of the brute force), and on a recorded instance with
// release times the rule is strictly worse, which is why it is documented as
// a heuristic.
func TestWeightedIsOnlyAHeuristic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 4).Draw(t, "n")
		jobs := make([]WeightedJob, n)
		for i := range jobs {
			jobs[i] = WeightedJob{ID: i, Release: float64(rapid.IntRange(0, 4).Draw(t, "r")),
				Size: float64(rapid.IntRange(0, 4).Draw(t, "s")), Weight: float64(rapid.IntRange(1, 5).Draw(t, "w"))}
		}
		s, err := OfflineWeighted(jobs, 1)
		if err != nil {
			t.Fatal(err)
		}
		if opt := weightedOpt(jobs); s.SumWeightedCompletion < opt-1e-9 {
			t.Fatalf("rule %v beats the brute-force optimum %v", s.SumWeightedCompletion, opt)
		}
	})
	jobs := []WeightedJob{
		{ID: 0, Release: 1, Size: 3, Weight: 4},
		{ID: 1, Release: 3, Size: 1, Weight: 4},
		{ID: 2, Release: 2, Size: 2, Weight: 4},
		{ID: 3, Release: 1, Size: 1, Weight: 1},
	}
	s, err := OfflineWeighted(jobs, 1)
	if err != nil {
		t.Fatal(err)
	}
	if opt := weightedOpt(jobs); s.SumWeightedCompletion != 72 || opt != 70 {
		t.Fatalf("weighted rule %v (want 72), optimum %v (want 70)", s.SumWeightedCompletion, opt)
	}
}
