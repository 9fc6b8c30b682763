package policy

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
	"pgregory.net/rapid"
)

// prefixCase is a drawn view for a host that takes deltas, with running jobs (some on
// unavailable GPUs) and waiting jobs, each with a rank (ties included), and a placement that
// fails where GPUs are scarce.
type prefixCase struct {
	v        gpusched.View
	waiting  []gpusched.JobStatus
	runKey   []int // by the view's running jobs
	waitKey  []int
	place    placeFunc
	backfill bool
}

func drawPrefixCase(t *rapid.T) *prefixCase {
	c, err := topology.Uniform(topology.A100(), rapid.IntRange(1, 3).Draw(t, "servers"))
	if err != nil {
		t.Fatal(err)
	}
	pc := &prefixCase{v: gpusched.View{Cluster: c, AcceptsKeepOthers: true}, backfill: rapid.Bool().Draw(t, "backfill")}
	v := &pc.v
	free := rapid.Permutation(seq32(c.NumGPUs())).Draw(t, "gpus")
	for _, g := range free {
		if rapid.IntRange(0, 9).Draw(t, "unavailable") == 0 {
			v.Unavailable.Add(g)
		}
	}
	for i := range rapid.IntRange(0, 10).Draw(t, "running") {
		n := rapid.IntRange(1, 6).Draw(t, "gpus")
		if n > len(free) {
			break
		}
		j := &gpusched.Job{ID: gpusched.JobID(fmt.Sprint("r", i)), GPUs: n}
		v.Running = append(v.Running, gpusched.JobStatus{Job: j, GPUs: slices.Clone(free[:n]), Started: true})
		free = free[n:]
		pc.runKey = append(pc.runKey, rapid.IntRange(0, 9).Draw(t, "key"))
	}
	pc.waiting = make([]gpusched.JobStatus, rapid.IntRange(0, 8).Draw(t, "waiting"))
	refuse := map[gpusched.JobID]bool{}
	for i := range pc.waiting {
		j := &gpusched.Job{ID: gpusched.JobID(fmt.Sprint("w", i)), GPUs: rapid.IntRange(1, 12).Draw(t, "gpus")}
		pc.waiting[i] = gpusched.JobStatus{Job: j}
		refuse[j.ID] = rapid.IntRange(0, 3).Draw(t, "refuse") == 0
		pc.waitKey = append(pc.waitKey, rapid.IntRange(0, 9).Draw(t, "key"))
	}
	slices.Sort(pc.waitKey)
	pack := placeOn(gpusched.Pack, c)
	pc.place = func(f topology.GPUSet, st *gpusched.JobStatus) ([]topology.GPUID, bool) {
		if refuse[st.Job.ID] && f.Len() < 3*st.Job.GPUs {
			return nil, false
		}
		return pack(f, st)
	}
	return pc
}

func sameSelection(t *rapid.T, got, want selection, runsFrom int) {
	t.Helper()
	if !reflect.DeepEqual(got.decision, want.decision) || got.waiting != want.waiting ||
		!slices.Equal(got.preempted, want.preempted) || !slices.Equal(got.stopped, want.stopped) || !slices.Equal(got.runs, want.runs[runsFrom:]) {
		t.Fatalf("got %+v (waiting %v, preempted %v, runs %v), want %+v (waiting %v, preempted %v, runs %v from %d)",
			got.decision, got.waiting, got.preempted, got.runs, want.decision, want.waiting, want.preempted, want.runs, runsFrom)
	}
}

// TestPropertyPreemptAfterPrefix: preempt over an order whose first running jobs (unprotected,
// fitting in the budget) are counted (keptPrefix) decides as preempt over the whole order.
func TestPropertyPreemptAfterPrefix(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pc := drawPrefixCase(t)
		v := &pc.v
		var order []ranked
		for i := range v.Running {
			order = append(order, ranked{st: &v.Running[i], running: true, pos: i,
				protected: rapid.IntRange(0, 4).Draw(t, "protected") == 0})
		}
		for i := range pc.waiting {
			order = append(order, ranked{st: &pc.waiting[i]})
		}
		perm := rapid.Permutation(seq(len(order))).Draw(t, "order")
		shuffled := make([]ranked, len(order))
		for i, p := range perm {
			shuffled[i] = order[p]
		}
		prot := 0
		for _, r := range shuffled {
			if r.protected {
				prot += r.st.Job.GPUs
			}
		}
		var pre keptPrefix
		for _, r := range shuffled {
			if !r.running || r.protected || pre.gpus+r.st.Job.GPUs > v.Available()-prot {
				break
			}
			pre.n++
			pre.gpus += r.st.Job.GPUs
		}
		pre.n = rapid.IntRange(0, pre.n).Draw(t, "prefix")
		pre.gpus = 0
		for _, r := range shuffled[:pre.n] {
			pre.gpus += r.st.Job.GPUs
		}
		got, err1 := preemptAfter(v, pre, slices.Clone(shuffled[pre.n:]), pc.backfill, pc.place, &scratch{})
		want, err2 := preempt(v, slices.Clone(shuffled), pc.backfill, pc.place, nil)
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("errors %v and %v", err1, err2)
		}
		sameSelection(t, got, want, pre.n)
	})
}

// mergedRun is the runSeq of running jobs sorted by rank (keys), whose first `first` rank at
// most the first waiting job.
func mergedRun(pc *prefixCase) ([]ranked, []int, int, int) {
	v := &pc.v
	idx := seq(len(v.Running))
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(pc.runKey[a], pc.runKey[b]) })
	running := make([]ranked, len(idx))
	keys := make([]int, len(idx))
	first, gpus := 0, 0
	for k, i := range idx {
		running[k] = ranked{st: &v.Running[i], running: true, pos: i}
		keys[k] = pc.runKey[i]
		if len(pc.waitKey) == 0 || keys[k] <= pc.waitKey[0] {
			first++
			gpus += v.Running[i].Job.GPUs
		}
	}
	return running, keys, first, gpus
}

// preemptMergedWith runs preemptMerged over the case with the first `first` running jobs
// declared (0: none), and returns the selection and the order.
func preemptMergedWith(pc *prefixCase, first, firstGPUs int) (selection, []ranked, error) {
	return preemptMergedAll(pc, first, firstGPUs, false)
}

func preemptMergedAll(pc *prefixCase, first, firstGPUs int, all bool) (selection, []ranked, error) {
	running, keys, _, _ := mergedRun(pc)
	rs := runSlice(running)
	rs.first, rs.firstGPUs = first, firstGPUs
	k := 0
	var wkey int
	next := func() (ranked, bool) {
		if k == len(pc.waiting) {
			return ranked{}, false
		}
		wkey = pc.waitKey[k]
		k++
		return ranked{st: &pc.waiting[k-1]}, true
	}
	before := func(i int, _ *ranked) bool { return keys[i] <= wkey }
	sel, order, err := preemptMerged(&pc.v, rs, next, before, pc.backfill, all, pc.place, &scratch{})
	return sel, slices.Clone(order), err
}

// TestPropertyMergedPrefix: preemptMerged told which running jobs come before every waiting job
// (the first of its order) makes the decision it makes without being told, and its order is
// the same without them.
func TestPropertyMergedPrefix(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pc := drawPrefixCase(t)
		_, _, first, gpus := mergedRun(pc)
		got, gotOrder, err1 := preemptMergedWith(pc, first, gpus)
		want, wantOrder, err2 := preemptMergedWith(pc, 0, 0)
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("errors %v and %v", err1, err2)
		}
		if err1 != nil {
			return
		}
		if want.skipped != 0 || got.skipped > first {
			t.Fatalf("skipped %d and %d of %d", got.skipped, want.skipped, first)
		}
		sameSelection(t, got, want, got.skipped)
		if !slices.Equal(gotOrder, wantOrder[got.skipped:]) {
			t.Fatalf("order %v, want %v after %d", gotOrder, wantOrder, got.skipped)
		}
		for _, r := range wantOrder[:got.skipped] {
			if !r.running {
				t.Fatalf("skipped a waiting job")
			}
		}
		// Both make the decision preempt makes on the whole merged order (every waiting job
		// taken), the backfilling past the merge's cut included.
		whole, _, err := preemptMergedAll(pc, first, gpus, true)
		if err != nil {
			t.Fatalf("whole order: %v", err)
		}
		if !reflect.DeepEqual(got.decision, whole.decision) || got.waiting != whole.waiting || !slices.Equal(got.preempted, whole.preempted) {
			t.Fatalf("decision %+v (waiting %v), on the whole order %+v (waiting %v)", got.decision, got.waiting, whole.decision, whole.waiting)
		}
	})
}

// TestPropertyOracleKeyedSort: the hinted sort that moves the oracle's ranks with the jobs'
// places (sortKeyed) orders them as a fresh sort does, protected jobs and ties included.
func TestPropertyOracleKeyedSort(t *testing.T) {
	var hs hintSorter[oracleKeyed]
	rapid.Check(t, hintedSortProp(func(s []oracleKeyed) {
		hs.sortKeyed(s, cmpOracleKeyed, func(e *oracleKeyed) *int { return &e.o.hint },
			func(e *oracleKeyed) (float64, bool) { return e.key, !e.protected })
	}))
}

// TestPropertyRankedAgainstReference: srpt-oracle and tiresias decide one drawn view as their
// references (every job ranked, one sorted order, preempt) do: running jobs some on
// unavailable GPUs (so that they may not all fit), protected or not, ties in rank, hosts that
// take deltas and hosts that do not. It reaches the paths a simulation rarely does: the
// running jobs not partitioned, the merge handing them to preempt unsorted.
func TestPropertyRankedAgainstReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, err := topology.Uniform(topology.A100(), rapid.IntRange(1, 3).Draw(t, "servers"))
		if err != nil {
			t.Fatal(err)
		}
		now := 1000.0
		v := gpusched.View{Now: now, Cluster: c, AcceptsKeepOthers: rapid.Bool().Draw(t, "delta")}
		free := rapid.Permutation(seq32(c.NumGPUs())).Draw(t, "gpus")
		oneIn := rapid.IntRange(1, 6).Draw(t, "unavailable one in") // 1: all, as a drained cluster
		for _, g := range free {
			if rapid.IntRange(0, oneIn-1).Draw(t, "unavailable") == 0 {
				v.Unavailable.Add(g)
			}
		}
		iters := map[gpusched.JobID]float64{}
		for i := range rapid.IntRange(0, 10).Draw(t, "running") {
			n := rapid.IntRange(1, 6).Draw(t, "gpus")
			if n > len(free) {
				break
			}
			j := job(fmt.Sprint("r", i), n, float64(rapid.IntRange(0, 3).Draw(t, "arrival")), 1)
			since := float64(rapid.IntRange(100, 999).Draw(t, "since"))
			v.Running = append(v.Running, running(j, now, since, slices.Clone(free[:n])...))
			free = free[n:]
			iters[j.ID] = float64(rapid.IntRange(900, 3000).Draw(t, "iterations"))
		}
		for i := range rapid.IntRange(0, 8).Draw(t, "waiting") {
			j := job(fmt.Sprint("w", i), rapid.IntRange(1, 12).Draw(t, "gpus"), float64(rapid.IntRange(0, 3).Draw(t, "arrival")), 1)
			st := waiting(j)
			if rapid.Bool().Draw(t, "ran") {
				st.Iterations = float64(rapid.IntRange(0, 800).Draw(t, "done"))
				st.Executed, st.Attained, st.Started = st.Iterations, st.Iterations*float64(j.GPUs), true
			}
			v.Pending = append(v.Pending, st)
			iters[j.ID] = float64(rapid.IntRange(900, 3000).Draw(t, "iterations"))
		}
		order := rapid.SampledFrom([]Order{Strict, Backfill}).Draw(t, "order")
		lease := rapid.SampledFrom([]float64{0, 0, 500}).Draw(t, "lease")
		oopt := OracleOptions{Options: Options{Order: order}, MinRunTime: lease,
			Iterations: func(id gpusched.JobID) float64 { return iters[id] }}
		a, _ := newSRPTOracle(oopt)
		b, _ := newSRPTOracle(oopt)
		topt := TiresiasOptions{Options: Options{Order: order}, MinRunTime: lease, Thresholds: []float64{1000, 3000}}
		ta, _ := newTiresias(topt)
		tb, _ := newTiresias(topt)
		for _, p := range []struct {
			name       string
			under, ref gpusched.Scheduler
		}{{"srpt-oracle", a, refOracle{b}}, {"tiresias", ta, refTiresias{tb}}} {
			got, err1 := p.under.Schedule(v)
			want, err2 := p.ref.Schedule(v)
			if (err1 == nil) != (err2 == nil) {
				t.Fatalf("%s: errors %v and %v", p.name, err1, err2)
			}
			// The keeps may come in another order (the policy lists them in the view's).
			for _, d := range []*gpusched.Decision{&got, &want} {
				slices.SortFunc(d.Run, func(a, b gpusched.Assignment) int { return cmp.Compare(a.Job, b.Job) })
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: decision %+v, reference %+v", p.name, got, want)
			}
		}
	})
}

// perturbed hands its scheduler the host's views, but on drawn calls without the delta (a host
// that sends none this time) or with a delta of an unknown Source (another host's), or with
// the delta's transitions dropped: the state a policy keeps between calls must then be rebuilt
// or followed otherwise, and the decisions must not change.
type perturbed struct {
	inner gpusched.Scheduler
	draw  func() int
}

type otherSource struct{}

func (p perturbed) Schedule(v gpusched.View) (gpusched.Decision, error) {
	if v.Delta != nil {
		switch p.draw() {
		case 0:
			v.Delta = nil
		case 1:
			d := *v.Delta
			d.Source = otherSource{}
			v.Delta = &d
		case 2:
			d := *v.Delta
			d.Transitions, d.Started, d.Stopped = false, nil, nil
			v.Delta = &d
		}
	}
	return p.inner.Schedule(v)
}

// TestPropertyKeptStateAgainstReference: through whole simulations (arrivals, completions,
// preemptions, restores) whose views are perturbed as above, srpt-oracle and tiresias, which
// keep their running jobs' records by place between calls, decide as their references, which
// rank every job afresh at every call: every job's record is equal.
func TestPropertyKeptStateAgainstReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		seed := rapid.Uint64().Draw(t, "perturbation seed")
		rate := rapid.IntRange(2, 20).Draw(t, "perturb one call in")
		cases := incrementalCases(t)
		c, recs, iters := genWorkload(t)
		if rapid.Bool().Draw(t, "weights") {
			for i := range recs {
				recs[i].Job.Weight = float64(rapid.IntRange(1, 4).Draw(t, "weight"))
			}
		}
		for _, tc := range cases {
			if tc.name == "sjf" {
				continue
			}
			under, ref := tc.make(iters)
			rng := rand.New(rand.NewPCG(seed, 0))
			under = perturbed{inner: under, draw: func() int {
				if rng.IntN(rate) != 0 {
					return -1
				}
				return rng.IntN(3)
			}}
			a, err := sim.Run(sim.Config{Cluster: c, Jobs: recs, Scheduler: under, RestoreTime: 30})
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			b, err := sim.Run(sim.Config{Cluster: c, Jobs: recs, Scheduler: ref, RestoreTime: 30})
			if err != nil {
				t.Fatalf("%s (reference): %v", tc.name, err)
			}
			if !reflect.DeepEqual(a.Jobs, b.Jobs) {
				for i := range a.Jobs {
					if !reflect.DeepEqual(a.Jobs[i], b.Jobs[i]) {
						t.Fatalf("%s: job %d differs:\n%+v\nreference:\n%+v", tc.name, i, a.Jobs[i], b.Jobs[i])
					}
				}
				t.Fatalf("%s: records differ", tc.name)
			}
		}
	})
}
