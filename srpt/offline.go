package srpt

import (
	"fmt"
	"math"
	"slices"

	"github.com/gpusched/gpusched/internal/srptq"
)

// Job is one job of a single-machine instance.
type Job struct {
	// ID is chosen by the caller and must be unique within an instance.
	ID int
	// Release is the time, in seconds, at which the job becomes available
	// (finite, >= 0).
	Release float64
	// Size is the work of the job in work units (finite, >= 0); on a machine
	// of speed v it needs Size/v seconds of processing. A job of size 0
	// completes at its release time.
	Size float64
}

// WeightedJob is a Job with a positive weight, for OfflineWeighted and
// Queue.AddWeighted.
type WeightedJob struct {
	// ID is chosen by the caller and must be unique within an instance.
	ID int
	// Release is the release time in seconds (finite, >= 0).
	Release float64
	// Size is the work in work units (finite, >= 0).
	Size float64
	// Weight is the job's importance (finite, > 0); larger runs earlier.
	Weight float64
}

// Segment is a maximal interval during which one job runs alone on the
// machine.
type Segment struct {
	// ID is the running job.
	ID int
	// Start and End delimit the interval in seconds, Start < End.
	Start, End float64
}

// Schedule is the result of an offline single-machine simulation.
type Schedule struct {
	// Completion[i] is the completion time, in seconds, of the i-th input
	// job (same index as the input slice, whatever its order).
	Completion []float64
	// Segments lists the processing intervals in time order. Consecutive
	// segments always belong to different jobs, or are separated by idle
	// time. Zero-length runs (jobs of size 0) produce no segment.
	Segments []Segment
	// SumCompletion is the sum of the completion times in seconds.
	SumCompletion float64
	// SumFlow is the sum of flow times (completion minus release) in
	// seconds.
	SumFlow float64
	// SumWeightedCompletion is the sum of weight times completion time; it
	// equals SumCompletion for unweighted jobs (weight 1).
	SumWeightedCompletion float64
}

// Offline runs preemptive SRPT on one machine of the given speed (work units
// per second) and returns every job's completion time and the schedule as
// segments. Jobs may be given in any order; they are sorted internally by
// release time. At every instant the machine runs the released, unfinished
// job with the smallest remaining size; ties are broken by earlier release,
// then by smaller ID, so the result is deterministic and a running job is
// never preempted by an equal-sized newcomer.
//
// The sum of completion times of this schedule is optimal for
// 1 | r_j, pmtn | sum C_j (Schrage 1968; see the package documentation),
// and hence also for the total flow time sum (C_j - r_j). Running time is
// O(n log n); memory O(n).
//
// Errors (wrapping ErrInvalidParameter, ErrInvalidJob or ErrDuplicateJob)
// are returned for a non-positive or non-finite speed, a NaN, infinite or
// negative size or release, and repeated IDs.
func Offline(jobs []Job, speed float64) (Schedule, error) {
	var s Schedule
	s.Completion = make([]float64, len(jobs))
	segs, err := simulate(jobs, speed, false, s.Completion, make([]Segment, 0, segCap(len(jobs))), true)
	if err != nil {
		return Schedule{}, err
	}
	s.Segments = segs
	s.SumCompletion, s.SumFlow, s.SumWeightedCompletion = sums(jobs, s.Completion)
	return s, nil
}

// completions is Offline without the segments: it appends the SRPT completion
// time (seconds) of every job, in input order, to dst and returns the
// extended slice. It is the fast path for bounds and for callers that only
// need the objective.
func completions(jobs []Job, speed float64, dst []float64) ([]float64, error) {
	start := len(dst)
	dst = slices.Grow(dst, len(jobs))[:start+len(jobs)]
	if _, err := simulate(jobs, speed, false, dst[start:], nil, false); err != nil {
		return dst[:start], err
	}
	return dst, nil
}

// OfflineWeighted runs a preemptive weighted-SRPT heuristic on one machine:
// at every instant it runs the released, unfinished job with the smallest
// remaining size divided by weight (ties: earlier release, then smaller ID).
// With all weights equal it is exactly Offline.
//
// It is a HEURISTIC. Minimising sum w_j C_j on one machine with release
// times and preemption (1 | r_j, pmtn | sum w_j C_j) is strongly NP-hard
// (Labetoulle, Lawler, Lenstra, Rinnooy Kan 1984), so no fast rule is optimal
// in general; without release times the rule reduces to Smith's ratio rule,
// which is optimal. Running time O(n log n).
func OfflineWeighted(jobs []WeightedJob, speed float64) (Schedule, error) {
	var s Schedule
	s.Completion = make([]float64, len(jobs))
	segs, err := simulate(jobs, speed, true, s.Completion, make([]Segment, 0, segCap(len(jobs))), true)
	if err != nil {
		return Schedule{}, err
	}
	s.Segments = segs
	s.SumCompletion, s.SumFlow, s.SumWeightedCompletion = sums(jobs, s.Completion)
	return s, nil
}

// segCap is the initial capacity of the segment slice: one segment per job
// plus room for preemptions of half the jobs (there are at most 2n-1
// segments: each ends with a completion or a preemption by an arrival).
func segCap(n int) int { return n + n/2 + 1 }

// jobT lets one generic engine read both job types without copying them.
type jobT interface {
	Job | WeightedJob
	rel() float64
	size() float64
	weight() float64
	ident() int
}

func (j Job) rel() float64            { return j.Release }
func (j Job) size() float64           { return j.Size }
func (j Job) weight() float64         { return 1 }
func (j Job) ident() int              { return j.ID }
func (j WeightedJob) rel() float64    { return j.Release }
func (j WeightedJob) size() float64   { return j.Size }
func (j WeightedJob) weight() float64 { return j.Weight }
func (j WeightedJob) ident() int      { return j.ID }

func sums[J jobT](jobs []J, comp []float64) (sumC, sumF, sumW float64) {
	for i, j := range jobs {
		sumC += comp[i]
		sumF += comp[i] - j.rel()
		sumW += j.weight() * comp[i]
	}
	return sumC, sumF, sumW
}

// prepare checks every job and the speed, and returns the jobs in (release,
// ID) order together with orig, the input index of each sorted job; orig is
// nil (identity) when the input is already in that order, the common case
// for traces, and then no copy is made.
func prepare[J jobT](jobs []J, speed float64, weighted bool) ([]J, []int32, error) {
	if err := checkSpeed(speed); err != nil {
		return nil, nil, err
	}
	if len(jobs) > math.MaxInt32 {
		return nil, nil, fmt.Errorf("%w: %d jobs exceed the limit of %d", ErrInvalidParameter, len(jobs), math.MaxInt32)
	}
	idsIncreasing := true
	relSorted := true
	for i, j := range jobs {
		if err := checkJob(j.ident(), j.rel(), j.size()); err != nil {
			return nil, nil, err
		}
		if weighted {
			if err := checkWeight(j.ident(), j.weight()); err != nil {
				return nil, nil, err
			}
		}
		if i > 0 {
			p := jobs[i-1]
			if p.ident() >= j.ident() {
				idsIncreasing = false
			}
			if p.rel() > j.rel() || (p.rel() == j.rel() && p.ident() > j.ident()) {
				relSorted = false
			}
		}
	}
	if relSorted && idsIncreasing {
		return jobs, nil, nil
	}
	keys := make([]sortKey, len(jobs))
	for i, j := range jobs {
		keys[i] = sortKey{rel: relBits(j.rel()), id: j.ident(), idx: int32(i)}
	}
	if id, dup := sortByReleaseID(keys, idsIncreasing, relSorted); dup {
		return nil, nil, fmt.Errorf("%w: job %d appears more than once", ErrDuplicateJob, id)
	}
	if relSorted {
		return jobs, nil, nil
	}
	sorted := make([]J, len(jobs))
	orig := make([]int32, len(jobs))
	for k, key := range keys {
		sorted[k] = jobs[key.idx]
		orig[k] = key.idx
	}
	return sorted, orig, nil
}

// advanceHead is srptq.AdvanceHead: Offline and the queue share it so that they agree to the
// last bit.
func advanceHead(rem, now, limit, speed float64) (newRem, finish float64, done bool) {
	return srptq.AdvanceHead(rem, now, limit, speed)
}

// simulate is the offline engine. comp is indexed like jobs. If wantSegs, the
// segments are appended to segs and returned.
func simulate[J jobT](jobs []J, speed float64, weighted bool, comp []float64, segs []Segment, wantSegs bool) ([]Segment, error) {
	jobs, orig, err := prepare(jobs, speed, weighted)
	if err != nil {
		return nil, err
	}
	n := len(jobs)
	h := make(minHeap, 0, 64)
	t := 0.0
	i := 0
	// The open segment: job at position cur ran during [segStart, segEnd).
	cur := int32(-1)
	segStart, segEnd := 0.0, 0.0
	run := func(pos int32, a, b float64) {
		if b <= a {
			return
		}
		if pos == cur && a == segEnd {
			segEnd = b
			return
		}
		if cur >= 0 {
			segs = append(segs, Segment{ID: jobs[cur].ident(), Start: segStart, End: segEnd})
		}
		cur, segStart, segEnd = pos, a, b
	}
	for i < n || len(h) > 0 {
		if len(h) == 0 {
			if r := jobs[i].rel(); r > t {
				t = r
			}
		}
		for i < n {
			j := jobs[i]
			if j.rel() > t {
				break
			}
			e := entry{key: j.size(), rem: j.size(), pos: int32(i)}
			if weighted {
				e.key = e.rem / j.weight()
			}
			h.push(e)
			i++
		}
		top := &h[0]
		next := math.Inf(1)
		if i < n {
			next = jobs[i].rel()
		}
		rem, finish, done := advanceHead(top.rem, t, next, speed)
		if done {
			if wantSegs {
				run(top.pos, t, finish)
			}
			t = finish
			if orig == nil {
				comp[top.pos] = t
			} else {
				comp[orig[top.pos]] = t
			}
			h.pop()
			continue
		}
		if wantSegs {
			run(top.pos, t, next)
		}
		top.rem = rem
		top.key = rem
		if weighted {
			top.key = rem / jobs[top.pos].weight()
		}
		t = next
	}
	if wantSegs && cur >= 0 {
		segs = append(segs, Segment{ID: jobs[cur].ident(), Start: segStart, End: segEnd})
	}
	return segs, nil
}
