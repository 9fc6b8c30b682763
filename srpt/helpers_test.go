package srpt

import (
	"cmp"
	"math"
	"slices"

	"pgregory.net/rapid"
)

// genIDs draws n distinct, unsorted, possibly negative job IDs.
func genIDs(t *rapid.T, n int) []int {
	base := make([]int, n)
	for i := range base {
		base[i] = 3*i - n
	}
	return rapid.Permutation(base).Draw(t, "ids")
}

// genIntJobs generates small single-machine instances with integer releases
// and sizes, in arbitrary input order.
func genIntJobs(maxN, maxRel, maxSize int) *rapid.Generator[[]Job] {
	return rapid.Custom(func(t *rapid.T) []Job {
		n := rapid.IntRange(0, maxN).Draw(t, "n")
		ids := genIDs(t, n)
		jobs := make([]Job, n)
		for i := range jobs {
			jobs[i] = Job{
				ID:      ids[i],
				Release: float64(rapid.IntRange(0, maxRel).Draw(t, "r")),
				Size:    float64(rapid.IntRange(0, maxSize).Draw(t, "s")),
			}
		}
		return jobs
	})
}

// genDyadicJobs generates instances whose times are multiples of 1/4, so that
// every computation with speeds 1/2, 1, 2 is exact in float64.
func genDyadicJobs(maxN int) *rapid.Generator[[]Job] {
	return rapid.Custom(func(t *rapid.T) []Job {
		n := rapid.IntRange(0, maxN).Draw(t, "n")
		ids := genIDs(t, n)
		jobs := make([]Job, n)
		for i := range jobs {
			jobs[i] = Job{
				ID:      ids[i],
				Release: float64(rapid.IntRange(0, 40).Draw(t, "r")) / 4,
				Size:    float64(rapid.IntRange(0, 24).Draw(t, "s")) / 4,
			}
		}
		return jobs
	})
}

// genGang generates tiny rigid-job cluster instances with integer data.
func genGang(maxN, maxG, maxRel, maxP int) *rapid.Generator[gangInstance] {
	return rapid.Custom(func(t *rapid.T) gangInstance {
		g := rapid.IntRange(1, maxG).Draw(t, "G")
		n := rapid.IntRange(0, maxN).Draw(t, "n")
		ids := genIDs(t, n)
		jobs := make([]GangJob, n)
		for i := range jobs {
			jobs[i] = GangJob{
				ID:       ids[i],
				Release:  float64(rapid.IntRange(0, maxRel).Draw(t, "r")),
				GPUs:     rapid.IntRange(1, g).Draw(t, "g"),
				ProcTime: float64(rapid.IntRange(0, maxP).Draw(t, "p")),
			}
		}
		return gangInstance{G: g, Jobs: jobs}
	})
}

type gangInstance struct {
	G    int
	Jobs []GangJob
}

// unitJobs turns a single-machine instance into a one-GPU cluster instance.
func unitJobs(jobs []Job) []GangJob {
	out := make([]GangJob, len(jobs))
	for i, j := range jobs {
		out[i] = GangJob{ID: j.ID, Release: j.Release, GPUs: 1, ProcTime: j.Size}
	}
	return out
}

// rule reports whether job a (remaining ra) should run before job b
// (remaining rb).
type rule func(a Job, ra float64, b Job, rb float64) bool

func srptRule(a Job, ra float64, b Job, rb float64) bool {
	if ra != rb {
		return ra < rb
	}
	if a.Release != b.Release {
		return a.Release < b.Release
	}
	return a.ID < b.ID
}

// lrptRule is a deliberately wrong rule: longest remaining first.
func lrptRule(a Job, ra float64, b Job, rb float64) bool {
	if ra != rb {
		return ra > rb
	}
	return a.ID < b.ID
}

// fifoRule is a non-optimal rule for sum C_j with preemption: first come,
// first served.
func fifoRule(a Job, ra float64, b Job, rb float64) bool {
	if a.Release != b.Release {
		return a.Release < b.Release
	}
	return a.ID < b.ID
}

// unitSim simulates a preemptive priority rule on integer data, one unit of
// time at a time (speed 1). It is deliberately naive: O(n * horizon).
func unitSim(jobs []Job, better rule) []float64 {
	n := len(jobs)
	rem := make([]float64, n)
	comp := make([]float64, n)
	left := 0
	for i, j := range jobs {
		rem[i] = j.Size
		if j.Size == 0 {
			comp[i] = j.Release
		} else {
			left++
		}
	}
	for t := 0.0; left > 0; {
		best := -1
		next := math.Inf(1)
		for i, j := range jobs {
			if rem[i] == 0 {
				continue
			}
			if j.Release > t {
				next = min(next, j.Release)
				continue
			}
			if best < 0 || better(j, rem[i], jobs[best], rem[best]) {
				best = i
			}
		}
		if best < 0 {
			t = next
			continue
		}
		rem[best]--
		t++
		if rem[best] == 0 {
			comp[best] = t
			left--
		}
	}
	return comp
}

func sum(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}

// makespanFrom returns the earliest time one speed-1 machine can finish all
// the given jobs: process them in release order without unnecessary idling.
func makespanFrom(jobs []Job) float64 {
	js := slices.Clone(jobs)
	slices.SortFunc(js, func(a, b Job) int { return cmp.Compare(a.Release, b.Release) })
	t := 0.0
	for _, j := range js {
		t = max(t, j.Release) + j.Size
	}
	return t
}

func closeTo(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*max(1, math.Abs(a), math.Abs(b))
}
