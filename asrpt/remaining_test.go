package asrpt

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/internal/teeth"
	"github.com/gpusched/gpusched/topology"
)

// orderChecked runs A-SRPT and, after every call, compares the whole priority order of the
// remaining-work conversion (orderPrefix with full, from the incremental waiting list) with
// the order computed from scratch: the overdue jobs in the order the virtual machine finished
// them, then every other present fitting job sorted by freshLess, with its remaining work
// read from the view.
type orderChecked struct {
	*Scheduler
	err error
}

func (c *orderChecked) Schedule(v gpusched.View) (gpusched.Decision, error) {
	d, err := c.Scheduler.Schedule(v)
	if err != nil || c.err != nil {
		return d, err
	}
	s := c.Scheduler
	s.orderPrefix(&v, v.Cluster.NumGPUs(), true)
	got := slices.Clone(s.order)
	var want []*jobState
	var fresh []freshJob
	for _, st := range s.vdone {
		if !st.gone && s.marks[st.key].seen == s.epoch && !st.unfit && s.overdue(st) {
			want = append(want, st)
		}
	}
	for _, list := range [][]gpusched.JobStatus{v.Running, v.Pending} {
		for _, js := range list {
			st := s.jobs[js.Job.ID]
			if st == nil || st.unfit || s.overdue(st) {
				continue
			}
			rkey := float64(st.gpus) * max(st.iters-js.Iterations, 0) * st.tau / st.weight
			fresh = append(fresh, freshJob{rkey, st.vfinish, int32(st.key), int32(st.gpus), st})
		}
	}
	slices.SortFunc(fresh, func(a, b freshJob) int { return freshCmp(&a, &b) })
	for _, f := range fresh {
		want = append(want, f.st)
	}
	if !slices.Equal(got, want) {
		ids := func(l []*jobState) []gpusched.JobID {
			out := make([]gpusched.JobID, len(l))
			for i, st := range l {
				out[i] = st.job.ID
			}
			return out
		}
		c.err = fmt.Errorf("t=%v: order %v, from scratch %v", v.Now, ids(got), ids(want))
	}
	return d, nil
}

func remainingOrderProp(broken bool) func(*rapid.T) {
	return func(t *rapid.T) {
		in := drawInstance(t, 8, 14, 30, 30)
		servers := rapid.IntRange(1, 2).Draw(t, "servers")
		c, err := topology.Uniform(topology.T4(), servers)
		if err != nil {
			t.Fatal(err)
		}
		for i := range in.jobs {
			in.jobs[i].job.GPUs = min(in.jobs[i].job.GPUs, c.NumGPUs())
		}
		s, err := New(Options{Estimator: in.estimator(),
			Patience: rapid.SampledFrom([]float64{0.5, 2, 8}).Draw(t, "patience"),
			Backfill: rapid.Bool().Draw(t, "backfill")})
		if err != nil {
			t.Fatal(err)
		}
		s.brokenWait = broken
		oc := &orderChecked{Scheduler: s}
		if _, err := runHost(c, in.jobs, oc); err != nil {
			t.Fatal(err)
		}
		if oc.err != nil {
			t.Fatal(oc.err)
		}
	}
}

// The remaining-work conversion keeps its waiting jobs sorted between calls; at every call its
// whole priority order equals the order sorted from scratch (jobs preempted with progress,
// re-estimated, finished virtually and overdue included), and a list that places preempted
// jobs as if they had done nothing is caught.
func TestRemainingOrderMatchesSort(t *testing.T) {
	rapid.Check(t, remainingOrderProp(false))
	if !teeth.Fails(remainingOrderProp(true)) {
		t.Fatal("the order property did not catch a waiting list that ignores progress")
	}
}

// runStartProp checks, at every walk of the remaining-work order, that the running jobs reach
// the sort in the order the sort was designed to start from: the last call's order, less the
// jobs that no longer run, fit or are not overdue, then the other running jobs in the view's
// order (computed here from a set of the last order's jobs, not from ranks).
func runStartProp(broken bool) func(*rapid.T) {
	return func(t *rapid.T) {
		in := drawInstance(t, 8, 14, 30, 30)
		servers := rapid.IntRange(1, 2).Draw(t, "servers")
		c, err := topology.Uniform(topology.T4(), servers)
		if err != nil {
			t.Fatal(err)
		}
		for i := range in.jobs {
			in.jobs[i].job.GPUs = min(in.jobs[i].job.GPUs, c.NumGPUs())
		}
		s, err := New(Options{Estimator: in.estimator(),
			Patience: rapid.SampledFrom([]float64{0.5, 2, 8}).Draw(t, "patience"),
			Backfill: rapid.Bool().Draw(t, "backfill")})
		if err != nil {
			t.Fatal(err)
		}
		s.brokenRunOrder = broken
		var bad error
		walks := 0
		s.runHook = func(start []freshJob, last []*jobState) {
			walks++
			if bad != nil {
				return
			}
			eligible := func(st *jobState) bool {
				return st != nil && !st.gone && !st.unfit && !s.overdue(st) && s.marks[st.key].runs(s.epoch)
			}
			var want []*jobState
			inLast := map[*jobState]bool{}
			for _, st := range last {
				inLast[st] = true
				if eligible(st) {
					want = append(want, st)
				}
			}
			for _, e := range s.last[1] {
				if eligible(e.st) && !inLast[e.st] {
					want = append(want, e.st)
				}
			}
			got := make([]*jobState, len(start))
			for i, f := range start {
				got[i] = f.st
				if f.rkey != freshKey(f.st, s.last[1][s.marks[f.st.key].idx].done) && !(f.rkey != f.rkey) {
					bad = fmt.Errorf("t=%v: job %s keyed %v", s.now, f.st.job.ID, f.rkey)
					return
				}
			}
			if !slices.Equal(got, want) {
				bad = fmt.Errorf("t=%v: sort starts from %d jobs, want %d in the last order's", s.now, len(got), len(want))
			}
		}
		if _, err := runHost(c, in.jobs, s); err != nil {
			t.Fatal(err)
		}
		if bad != nil {
			t.Fatal(bad)
		}
		if walks == 0 {
			t.Skip("no walk of the remaining-work order")
		}
	}
}

// The running jobs' sort starts from the last call's order, found by the ranks the last walk
// left (confirmed in that order); a rank taken without the confirmation is caught.
func TestRemainingOrderRunStart(t *testing.T) {
	rapid.Check(t, runStartProp(false))
	if !teeth.Fails(runStartProp(true)) {
		t.Fatal("the start property did not catch ranks taken unconfirmed")
	}
}
