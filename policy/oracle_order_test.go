package policy

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/internal/teeth"
	"github.com/gpusched/gpusched/topology"
	"pgregory.net/rapid"
)

// drawKeyed draws running jobs ranked by the oracle, with hints from earlier sorts that may be
// stale, shared or missing, and ties in rank.
func drawKeyed(t *rapid.T) []oracleKeyed {
	n := rapid.IntRange(0, 60).Draw(t, "n")
	out := make([]oracleKeyed, n)
	for i := range out {
		j := &gpusched.Job{ID: gpusched.JobID(fmt.Sprintf("j%03d", i)), Arrival: float64(rapid.IntRange(0, 5).Draw(t, "arrival"))}
		key := float64(rapid.IntRange(0, 20).Draw(t, "key"))
		out[i] = oracleKeyed{ranked: ranked{st: &gpusched.JobStatus{Job: j}, running: true, protected: rapid.IntRange(0, 9).Draw(t, "p") == 0, pos: i},
			key: key, o: &oracleJob{hint: rapid.IntRange(-1, 2*n+1).Draw(t, "hint")}}
	}
	return out
}

// hintedSortProp: the hinted sort of the running jobs after the first n orders them as a fresh
// sort does, whatever the hints, and records each job's place as its next hint.
func hintedSortProp(sort func(s []oracleKeyed)) func(*rapid.T) {
	return func(t *rapid.T) {
		all := drawKeyed(t)
		n := rapid.IntRange(0, len(all)).Draw(t, "first")
		want := slices.Clone(all)
		slices.SortFunc(want[n:], cmpOracleKeyed)
		sort(all[n:])
		for i := range all {
			if all[i].st != want[i].st {
				t.Fatalf("place %d: job %s, want %s", i, all[i].st.Job.ID, want[i].st.Job.ID)
			}
		}
		for i := n; i < len(all); i++ {
			if all[i].o.hint != i-n {
				t.Fatalf("job %s at %d has hint %d", all[i].st.Job.ID, i-n, all[i].o.hint)
			}
		}
	}
}

func TestPropertyOracleHintedSort(t *testing.T) {
	var hs hintSorter[oracleKeyed]
	rapid.Check(t, hintedSortProp(func(s []oracleKeyed) {
		hs.sort(s, cmpOracleKeyed, func(e *oracleKeyed) *int { return &e.o.hint })
	}))
}

// A hinted sort that trusts its hints (no insertion pass) is caught.
func TestPropertyOracleHintedSortHasTeeth(t *testing.T) {
	trusting := func(s []oracleKeyed) {
		slices.SortStableFunc(s, func(a, b oracleKeyed) int { return a.o.hint - b.o.hint })
		for i := range s {
			s[i].o.hint = i
		}
	}
	if !teeth.Fails(hintedSortProp(trusting)) {
		t.Error("a sort that trusts stale hints was not caught")
	}
}

func TestInsertionSortBoundedGivesUp(t *testing.T) {
	s := []int{5, 4, 3, 2, 1, 0}
	if insertionSortBounded(s, func(a, b int) int { return a - b }, 3) {
		t.Fatal("15 moves done within a bound of 3")
	}
	if !insertionSortBounded(s, func(a, b int) int { return a - b }, 100) || !slices.IsSorted(s) {
		t.Fatalf("not sorted: %v", s)
	}
}

// preempt lists the jobs it keeps in the view's order when the policy gives their places
// (ranked.pos), and in its own order otherwise; the decisions hold the same assignments.
func TestPreemptListsKeepsInViewOrder(t *testing.T) {
	c, err := topology.Uniform(topology.A100(), 1)
	if err != nil {
		t.Fatal(err)
	}
	v := gpusched.View{Cluster: c}
	for i := range 4 {
		j := &gpusched.Job{ID: gpusched.JobID(fmt.Sprint("r", i)), GPUs: 1}
		v.Running = append(v.Running, gpusched.JobStatus{Job: j, GPUs: []topology.GPUID{topology.GPUID(i)}})
	}
	w := gpusched.JobStatus{Job: &gpusched.Job{ID: "w", GPUs: 5}}
	// Priority: r3, w (needs 5 GPUs: r0 must go), r1, r2, r0.
	mk := func(withPos bool) []ranked {
		var order []ranked
		for _, p := range []int{3, -1, 1, 2, 0} {
			if p < 0 {
				order = append(order, ranked{st: &w})
				continue
			}
			r := ranked{st: &v.Running[p], running: true}
			if withPos {
				r.pos = p
			}
			order = append(order, r)
		}
		return order
	}
	ids := func(d gpusched.Decision) []gpusched.JobID {
		var out []gpusched.JobID
		for _, a := range d.Run {
			out = append(out, a.Job)
		}
		return out
	}
	place := placeOn(gpusched.Pack, c)
	a, err := preempt(&v, mk(true), true, place, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := preempt(&v, mk(false), true, place, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(a.decision), []gpusched.JobID{"r1", "r2", "r3", "w"}; !slices.Equal(got, want) {
		t.Errorf("with places: run %v, want %v", got, want)
	}
	if got, want := ids(b.decision), []gpusched.JobID{"r3", "r1", "r2", "w"}; !slices.Equal(got, want) {
		t.Errorf("without: run %v, want %v", got, want)
	}
	if !slices.Equal(a.preempted, b.preempted) || !slices.Equal(a.preempted, []gpusched.JobID{"r0"}) {
		t.Errorf("preempted %v and %v, want [r0]", a.preempted, b.preempted)
	}
}

// posCache finds the records of the running jobs that stay in order from walk to walk, new
// ones anywhere among them (a host that lists running jobs in submission order puts a job that
// starts among them), misses the new ones, and never returns another job's record, whatever the
// order. (A walk that stopped at its first miss would miss the jobs after a new one.)
func TestPropertyPosCache(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		jobs := make([]*gpusched.Job, 12)
		recs := make([]*int, len(jobs))
		for i := range jobs {
			jobs[i] = &gpusched.Job{ID: gpusched.JobID(fmt.Sprint(i))}
			recs[i] = new(int)
			*recs[i] = i
		}
		var c posCache[int]
		var last []int
		for range rapid.IntRange(1, 6).Draw(t, "walks") {
			cur := rapid.SliceOfNDistinct(rapid.IntRange(0, len(jobs)-1), 0, len(jobs), rapid.ID[int]).Draw(t, "running")
			if rapid.Bool().Draw(t, "keep order") {
				// the last walk's jobs in their order, some gone, new ones anywhere
				kept := slices.DeleteFunc(slices.Clone(last), func(int) bool { return rapid.Bool().Draw(t, "gone") })
				for _, j := range cur {
					if !slices.Contains(kept, j) {
						at := rapid.IntRange(0, len(kept)).Draw(t, "at")
						kept = slices.Insert(kept, at, j)
					}
				}
				cur = kept
			}
			c.begin()
			for _, j := range cur {
				r := c.get(jobs[j])
				switch {
				case r != nil && *r != j:
					t.Fatalf("job %d got job %d's record", j, *r)
				case r == nil && slices.Contains(last, j) && inOrder(last, cur, j):
					t.Fatalf("job %d, in order since the last walk %v -> %v, missed", j, last, cur)
				}
				c.put(jobs[j], recs[j])
			}
			c.end()
			last = cur
		}
	})
}

// inOrder reports whether the jobs of cur up to j that were in last were in last's order, with
// fewer than posWindow of last's jobs left out between two of them (j itself in last).
func inOrder(last, cur []int, j int) bool {
	prev := -1
	for _, x := range cur {
		i := slices.Index(last, x)
		if i < 0 && x != j {
			continue // new: a miss that does not move the walk
		}
		if i < 0 || i < prev || i-prev > posWindow {
			return false // out of order, or too far ahead
		}
		prev = i
		if x == j {
			return true
		}
	}
	return true
}
