package asrpt

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/topology"
)

// TestPlaceMemoKey: placeMemo answers what the placer answers for the free GPUs, the job's
// description and the cluster of each call: free sets on which the placer differs, taken in
// turn and again, a new description of the job, and a second cluster; a memo that ignored any
// of them would answer one call with another's placement.
func TestPlaceMemoKey(t *testing.T) {
	c, err := topology.Uniform(topology.A100(), 4)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := topology.Uniform(topology.A100(), 4)
	if err != nil {
		t.Fatal(err)
	}
	m, err := graph.ZooModel("llama-7b")
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	j := &gpusched.Job{ID: "j", GPUs: 4, Model: m, Plan: graph.Plan{DP: 1, TP: 4, PP: 1, MicroBatches: 4, GlobalBatch: 8}}
	j2 := &gpusched.Job{ID: "j", GPUs: 4, Model: m, Plan: graph.Plan{DP: 4, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 8}}
	st := &jobState{job: j, gpus: 4, cm: &compactMemo{}}
	frees := []topology.GPUSet{c.AllGPUs(), c.AllGPUs(), c.AllGPUs()}
	for g := range topology.GPUID(10) { // servers 0 and 1 partly taken
		frees[1].Remove(g)
	}
	for g := topology.GPUID(8); g < 20; g++ { // servers 1 and 2 partly taken
		frees[2].Remove(g)
	}
	want := func(cl *topology.Cluster, free topology.GPUSet, job *gpusched.Job) []topology.GPUID {
		gpus, ok := s.opt.Placer(cl, free, job)
		if !ok {
			t.Fatalf("test bug: no placement on %v", free)
		}
		return gpus
	}
	if slices.Equal(want(c, frees[0], j), want(c, frees[1], j)) || slices.Equal(want(c, frees[1], j), want(c, frees[2], j)) {
		t.Fatal("test bug: the placer gives the same placement on different free sets")
	}
	calls := []struct {
		c    *topology.Cluster
		free int
		job  *gpusched.Job
	}{{c, 0, j}, {c, 0, j}, {c, 1, j}, {c, 1, j}, {c, 2, j}, {c, 0, j}, {c, 0, j2}, {c, 0, j2}, {c2, 0, j2}, {c, 1, j}}
	for i, call := range calls {
		st.job = call.job
		got, ok := s.placeMemo(call.c, frees[call.free], st)
		if w := want(call.c, frees[call.free], call.job); !ok || !slices.Equal(got, w) {
			t.Errorf("call %d (free set %d): placeMemo gives %v (%v), the placer %v", i, call.free, got, ok, w)
		}
	}
}

// TestSlowMemoKey: slowMemo answers what slowdown answers for the placement, the job's
// description, its time per iteration and the cluster of each call, over more placements than
// the memo holds; the placements, descriptions and times of the test give different answers,
// so a memo that ignored one of them would answer a call with another's slow-down.
func TestSlowMemoKey(t *testing.T) {
	c, err := topology.Uniform(topology.A100(), 4)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := topology.Uniform(topology.A100(), 4)
	if err != nil {
		t.Fatal(err)
	}
	m, err := graph.ZooModel("llama-7b")
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	j := &gpusched.Job{ID: "j", GPUs: 4, Model: m, Plan: graph.Plan{DP: 1, TP: 4, PP: 1, MicroBatches: 4, GlobalBatch: 8}}
	j2 := &gpusched.Job{ID: "j", GPUs: 4, Model: m, Plan: graph.Plan{DP: 4, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 8}}
	placements := [][]topology.GPUID{{0, 1, 2, 3}, {0, 1, 8, 9}, {0, 8, 16, 24}, {0, 1, 2, 8}, {4, 5, 12, 13}, {0, 9, 18, 27}}
	st := &jobState{job: j, gpus: 4, tau: 1}
	memo := &compactMemo{}
	type call struct {
		c   *topology.Cluster
		job *gpusched.Job
		tau float64
		p   int
	}
	var calls []call
	for round := range 2 {
		for p := range placements {
			calls = append(calls, call{c, j, 1, p})
		}
		calls = append(calls, call{c, j2, 1, 1}, call{c, j, 2, 1}, call{c2, j, 1, 2}, call{c, j, 1, round})
	}
	distinct := map[float64]bool{}
	for i, k := range calls {
		st.job, st.tau = k.job, k.tau
		want, wok := s.slowdown(k.c, st, placements[k.p])
		got, ok := s.slowMemo(k.c, st, memo, placements[k.p])
		if got != want || ok != wok {
			t.Errorf("call %d: slowMemo gives %v (%v), slowdown %v (%v)", i, got, ok, want, wok)
		}
		distinct[want] = true
	}
	if len(distinct) < 4 {
		t.Fatalf("test bug: only %d distinct slow-downs", len(distinct))
	}
}

// TestPlaceSharedKey: placeShared answers what the placer answers for each job, GPU set and
// cluster, over jobs that share a shape (model, plan, GPU count, constraints) and jobs that
// differ from them in one of these, offered GPU sets on which the placer differs, in turn and
// again, on two clusters and for both kinds of set. A memo that ignored the set (brokenShape)
// is caught.
func TestPlaceSharedKey(t *testing.T) {
	run := func(broken bool) []string {
		c, err := topology.Uniform(topology.A100(), 4)
		if err != nil {
			t.Fatal(err)
		}
		c2, err := topology.Uniform(topology.A100(), 4)
		if err != nil {
			t.Fatal(err)
		}
		m, err := graph.ZooModel("llama-7b")
		if err != nil {
			t.Fatal(err)
		}
		m2, err := graph.ZooModel("gpt2-1.5b")
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(Options{})
		if err != nil {
			t.Fatal(err)
		}
		s.brokenShape = broken
		tp := graph.Plan{DP: 1, TP: 4, PP: 1, MicroBatches: 4, GlobalBatch: 8}
		dp := graph.Plan{DP: 4, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 8}
		jobs := []*gpusched.Job{
			{ID: "a", GPUs: 4, Model: m, Plan: tp},
			{ID: "b", GPUs: 4, Model: m, Plan: tp}, // a's shape
			{ID: "c", GPUs: 4, Model: m, Plan: dp},
			{ID: "d", GPUs: 4, Model: m2, Plan: tp},
			{ID: "e", GPUs: 3},
			{ID: "f", GPUs: 3}, // e's shape
			{ID: "g", GPUs: 5},
			{ID: "h", GPUs: 3, GPUType: "H100"},
		}
		sets := []topology.GPUSet{c.AllGPUs(), c.AllGPUs(), c.AllGPUs()}
		for g := range topology.GPUID(10) { // servers 0 and 1 partly taken
			sets[1].Remove(g)
		}
		for g := topology.GPUID(5); g < 22; g++ { // servers 0, 1 and 2 partly taken
			sets[2].Remove(g)
		}
		var bad []string
		rng := rand.New(rand.NewPCG(3, 3))
		for i := range 400 {
			j := jobs[rng.IntN(len(jobs))]
			set := sets[rng.IntN(len(sets))]
			cl := c
			if rng.IntN(8) == 0 {
				cl = c2
			}
			kind := rng.IntN(2)
			want, wok := s.opt.Placer(cl, set, j)
			got, ok := s.placeShared(cl, set, &jobState{job: j, gpus: j.GPUs}, kind)
			if ok != wok || !slices.Equal(got, want) {
				bad = append(bad, fmt.Sprintf("call %d (job %s, kind %d): placeShared gives %v (%v), the placer %v (%v)", i, j.ID, kind, got, ok, want, wok))
			}
		}
		return bad
	}
	if bad := run(false); len(bad) > 0 {
		t.Errorf("%d wrong answers, the first: %s", len(bad), bad[0])
	}
	if bad := run(true); len(bad) == 0 {
		t.Errorf("brokenShape (a memo that ignores the GPUs offered) was not caught")
	}
}

// TestSlowSharedKey: slowShared answers what slowdown answers for each job, placement, time
// per iteration and cluster, over jobs that share a shape (model, plan, parameter servers,
// GPU count, time per iteration) and jobs that differ from them in one of these, on more
// placements than it keeps per shape, on two clusters. A memo that ignored the placement
// (brokenSlow) is caught.
func TestSlowSharedKey(t *testing.T) {
	run := func(broken bool) (bad []string, distinct int) {
		c, err := topology.Uniform(topology.A100(), 4)
		if err != nil {
			t.Fatal(err)
		}
		c2, err := topology.Uniform(topology.A100(), 4)
		if err != nil {
			t.Fatal(err)
		}
		m, err := graph.ZooModel("llama-7b")
		if err != nil {
			t.Fatal(err)
		}
		m2, err := graph.ZooModel("gpt2-1.5b")
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(Options{})
		if err != nil {
			t.Fatal(err)
		}
		s.brokenSlow = broken
		tp := graph.Plan{DP: 1, TP: 4, PP: 1, MicroBatches: 4, GlobalBatch: 8}
		dp := graph.Plan{DP: 4, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 8}
		states := []*jobState{
			{job: &gpusched.Job{ID: "a", GPUs: 4, Model: m, Plan: tp}, tau: 1},
			{job: &gpusched.Job{ID: "b", GPUs: 4, Model: m, Plan: tp}, tau: 1}, // a's shape
			{job: &gpusched.Job{ID: "c", GPUs: 4, Model: m, Plan: dp}, tau: 1},
			{job: &gpusched.Job{ID: "d", GPUs: 4, Model: m2, Plan: tp}, tau: 1},
			{job: &gpusched.Job{ID: "e", GPUs: 4, Model: m, Plan: tp}, tau: 2},
		}
		for _, st := range states {
			st.gpus = st.job.GPUs
		}
		placements := [][]topology.GPUID{{0, 1, 2, 3}, {0, 1, 8, 9}, {0, 8, 16, 24}, {0, 1, 2, 8}, {4, 5, 12, 13}, {0, 9, 18, 27}}
		seen := map[float64]bool{}
		rng := rand.New(rand.NewPCG(5, 5))
		for i := range 400 {
			st := states[rng.IntN(len(states))]
			p := placements[rng.IntN(len(placements))]
			cl := c
			if rng.IntN(8) == 0 {
				cl = c2
			}
			want, wok := s.slowdown(cl, st, p)
			got, ok := s.slowShared(cl, st, p)
			if got != want || ok != wok {
				bad = append(bad, fmt.Sprintf("call %d (job %s on %v): slowShared gives %v (%v), slowdown %v (%v)", i, st.job.ID, p, got, ok, want, wok))
			}
			seen[want] = true
		}
		return bad, len(seen)
	}
	bad, distinct := run(false)
	if len(bad) > 0 {
		t.Errorf("%d wrong answers, the first: %s", len(bad), bad[0])
	}
	if distinct < 6 {
		t.Fatalf("test bug: only %d distinct slow-downs", distinct)
	}
	if bad, _ := run(true); len(bad) == 0 {
		t.Errorf("brokenSlow (a memo that ignores the placement) was not caught")
	}
}
