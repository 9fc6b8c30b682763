package asrpt

import (
	"slices"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/internal/teeth"
	"pgregory.net/rapid"
)

// groupSortedCheck runs random operations on one group book (jobs joining, finishing with
// lengths drawn from a few values so that ties are common, leaving unfinished, overrunning,
// progressing while running or waiting) and after each compares what is kept incrementally
// with a rebuild from scratch: the sorted lengths with g.done sorted, groupPoor's memo with
// groupPoorOf, and groupObsSorted's observations with groupObs followed by sortObservations.
func groupSortedCheck(t *rapid.T, brokenSorted, brokenPoor bool) {
	s := &Scheduler{brokenSorted: brokenSorted, brokenPoor: brokenPoor, epoch: 1}
	g := s.newGroup("g")
	g.timed = rapid.Bool().Draw(t, "timed")
	var v gpusched.View
	var all []*jobState
	job := &gpusched.Job{ID: "j"}
	lengths := []float64{1, 2, 3, 5, 8, 8, 13, 40}
	// Enough finishes that the ring of groupHistory lengths wraps.
	for step := range rapid.IntRange(1, 5*groupHistory).Draw(t, "steps") {
		switch op := rapid.IntRange(0, 9).Draw(t, "op"); {
		case op <= 2 || len(g.live) == 0:
			st := &jobState{key: len(all), job: job, tau: float64(rapid.IntRange(0, 3).Draw(t, "tau")),
				pred0:  float64(rapid.IntRange(0, 20).Draw(t, "pred0")),
				gpred0: float64(rapid.IntRange(0, 20).Draw(t, "gpred0"))}
			st.group = g
			g.live = append(g.live, st)
			all = append(all, st)
			s.marks = append(s.marks, presence{})
			s.waitDone = append(s.waitDone, 0)
		case op <= 5:
			st := g.live[rapid.IntRange(0, len(g.live)-1).Draw(t, "finish")]
			n := lengths[rapid.IntRange(0, len(lengths)-1).Draw(t, "length")]
			s.groupLeave(st, true, n)
			st.gone = true
		case op == 6:
			st := g.live[rapid.IntRange(0, len(g.live)-1).Draw(t, "leave")]
			s.groupLeave(st, false, 0)
			st.gone = true
		case op == 7:
			st := g.live[rapid.IntRange(0, len(g.live)-1).Draw(t, "overrun")]
			st.overruns++
			s.groupOverrun(st)
		default:
			// A new view: each live job runs (with its progress in v.Running) or waits.
			s.epoch++
			v.Running = v.Running[:0]
			for _, st := range g.live {
				d := lengths[rapid.IntRange(0, len(lengths)-1).Draw(t, "done")] - 1
				if rapid.Bool().Draw(t, "running") {
					s.marks[st.key] = presence{seen: s.epoch, idx: int32(len(v.Running)), running: true}
					v.Running = append(v.Running, gpusched.JobStatus{Job: job, Iterations: d})
				} else {
					s.marks[st.key] = presence{seen: s.epoch}
					s.waitDone[st.key] = d
				}
			}
		}
		want := slices.Clone(g.done)
		slices.Sort(want)
		if !g.sorted || !slices.Equal(g.sdone, want) {
			t.Fatalf("step %d: sorted lengths %v (kept: %v), want %v", step, g.sdone, g.sorted, want)
		}
		if got, want := s.groupPoor(g), groupPoorOf(g); got != want {
			t.Fatalf("step %d: groupPoor %v, from scratch %v", step, got, want)
		}
		var excl *jobState
		if len(g.live) > 0 && rapid.Bool().Draw(t, "exclude") {
			excl = g.live[rapid.IntRange(0, len(g.live)-1).Draw(t, "excluded")]
		}
		s.groupObsSorted(&v, g, excl)
		got := slices.Clone(g.obs)
		s.groupObs(&v, g, excl)
		sortObservations(g.obs)
		if !slices.Equal(got, g.obs) {
			t.Fatalf("step %d: observations %v, from scratch %v", step, got, g.obs)
		}
	}
}

func TestPropertyGroupSorted(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { groupSortedCheck(t, false, false) })
}

// TestPropertyGroupSortedCatchesMutants shows the property fails for a book that misses an
// update: a length the ring overwrites left among the sorted ones, or groupPoor's answer kept
// past an overrun.
func TestPropertyGroupSortedCatchesMutants(t *testing.T) {
	if !teeth.Fails(func(t *rapid.T) { groupSortedCheck(t, true, false) }) {
		t.Error("a sorted list that keeps overwritten lengths was not caught")
	}
	if !teeth.Fails(func(t *rapid.T) { groupSortedCheck(t, false, true) }) {
		t.Error("groupPoor's answer kept past an overrun was not caught")
	}
}
