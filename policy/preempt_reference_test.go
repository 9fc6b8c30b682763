package policy

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
	"pgregory.net/rapid"
)

// TestPropertyPreemptReference: preempt, whose passes over the order are fused and skipped
// where they can have no effect, decides as the plain form it had (preemptReference, below)
// over drawn views and orders: running jobs (some protected, some on unavailable GPUs),
// waiting jobs too large for the budget, placements that fail (so that GPUs are left for
// the backfilling), strict order and backfill, hosts that take deltas and hosts that do not.
func TestPropertyPreemptReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, err := topology.Uniform(topology.A100(), rapid.IntRange(1, 3).Draw(t, "servers"))
		if err != nil {
			t.Fatal(err)
		}
		v := gpusched.View{Cluster: c, AcceptsKeepOthers: rapid.Bool().Draw(t, "delta")}
		free := rapid.Permutation(seq32(c.NumGPUs())).Draw(t, "gpus")
		for _, g := range free {
			if rapid.IntRange(0, 9).Draw(t, "unavailable") == 0 {
				v.Unavailable.Add(g)
			}
		}
		var order []ranked
		for i := range rapid.IntRange(0, 8).Draw(t, "running") {
			n := rapid.IntRange(1, 6).Draw(t, "gpus")
			if n > len(free) {
				break
			}
			j := &gpusched.Job{ID: gpusched.JobID(fmt.Sprint("r", i)), GPUs: n}
			v.Running = append(v.Running, gpusched.JobStatus{Job: j, GPUs: slices.Clone(free[:n]), Started: true})
			free = free[n:]
		}
		for i := range v.Running {
			r := ranked{st: &v.Running[i], running: true, protected: rapid.IntRange(0, 4).Draw(t, "protected") == 0, pos: -1}
			if rapid.Bool().Draw(t, "pos") {
				r.pos = i
			}
			order = append(order, r)
		}
		waiting := make([]gpusched.JobStatus, rapid.IntRange(0, 8).Draw(t, "waiting"))
		refuse := map[gpusched.JobID]bool{}
		for i := range waiting {
			j := &gpusched.Job{ID: gpusched.JobID(fmt.Sprint("w", i)), GPUs: rapid.IntRange(1, 12).Draw(t, "gpus")}
			waiting[i] = gpusched.JobStatus{Job: j}
			refuse[j.ID] = rapid.IntRange(0, 3).Draw(t, "refuse") == 0
			order = append(order, ranked{st: &waiting[i]})
		}
		// Some running jobs left out of the order (a policy's order need not hold them all).
		if len(v.Running) > 0 && rapid.IntRange(0, 3).Draw(t, "partial") == 0 {
			k := rapid.IntRange(0, len(v.Running)-1).Draw(t, "left out")
			order = slices.DeleteFunc(order, func(r ranked) bool { return r.st == &v.Running[k] })
		}
		perm := rapid.Permutation(seq(len(order))).Draw(t, "order")
		shuffled := make([]ranked, len(order))
		for i, p := range perm {
			shuffled[i] = order[p]
		}
		backfill := rapid.Bool().Draw(t, "backfill")
		pack := placeOn(gpusched.Pack, c)
		place := func(f topology.GPUSet, st *gpusched.JobStatus) ([]topology.GPUID, bool) {
			if refuse[st.Job.ID] && f.Len() < 3*st.Job.GPUs {
				return nil, false // fails where GPUs are scarce, as fragmentation does
			}
			return pack(f, st)
		}
		var sc scratch
		got, err1 := preempt(&v, slices.Clone(shuffled), backfill, place, &sc)
		want, err2 := preemptReference(&v, slices.Clone(shuffled), backfill, place, nil)
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("errors %v and %v", err1, err2)
		}
		if !reflect.DeepEqual(got.decision, want.decision) || got.waiting != want.waiting ||
			!slices.Equal(got.preempted, want.preempted) || !slices.Equal(got.stopped, want.stopped) || !slices.Equal(got.runs, want.runs) {
			t.Fatalf("preempt %+v (waiting %v, preempted %v, runs %v), reference %+v (waiting %v, preempted %v, runs %v)",
				got.decision, got.waiting, got.preempted, got.runs, want.decision, want.waiting, want.preempted, want.runs)
		}
	})
}

// preemptReference is preempt as it was before its passes were fused (commit e83517c).
func preemptReference(v *gpusched.View, order []ranked, backfill bool, place placeFunc, sc *scratch) (selection, error) {
	c := v.Cluster
	budget := v.Available()
	for _, r := range order {
		if r.protected {
			budget -= r.st.Job.GPUs
		}
	}
	chosen := sc.bools(chosenFlags, len(order))
	blocked := false
	for i, r := range order {
		if r.protected {
			chosen[i] = true
			continue
		}
		if !r.running && blocked {
			continue
		}
		if r.st.Job.GPUs <= budget {
			chosen[i] = true
			budget -= r.st.Job.GPUs
			continue
		}
		if !r.running && !backfill {
			blocked = true
		}
	}
	kept, inOrder := 0, 0
	for i, r := range order {
		if r.running {
			inOrder++
			if chosen[i] {
				kept++
			}
		}
	}
	var free topology.GPUSet
	switch {
	case kept == len(v.Running):
		// Every running job of the view keeps its GPUs (an order holds each at most once).
		free = v.Free()
	case inOrder == len(v.Running):
		// Every running job of the view is in the order: the GPUs that neither a chosen one
		// holds nor are unavailable are the free ones and those of the running jobs not
		// chosen, which are few (while the chosen ones are most).
		free = v.Free()
		for i, r := range order {
			if r.running && !chosen[i] {
				for _, g := range r.st.GPUs {
					if !v.Unavailable.Contains(g) {
						free.Add(g)
					}
				}
			}
		}
	default:
		free = c.AllGPUs()
		free.RemoveAll(v.Unavailable)
	}
	// For a host that takes deltas (View.AcceptsKeepOthers) the decision lists the starts and,
	// as Stop, the preemptions; otherwise the keeps too.
	delta := v.AcceptsKeepOthers
	var run []gpusched.Assignment
	if !delta {
		run = make([]gpusched.Assignment, 0, kept+4)
	}
	var isKeep []bool // run[i] keeps a running job (kept only when not every running job is kept)
	if kept == len(v.Running) {
		// The keeps in the view's order, which hosts match without a lookup.
		for i := range v.Running {
			if !delta {
				run = append(run, keep(&v.Running[i]))
			}
		}
	} else {
		isKeep = sc.bools(keepFlags, kept+4)[:0]
		removed := inOrder == len(v.Running) // free already leaves out the chosen jobs' GPUs
		for i, r := range order {
			if chosen[i] && r.running {
				if !removed {
					for _, g := range r.st.GPUs {
						free.Remove(g)
					}
				}
				if !delta {
					run, isKeep = append(run, keep(r.st)), append(isKeep, true)
				}
			}
		}
	}
	started := sc.bools(startedFlags, len(order))
	blocked = false
	for i, r := range order {
		if !chosen[i] || r.running {
			continue
		}
		if blocked {
			break
		}
		gpus, ok := place(r.st.Job.EligibleIn(c, free), r.st)
		if !ok {
			if !backfill {
				blocked = true
			}
			continue
		}
		if err := checkPlacement(r.st.Job, gpus, free); err != nil {
			return selection{}, err
		}
		for _, g := range gpus {
			free.Remove(g)
		}
		started[i] = true
		run, isKeep = append(run, gpusched.Assignment{Job: r.st.Job.ID, GPUs: gpus}), append(isKeep, false)
	}
	// Keep the running jobs whose preemption would free GPUs that nobody takes.
	var preempted []gpusched.JobID
	var stopped []*gpusched.JobStatus
	for i, r := range order {
		if chosen[i] || !r.running {
			continue
		}
		unused := true
		for _, g := range r.st.GPUs {
			if !free.Contains(g) {
				unused = false
				break
			}
		}
		if unused {
			for _, g := range r.st.GPUs {
				free.Remove(g)
			}
			chosen[i] = true
			if !delta {
				run, isKeep = append(run, keep(r.st)), append(isKeep, true)
			}
			continue
		}
		preempted, stopped = append(preempted, r.st.Job.ID), append(stopped, r.st)
	}
	// Backfill what a failed placement left free.
	if backfill {
		for i, r := range order {
			if chosen[i] || r.running {
				continue
			}
			if r.st.Job.GPUs > free.Len() {
				continue
			}
			gpus, ok := place(free, r.st)
			if !ok {
				continue
			}
			if err := checkPlacement(r.st.Job, gpus, free); err != nil {
				return selection{}, err
			}
			for _, g := range gpus {
				free.Remove(g)
			}
			chosen[i], started[i] = true, true
			run, isKeep = append(run, gpusched.Assignment{Job: r.st.Job.ID, GPUs: gpus}), append(isKeep, false)
		}
	}
	if !delta && kept != len(v.Running) && len(preempted) < len(v.Running) {
		run = keepsInViewOrder(v, order, chosen, run, isKeep, sc)
	}
	waiting := len(preempted) > 0
	runs := started
	for i, r := range order {
		if !r.running && !started[i] {
			waiting = true
		}
		if r.running && chosen[i] {
			runs[i] = true
		}
	}
	d := gpusched.Decision{Run: run}
	if delta {
		d.KeepOthers, d.Stop = true, slices.Clone(preempted)
	}
	return selection{decision: d, waiting: waiting, preempted: preempted, stopped: stopped, runs: runs}, nil
}
