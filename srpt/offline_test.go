package srpt

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestOfflineHandExample(t *testing.T) {
	// A (size 4) starts at 0; B (size 1) arrives at 1 and preempts A; C
	// (size 3) arrives at 2 and waits: A has 3 left, tie on size, A was
	// released first. Speed 1.
	jobs := []Job{{ID: 7, Release: 2, Size: 3}, {ID: 5, Release: 0, Size: 4}, {ID: 6, Release: 1, Size: 1}}
	s, err := Offline(jobs, 1)
	if err != nil {
		t.Fatal(err)
	}
	wantC := []float64{8, 5, 2}
	if !slices.Equal(s.Completion, wantC) {
		t.Errorf("completions %v, want %v", s.Completion, wantC)
	}
	wantSeg := []Segment{{5, 0, 1}, {6, 1, 2}, {5, 2, 5}, {7, 5, 8}}
	if !slices.Equal(s.Segments, wantSeg) {
		t.Errorf("segments %v, want %v", s.Segments, wantSeg)
	}
	if s.SumCompletion != 15 || s.SumFlow != 12 || s.SumWeightedCompletion != 15 {
		t.Errorf("sums %v %v %v", s.SumCompletion, s.SumFlow, s.SumWeightedCompletion)
	}
	// Speed 2: A has 2 left at 1 and is preempted by B until 1.5; at 2 A has
	// 1 left < 3, so it finishes at 2.5 and C runs until 4.
	s2, err := Offline(jobs, 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{4, 2.5, 1.5}; !slices.Equal(s2.Completion, want) {
		t.Errorf("speed 2 completions %v, want %v", s2.Completion, want)
	}
}

func TestOfflineEdgeCases(t *testing.T) {
	s, err := Offline(nil, 1)
	if err != nil || len(s.Completion) != 0 || len(s.Segments) != 0 || s.SumCompletion != 0 {
		t.Fatalf("empty: %+v, %v", s, err)
	}
	// Zero-size jobs complete at release and make no segment; idle gaps are
	// not segments either.
	s, err = Offline([]Job{{1, 3, 0}, {2, 0, 1}, {3, 5, 2}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{3, 1, 7}; !slices.Equal(s.Completion, want) {
		t.Errorf("completions %v, want %v", s.Completion, want)
	}
	if want := []Segment{{2, 0, 1}, {3, 5, 7}}; !slices.Equal(s.Segments, want) {
		t.Errorf("segments %v, want %v", s.Segments, want)
	}
	c, err := completions([]Job{{1, 0, 2}}, 1, []float64{42})
	if err != nil || !slices.Equal(c, []float64{42, 2}) {
		t.Errorf("Completions append: %v %v", c, err)
	}
}

func TestOfflineErrors(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		name  string
		jobs  []Job
		speed float64
		want  error
		says  string
	}{
		{"nan size", []Job{{ID: 4, Size: nan}}, 1, ErrInvalidJob, "job 4"},
		{"negative size", []Job{{ID: 1}, {ID: 9, Size: -1}}, 1, ErrInvalidJob, "job 9: size -1"},
		{"inf size", []Job{{ID: 3, Size: inf}}, 1, ErrInvalidJob, "job 3"},
		{"negative release", []Job{{ID: 2, Release: -0.5, Size: 1}}, 1, ErrInvalidJob, "release time -0.5"},
		{"nan release", []Job{{ID: 2, Release: nan, Size: 1}}, 1, ErrInvalidJob, "job 2"},
		{"inf release", []Job{{ID: 2, Release: inf, Size: 1}}, 1, ErrInvalidJob, "job 2"},
		{"zero speed", []Job{{ID: 1, Size: 1}}, 0, ErrInvalidParameter, "speed 0"},
		{"negative speed", nil, -2, ErrInvalidParameter, "speed -2"},
		{"nan speed", nil, nan, ErrInvalidParameter, "speed NaN"},
		{"inf speed", nil, inf, ErrInvalidParameter, "speed +Inf"},
		{"duplicate adjacent", []Job{{ID: 1, Size: 1}, {ID: 1, Size: 2}}, 1, ErrDuplicateJob, "job 1"},
		{"duplicate apart", []Job{{ID: 8, Release: 5}, {ID: 2}, {ID: 8, Release: 1}}, 1, ErrDuplicateJob, "job 8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Offline(c.jobs, c.speed)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("Offline: err %v, want %v mentioning %q", err, c.want, c.says)
			}
			if _, err := completions(c.jobs, c.speed, nil); !errors.Is(err, c.want) {
				t.Fatalf("Completions: err %v, want %v", err, c.want)
			}
		})
	}
	_, err := OfflineWeighted([]WeightedJob{{ID: 6, Size: 1, Weight: 0}}, 1)
	if !errors.Is(err, ErrInvalidJob) || !strings.Contains(err.Error(), "job 6: weight 0") {
		t.Errorf("zero weight: %v", err)
	}
	_, err = OfflineWeighted([]WeightedJob{{ID: 6, Size: 1, Weight: math.NaN()}}, 1)
	if !errors.Is(err, ErrInvalidJob) {
		t.Errorf("NaN weight: %v", err)
	}
}

// optimalityViolation is the optimality property as a plain function, so
// that it can be run both under rapid (for the real solver) and on
// generated examples (to show that a wrong rule is caught). It compares the
// solver's total completion time with the brute-force optimum over all
// integer-slot schedules (ExactOptimum with one GPU, which enumerates
// schedules by dynamic programming and knows nothing of SRPT).
func optimalityViolation(jobs []Job, solve func([]Job) ([]float64, error)) error {
	comp, err := solve(jobs)
	if err != nil {
		return err
	}
	opt, err := ExactOptimum(unitJobs(jobs), 1, 1)
	if err != nil {
		return err
	}
	if got := sum(comp); got != opt.SumCompletion {
		return fmt.Errorf("sum C = %v, brute-force optimum %v (completions %v, optimal %v)", got, opt.SumCompletion, comp, opt.Completion)
	}
	return nil
}

func offlineSolver(jobs []Job) ([]float64, error) {
	s, err := Offline(jobs, 1)
	return s.Completion, err
}

func ruleSolver(r rule) func([]Job) ([]float64, error) {
	return func(jobs []Job) ([]float64, error) { return unitSim(jobs, r), nil }
}

func TestOfflineOptimalProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		jobs := genIntJobs(7, 8, 5).Draw(t, "jobs")
		if err := optimalityViolation(jobs, offlineSolver); err != nil {
			t.Fatal(err)
		}
	})
}

// TestWrongRuleIsCaught shows that the optimality property can fail: run on
// the same generator, longest-remaining-first and FIFO are refuted, while
// the naive unit-step SRPT passes.
func TestWrongRuleIsCaught(t *testing.T) {
	gen := genIntJobs(6, 6, 4)
	for _, c := range []struct {
		name  string
		r     rule
		wrong bool
	}{{"LRPT", lrptRule, true}, {"FIFO", fifoRule, true}, {"unit-step SRPT", srptRule, false}} {
		caught := 0
		for seed := range 200 {
			if optimalityViolation(gen.Example(seed), ruleSolver(c.r)) != nil {
				caught++
			}
		}
		if c.wrong && caught == 0 {
			t.Errorf("%s: optimality property found no counterexample in 200 instances", c.name)
		}
		if !c.wrong && caught != 0 {
			t.Errorf("%s: %d false alarms", c.name, caught)
		}
		t.Logf("%s: %d of 200 instances refute optimality", c.name, caught)
	}
}

// TestOfflineMatchesUnitSim cross-checks the event-driven engine against the
// naive unit-step simulation of the same rule, job by job.
func TestOfflineMatchesUnitSim(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		jobs := genIntJobs(12, 10, 6).Draw(t, "jobs")
		s, err := Offline(jobs, 1)
		if err != nil {
			t.Fatal(err)
		}
		if want := unitSim(jobs, srptRule); !slices.Equal(s.Completion, want) {
			t.Fatalf("completions %v, unit-step SRPT %v", s.Completion, want)
		}
	})
}

// checkSegments verifies a schedule against the definition of SRPT, exactly
// (use data on which float arithmetic is exact): segments are ordered and
// disjoint, the machine never idles while a job waits, every segment runs a
// released job with the smallest (remaining, release, ID) among released
// unfinished jobs, no arrival during a segment should have preempted it,
// every job gets exactly its size and completes at the end of its last
// segment.
func checkSegments(jobs []Job, speed float64, s Schedule) error {
	byID := map[int]int{}
	for i, j := range jobs {
		byID[j.ID] = i
	}
	rem := make([]float64, len(jobs))
	last := make([]float64, len(jobs))
	for i, j := range jobs {
		rem[i] = j.Size
		last[i] = j.Release
	}
	key := func(i int) [3]float64 { return [3]float64{rem[i], jobs[i].Release, float64(jobs[i].ID)} }
	lessKey := func(a, b [3]float64) bool { return slices.Compare(a[:], b[:]) < 0 }
	prevEnd := 0.0
	for k, seg := range s.Segments {
		if !(seg.Start < seg.End) || seg.Start < prevEnd {
			return fmt.Errorf("segment %d %+v: bad interval (previous end %v)", k, seg, prevEnd)
		}
		j, ok := byID[seg.ID]
		if !ok {
			return fmt.Errorf("segment %d: unknown job %d", k, seg.ID)
		}
		if jobs[j].Release > seg.Start {
			return fmt.Errorf("segment %d runs job %d before its release", k, seg.ID)
		}
		if k > 0 && s.Segments[k-1].ID == seg.ID && s.Segments[k-1].End == seg.Start {
			return fmt.Errorf("segments %d and %d of job %d are not maximal", k-1, k, seg.ID)
		}
		for i := range jobs {
			if rem[i] == 0 || i == j {
				continue
			}
			if seg.Start > prevEnd && jobs[i].Release < seg.Start {
				return fmt.Errorf("machine idle during [%v, %v) while job %d waits", prevEnd, seg.Start, jobs[i].ID)
			}
			if jobs[i].Release <= seg.Start && lessKey(key(i), key(j)) {
				return fmt.Errorf("segment %d at %v runs job %d (key %v) but job %d has key %v", k, seg.Start, seg.ID, key(j), jobs[i].ID, key(i))
			}
			if r := jobs[i].Release; r > seg.Start && r < seg.End {
				if left := rem[j] - (r-seg.Start)*speed; rem[i] < left {
					return fmt.Errorf("job %d (size %v) arriving at %v should preempt job %d (%v left)", jobs[i].ID, rem[i], r, seg.ID, left)
				}
			}
		}
		rem[j] -= (seg.End - seg.Start) * speed
		if rem[j] < 0 {
			return fmt.Errorf("job %d processed beyond its size", seg.ID)
		}
		last[j] = seg.End
		prevEnd = seg.End
	}
	for i := range jobs {
		if rem[i] != 0 {
			return fmt.Errorf("job %d has %v work left after all segments", jobs[i].ID, rem[i])
		}
		if s.Completion[i] != last[i] {
			return fmt.Errorf("job %d completes at %v, its last segment ends at %v", jobs[i].ID, s.Completion[i], last[i])
		}
	}
	return nil
}

func TestOfflineSegmentsAreSRPT(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		jobs := genDyadicJobs(15).Draw(t, "jobs")
		speed := rapid.SampledFrom([]float64{0.5, 1, 2}).Draw(t, "speed")
		s, err := Offline(jobs, speed)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkSegments(jobs, speed, s); err != nil {
			t.Fatal(err)
		}
	})
}

// TestCheckSegmentsCatchesWrongSchedule makes sure the segment checker itself
// can fail: swapping two segments or using a wrong rule is reported.
func TestCheckSegmentsCatchesWrongSchedule(t *testing.T) {
	jobs := []Job{{ID: 1, Release: 0, Size: 4}, {ID: 2, Release: 1, Size: 1}}
	bad := Schedule{
		Completion: []float64{4, 5},
		Segments:   []Segment{{1, 0, 4}, {2, 4, 5}}, // FIFO
	}
	if err := checkSegments(jobs, 1, bad); err == nil {
		t.Fatal("checker accepted a FIFO schedule")
	}
}

func TestOfflineInputOrderIrrelevant(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		jobs := genDyadicJobs(20).Draw(t, "jobs")
		perm := rapid.Permutation(jobs).Draw(t, "perm")
		a, err := Offline(jobs, 1)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Offline(perm, 1)
		if err != nil {
			t.Fatal(err)
		}
		ca := map[int]float64{}
		for i, j := range jobs {
			ca[j.ID] = a.Completion[i]
		}
		for i, j := range perm {
			if ca[j.ID] != b.Completion[i] {
				t.Fatalf("job %d: %v vs %v after permuting the input", j.ID, ca[j.ID], b.Completion[i])
			}
		}
		if !slices.Equal(a.Segments, b.Segments) {
			t.Fatalf("segments differ after permuting the input")
		}
	})
}

// TestSchrageOrderStatistics checks, by brute force over subsets, the
// classical fact the Rank bound relies on: the k-th SRPT completion time is
// the earliest time at which any schedule can have completed k jobs.
func TestSchrageOrderStatistics(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		jobs := genDyadicJobs(8).Draw(t, "jobs")
		comp, err := completions(jobs, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(comp)
		n := len(jobs)
		best := make([]float64, n+1)
		for k := range best {
			best[k] = math.Inf(1)
		}
		sub := make([]Job, 0, n)
		for mask := 1; mask < 1<<n; mask++ {
			sub = sub[:0]
			for i := range n {
				if mask&(1<<i) != 0 {
					sub = append(sub, jobs[i])
				}
			}
			best[len(sub)] = min(best[len(sub)], makespanFrom(sub))
		}
		for k := 1; k <= n; k++ {
			if comp[k-1] != best[k] {
				t.Fatalf("k=%d: SRPT k-th completion %v, earliest possible %v", k, comp[k-1], best[k])
			}
		}
	})
}

func TestOfflineFloatData(t *testing.T) {
	// Arbitrary floats: the schedule is SRPT up to rounding; check work
	// conservation and the sums.
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 30).Draw(t, "n")
		jobs := make([]Job, n)
		for i := range jobs {
			jobs[i] = Job{ID: i, Release: rapid.Float64Range(0, 100).Draw(t, "r"), Size: rapid.Float64Range(0, 10).Draw(t, "s")}
		}
		speed := rapid.Float64Range(0.1, 10).Draw(t, "speed")
		s, err := Offline(jobs, speed)
		if err != nil {
			t.Fatal(err)
		}
		work := make(map[int]float64)
		for _, seg := range s.Segments {
			work[seg.ID] += (seg.End - seg.Start) * speed
		}
		for i, j := range jobs {
			if !closeTo(work[j.ID], j.Size) && math.Abs(work[j.ID]-j.Size) > 1e-9 {
				t.Fatalf("job %d: processed %v of %v", j.ID, work[j.ID], j.Size)
			}
			if s.Completion[i] < j.Release+j.Size/speed-1e-9 {
				t.Fatalf("job %d completes at %v before release + size/speed", j.ID, s.Completion[i])
			}
		}
		if !closeTo(s.SumFlow, s.SumCompletion-sum(func() []float64 {
			r := make([]float64, n)
			for i, j := range jobs {
				r[i] = j.Release
			}
			return r
		}())) {
			t.Fatalf("SumFlow inconsistent")
		}
	})
}

// TestOfflineOptimalSweep runs the optimality property on 1,000 more
// generated instances, deterministically, beyond rapid's default 100.
func TestOfflineOptimalSweep(t *testing.T) {
	gen := genIntJobs(7, 8, 5)
	for seed := range 1000 {
		jobs := gen.Example(seed)
		if err := optimalityViolation(jobs, offlineSolver); err != nil {
			t.Fatalf("seed %d, %+v: %v", seed, jobs, err)
		}
	}
}
